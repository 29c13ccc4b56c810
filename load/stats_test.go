package load

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

func okResult(t0 time.Time, ttft, e2e time.Duration, out int) probe.Result {
	return probe.Result{Start: t0, TTFT: ttft, HasTTFT: true, E2E: e2e, OutputTokens: out, InputTokens: 10, Messages: out}
}

// finished is a flight of phase ph, on the run clock of t0, that ended
// with r: its Messages told to its Live as Do would have told them, the
// first at TTFT and the rest evenly to E2E (none without a TTFT).
func finished(t0 time.Time, r probe.Result, ph *phaseInfo) *flight {
	f := new(slot).take(t0)
	f.phase, f.res, f.start = ph, r, r.Start.Sub(t0)
	if r.HasTTFT {
		f.live.Begin(r.Start)
		n := max(r.Messages, 1)
		for i := range n {
			off := r.TTFT
			if n > 1 {
				off += (r.E2E - r.TTFT) * time.Duration(i) / time.Duration(n-1)
			}
			f.live.Add(r.Start, off, probe.Answer)
		}
	}
	return f
}

func near(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

func TestAggregatorWindow(t *testing.T) {
	t0 := time.Now()
	a := newAggregator(t0, 10*time.Second)
	ph := &phaseInfo{id: 1, knobs: Knobs{Concurrency: 1, PromptTokens: 10, OutputTokens: 5}}
	// 100 requests finishing in the first second: TTFT i ms, E2E 10*i ms.
	for i := 1; i <= 100; i++ {
		ph.outstanding.Add(1)
		a.add(finished(t0, okResult(t0, time.Duration(i)*time.Millisecond, time.Duration(10*i)*time.Millisecond, 5), ph), 500*time.Millisecond)
		ph.outstanding.Add(-1)
	}
	a.add(finished(t0, probe.Result{Class: probe.HTTP5xx, Err: "HTTP 500: boom"}, ph), 600*time.Millisecond)
	s := a.snapshot(800*time.Millisecond, ph, 3)
	if s.Completed != 100 || s.Failed != 1 || s.InFlight != 3 {
		t.Fatalf("completed %d failed %d inflight %d", s.Completed, s.Failed, s.InFlight)
	}
	if d := s.Latency[TTFT]; !near(d.P50, 50*time.Millisecond, 0.001) || !near(d.P99, 99*time.Millisecond, 0.001) ||
		d.Max != 100*time.Millisecond || d.Min != time.Millisecond || !near(d.Mean, 50500*time.Microsecond, 1e-9) {
		t.Fatalf("TTFT %+v", d)
	}
	// Population standard deviation of 1..100 ms.
	if d := s.Latency[TTFT]; !near(d.Std, 28866*time.Microsecond, 0.001) {
		t.Fatalf("std %v", d.Std)
	}
	if s.Latency[ITL].Count != 400 || s.Latency[TPOT].Count != 100 || s.Latency[E2E].Count != 100 {
		t.Fatalf("counts ITL %d TPOT %d E2E %d", s.Latency[ITL].Count, s.Latency[TPOT].Count, s.Latency[E2E].Count)
	}
	// The tokens are counted in the seconds they arrived in: the longest
	// request's last message, at 1 s, in one the clock has not reached.
	if math.Abs(s.ReqPerSec-100/0.8) > 1e-9 || math.Abs(s.OutTokPerSec-499/0.8) > 1e-9 || math.Abs(s.ErrorRate-1.0/101) > 1e-12 {
		t.Fatalf("rates %v %v %v", s.ReqPerSec, s.OutTokPerSec, s.ErrorRate)
	}
	if s.ByClass[probe.HTTP5xx] != 1 || s.LastError != "5xx: HTTP 500: boom" {
		t.Fatalf("classes %v last %q", s.ByClass, s.LastError)
	}

	// Five seconds on, the first second is sealed but still in the window.
	s = a.snapshot(5500*time.Millisecond, ph, 0)
	if s.Completed != 100 || len(s.Series) != 5 || s.Series[0].Completed != 100 || s.Series[0].TTFTP50 < 49*time.Millisecond {
		t.Fatalf("after 5 s: completed %d, series %+v", s.Completed, s.Series)
	}
	if s.Covered != 5500*time.Millisecond {
		t.Fatalf("covered %v", s.Covered)
	}
	if !near(s.Latency[TTFT].P99, 99*time.Millisecond, 0.001) {
		t.Fatalf("sealed p99 %v", s.Latency[TTFT].P99)
	}
	// Past the 10 s window it is gone from the window, not from the phase.
	s = a.snapshot(11500*time.Millisecond, ph, 0)
	if s.Completed != 0 || s.Latency[TTFT].Count != 0 || s.Covered != 9500*time.Millisecond { // 9 sealed seconds and half of the current one
		t.Fatalf("after the window: completed %d count %d covered %v", s.Completed, s.Latency[TTFT].Count, s.Covered)
	}
	if len(s.Phases) != 1 || s.Phases[0].Completed != 100 || s.Phases[0].Latency[TTFT].Count != 100 {
		t.Fatalf("phases %+v", s.Phases)
	}
	// A wider window brings it back.
	a.setWindow(time.Minute)
	if s = a.snapshot(11600*time.Millisecond, ph, 0); s.Completed != 100 {
		t.Fatalf("1m window: completed %d", s.Completed)
	}
	// A reset forgets it all.
	a.reset(12*time.Second, 1)
	ph2 := &phaseInfo{id: 2, gen: 1, knobs: ph.knobs, start: 12 * time.Second}
	if s = a.snapshot(12500*time.Millisecond, ph2, 0); s.Completed != 0 || s.TotalCompleted != 0 || len(s.Series) != 0 || len(s.Phases) != 1 || s.LastError != "" {
		t.Fatalf("after reset: %d %d series %d phases %d %q", s.Completed, s.TotalCompleted, len(s.Series), len(s.Phases), s.LastError)
	}
}

func TestAggregatorPhases(t *testing.T) {
	t0 := time.Now()
	a := newAggregator(t0, 30*time.Second)
	p1 := &phaseInfo{id: 1, knobs: Knobs{Concurrency: 1}}
	p2 := &phaseInfo{id: 2, knobs: Knobs{Concurrency: 2}, start: 2 * time.Second}
	p1.outstanding.Add(2)
	a.add(finished(t0, okResult(t0, 10*time.Millisecond, time.Second, 10), p1), time.Second)
	p1.outstanding.Add(-1)
	s := a.snapshot(2500*time.Millisecond, p2, 1)
	if len(s.Phases) != 2 || s.Phases[0].End != 2*time.Second || !s.Phases[1].Current || s.Phases[0].Current {
		t.Fatalf("phases %+v", s.Phases)
	}
	// Phase 1's last request returns during phase 2: it still counts for phase 1.
	a.add(finished(t0, okResult(t0.Add(1500*time.Millisecond), 30*time.Millisecond, time.Second, 10), p1), 2600*time.Millisecond)
	p1.outstanding.Add(-1)
	s = a.snapshot(2700*time.Millisecond, p2, 0)
	if s.Phases[0].Completed != 2 || s.Phases[0].Latency[TTFT].Max != 30*time.Millisecond {
		t.Fatalf("phase 1 %+v", s.Phases[0])
	}
	// Phase 1 is final now: its histograms are released, its summary kept.
	if a.phases[0].final == nil || a.phases[0].hist[TTFT] != nil {
		t.Fatal("phase 1 not finalised")
	}
	if want := 20 / 2.5; math.Abs(s.Phases[0].OutTokPerSec-want) > 1e-9 {
		t.Fatalf("phase 1 tok/s %v, want %v", s.Phases[0].OutTokPerSec, want)
	}
	s = a.snapshot(2800*time.Millisecond, p2, 0)
	if s.Phases[0].Completed != 2 || s.Phases[0].Latency[TTFT].Count != 2 {
		t.Fatalf("final phase 1 %+v", s.Phases[0])
	}
}

func TestPromptGen(t *testing.T) {
	g := NewPromptGen(1, 0)
	seen := map[string]bool{}
	for _, n := range []int{1, 2, 10, 256, 4096, MaxPromptTokens} {
		p := g.Next(n)
		words := len(splitWords(p))
		if words != n {
			t.Errorf("Next(%d) has %d words", n, words)
		}
		prefix := p[:min(len(p), 40)]
		if seen[prefix] {
			t.Errorf("prefix %q repeated", prefix)
		}
		seen[prefix] = true
	}
	if a, b := NewPromptGen(7, 0).Next(50), NewPromptGen(7, 0).Next(50); a != b {
		t.Error("same seed, different prompts")
	}
}

func splitWords(s string) []string {
	var out []string
	word := ""
	for _, r := range s {
		if r == ' ' {
			if word != "" {
				out = append(out, word)
			}
			word = ""
			continue
		}
		word += string(r)
	}
	if word != "" {
		out = append(out, word)
	}
	return out
}

func TestLengths(t *testing.T) {
	tests := []struct {
		in     string
		centre int
		kind   string
		spread float64
	}{
		{"256", 256, "fixed", 0}, {"fixed:64", 64, "fixed", 0}, {"uniform:128-384", 256, "uniform", 0.5}, {"normal:200,50", 200, "normal", 0.25},
	}
	for _, tt := range tests {
		c, l, err := ParseLength(tt.in, MaxPromptTokens)
		if err != nil || c != tt.centre || l.Kind != tt.kind || math.Abs(l.Spread-tt.spread) > 1e-12 {
			t.Errorf("%s: %d %+v %v", tt.in, c, l, err)
		}
		if got := l.String(c); tt.kind != "fixed" && got != tt.in {
			t.Errorf("%s written back as %s", tt.in, got)
		}
	}
	for _, bad := range []string{"0", "x", "uniform:5", "uniform:9-3", "normal:10", "normal:10,-1", "poisson:3", "40000"} {
		if _, _, err := ParseLength(bad, MaxPromptTokens); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Draws stay inside the uniform range, centre on the mean, and are the
	// same for the same seed and request numbers.
	_, u, _ := ParseLength("uniform:100-300", MaxPromptTokens)
	draw := func(seed uint64) []int {
		var out []int
		for n := uint64(1); n <= 2000; n++ {
			out = append(out, u.sample(rand.New(rand.NewPCG(seed, n)), 200, MaxPromptTokens))
		}
		return out
	}
	a, b := draw(7), draw(7)
	sum := 0
	for i, v := range a {
		if v < 100 || v > 300 || v != b[i] {
			t.Fatalf("draw %d: %d (again %d)", i, v, b[i])
		}
		sum += v
	}
	if mean := float64(sum) / float64(len(a)); math.Abs(mean-200) > 5 {
		t.Fatalf("mean %v", mean)
	}
	_, nrm, _ := ParseLength("normal:10,100", MaxPromptTokens)
	if v := nrm.sample(rand.New(rand.NewPCG(1, 1)), 10, 50); v < 1 || v > 50 {
		t.Fatalf("normal draw %d outside 1..50", v)
	}
}

func TestPromptPrefix(t *testing.T) {
	g := NewPromptGen(3, 100)
	a, b := g.Next(300), g.Next(300)
	wa, wb := splitWords(a), splitWords(b)
	if len(wa) != 300 || len(wb) != 300 {
		t.Fatalf("%d and %d words", len(wa), len(wb))
	}
	for i := range 100 {
		if wa[i] != wb[i] {
			t.Fatalf("word %d differs within the shared prefix", i)
		}
	}
	if wa[100] == wb[100] {
		t.Fatal("the unique marker after the prefix is shared")
	}
}

func TestCalibrator(t *testing.T) {
	var c calibrator
	// A server that counts 1.3 tokens a word plus 12 of template.
	count := func(w int) int { return int(math.Round(1.3*float64(w))) + 12 }
	w := 0
	for range 10 {
		w = c.words(500, 0)
		c.observe(w, count(w))
	}
	if got := count(c.words(500, 0)); math.Abs(float64(got-500)) > 5 {
		t.Fatalf("after 10 requests %d words make %d tokens, want 500", w, got)
	}
	// A new target is met at once: the fit knows the overhead.
	if got := count(c.words(2000, 0)); math.Abs(float64(got-2000)) > 20 {
		t.Fatalf("2000 → %d tokens", got)
	}
}

// TestCalibratorIgnoresAFixedCount: a server that reports the same prompt
// tokens whatever it is sent must not make the prompts grow without bound.
func TestCalibratorIgnoresAFixedCount(t *testing.T) {
	var c calibrator
	for range 50 {
		w := c.words(100, 0)
		if w > 303 {
			t.Fatalf("asked for 100 tokens, sent %d words", w)
		}
		c.observe(w, 1)
	}
	if w := c.words(100, 0); w != 100 {
		t.Fatalf("a server that counts 1 token whatever it gets: %d words for 100", w)
	}
}

// BenchmarkAggregatorAdd folds streamed results of 128 tokens (TTFT 50 ms,
// the rest over 2 s) into the aggregator, one every 100 µs of run time: the
// aggregator's whole cost per request, its histograms and the tokens by
// second included.
func BenchmarkAggregatorAdd(b *testing.B) {
	t0 := time.Now()
	a := newAggregator(t0, 30*time.Second)
	ph := &phaseInfo{id: 1, knobs: Knobs{Concurrency: 8, PromptTokens: 16, OutputTokens: 128}}
	r := okResult(t0, 50*time.Millisecond, 2050*time.Millisecond, 128)
	now := 3 * time.Second
	for b.Loop() {
		r.Start = t0.Add(now - r.E2E)
		a.add(finished(t0, r, ph), now)
		now += 100 * time.Microsecond
	}
}
