package load

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
)

func TestParseMix(t *testing.T) {
	m, err := ParseMix("a:70, b:20 ,qwen2.5:0.5b:10")
	if err != nil {
		t.Fatal(err)
	}
	want := Mix{{"a", 70}, {"b", 20}, {"qwen2.5:0.5b", 10}}
	if !slices.Equal(m, want) || m.String() != "a:70,b:20,qwen2.5:0.5b:10" {
		t.Fatalf("%v (%s)", m, m)
	}
	// One name, a colon in it or not, is no mix: Ollama's tags have colons.
	for _, one := range []string{"", "llama3", "qwen2.5:0.5b", "a:70"} {
		if m, err := ParseMix(one); m != nil || err != nil {
			t.Errorf("%q: %v, %v", one, m, err)
		}
	}
	for _, bad := range []string{"a:70,b", "a:70,b:0", "a:70,b:-1", "a:1.5,b:1", "a:1,a:2", "a:1,", ":1,b:1", "a:9000,b:1001"} {
		if _, err := ParseMix(bad); err == nil || !strings.Contains(err.Error(), "bad model mix") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	var se *SettingError
	if err := (Config{Mix: Mix{{"a", 1}}, Knobs: Knobs{Concurrency: 1, PromptTokens: 1, OutputTokens: 1}}).Validate(); !errors.As(err, &se) || se.Setting != SettingMix {
		t.Fatalf("a mix of one: %v", err)
	}
}

// TestMixDeals: every block of requests holds each model exactly its
// reduced share, in an order the seed alone decides.
func TestMixDeals(t *testing.T) {
	m := Mix{{"a", 70}, {"b", 20}, {"c", 10}}
	seq := func(seed uint64, n int) []string {
		x := newMixer(m, seed)
		out := make([]string, n)
		for i := range out {
			out[i] = x.pick(uint64(i))
		}
		return out
	}
	one, again, other := seq(7, 1000), seq(7, 1000), seq(8, 1000)
	if !slices.Equal(one, again) {
		t.Fatal("the same seed dealt another sequence")
	}
	if slices.Equal(one, other) {
		t.Fatal("another seed dealt the same sequence")
	}
	for b := 0; b < len(one); b += 10 { // 70/20/10 reduces to blocks of 10
		count := map[string]int{}
		for _, name := range one[b : b+10] {
			count[name]++
		}
		if count["a"] != 7 || count["b"] != 2 || count["c"] != 1 {
			t.Fatalf("block %d: %v", b/10, count)
		}
	}
	// Requests picked out of order (concurrent senders) get the same
	// models as in order.
	x := newMixer(m, 7)
	for _, i := range []int{999, 3, 500, 4, 998} {
		if got := x.pick(uint64(i)); got != one[i] {
			t.Fatalf("request %d: %s, in order %s", i, got, one[i])
		}
	}
}

// TestMixOverSim: a 70/20/10 mix of the base model and two adapters over
// the sim answering at once sends each model's share within 1 % over
// 10,000 requests, every request's model recorded, and the sim served
// each by the name asked for.
func TestMixOverSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	p.Adapters = []sim.Adapter{{Name: "sql-lora", Slowdown: 1}, {Name: "chat-lora", Slowdown: 2}}
	const n = 10000
	got := map[string]int{}
	r := startRig(t, p, Knobs{Concurrency: 64, PromptTokens: 4, OutputTokens: 1}, func(c *Config) {
		c.MaxRequests, c.NoCalibrate, c.Seed = n, true, 3
		c.Mix = Mix{{p.Model, 70}, {"sql-lora", 20}, {"chat-lora", 10}}
		c.OnResult = func(rec Record) { got[rec.Model]++ } // the aggregator's goroutine only
	})
	// A bound on a hang: about 20 s beside a CPU hog, and 4,173 of the
	// 10,000 were done at 60 s beside the suite and a hog (load average 11).
	s := waitFor(t, r.eng, 3*time.Minute, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	if s.TotalCompleted != n {
		t.Fatalf("%d completed, %d failed (%s)", s.TotalCompleted, s.TotalFailed, s.LastError)
	}
	served := map[string]int{}
	for _, rec := range r.sim.Records() {
		served[rec.Model]++
	}
	for name, share := range map[string]float64{p.Model: 0.7, "sql-lora": 0.2, "chat-lora": 0.1} {
		if f := float64(got[name]) / n; f < share-0.01 || f > share+0.01 {
			t.Errorf("%s: %.2f %% of the requests, want %.0f %% ± 1", name, 100*f, 100*share)
		}
		if served[name] != got[name] {
			t.Errorf("%s: the sim served %d, the engine recorded %d", name, served[name], got[name])
		}
	}
}
