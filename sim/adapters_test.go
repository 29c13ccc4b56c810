package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestParseAdapters(t *testing.T) {
	a, err := ParseAdapters("sql-lora, chat-lora:1.5 ,org/x:v2:3")
	want := []Adapter{{"sql-lora", 1}, {"chat-lora", 1.5}, {"org/x:v2", 3}}
	if err != nil || !slices.Equal(a, want) {
		t.Fatalf("%v, %v", a, err)
	}
	if back, err := ParseAdapters(AdaptersString(a)); err != nil || !slices.Equal(back, a) {
		t.Fatalf("reads back as %v, %v", back, err)
	}
	if a, err := ParseAdapters(" "); a != nil || err != nil {
		t.Fatalf("none: %v, %v", a, err)
	}
	if _, err := ParseAdapters("x:fast"); err == nil || !strings.Contains(err.Error(), "bad adapter list") {
		t.Fatal(err)
	}
	p := testParams()
	for _, bad := range [][]Adapter{{{"x", 0.5}}, {{"x", 101}}, {{"", 1}}, {{"x", 1}, {"x", 2}}, {{p.Model, 1}}} {
		q := p
		q.Adapters = bad
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "adapters") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestAdapters: the sim serves each adapter by its name, lists it with
// the base model as its parent, refuses a name it does not serve, and an
// adapter of slowdown 3 is slower than the base model.
func TestAdapters(t *testing.T) {
	p := testParams()
	p.Adapters = []Adapter{{"sql-lora", 1}, {"slow-lora", 3}}
	s, url := startSim(t, p)

	resp, body := post(t, url+"/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown model: %d %s", resp.StatusCode, body)
	}
	ask := func(model string) {
		t.Helper()
		resp, body := post(t, url+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":30}`, model))
		var a struct{ Model string }
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &a) != nil || a.Model != model {
			t.Fatalf("%s: %d %s", model, resp.StatusCode, body)
		}
	}
	for _, m := range []string{p.Model, "sql-lora", "slow-lora"} {
		ask(m)
	}
	took := map[string]float64{}
	for _, r := range s.Records() {
		took[r.Model] = float64(r.LastToken.Sub(r.Admitted))
	}
	// Wall times on a busy machine only order them; TestAdapterPace
	// holds the steps exactly.
	if k := took["slow-lora"] / took[p.Model]; k < 1.5 {
		t.Errorf("the adapter of slowdown 3 took %.2f times the base model's time", k)
	}

	r, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var list struct {
		Data []struct {
			ID     string
			Parent *string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&list); err != nil || len(list.Data) != 3 {
		t.Fatalf("%+v, %v", list, err)
	}
	if d := list.Data; d[0].ID != p.Model || d[0].Parent != nil || d[2].ID != "slow-lora" || d[2].Parent == nil || *d[2].Parent != p.Model {
		t.Fatalf("%+v", list)
	}
}

// TestAdapterPace: in one batch, a sequence of the base model makes a
// token every step, an adapter's of slowdown 3 one every third step, one
// of 1.5 two every three steps.
func TestAdapterPace(t *testing.T) {
	s := newScheduler(testParams())
	seqs := []*seq{{maxTokens: 30, pace: 1}, {maxTokens: 10, pace: 1.0 / 3}, {maxTokens: 20, pace: 1 / 1.5}}
	for _, q := range seqs {
		q.wake = make(chan struct{}, 1)
		q.queued.Store(-1)
		s.submit(q)
	}
	s.admit()
	steps := make([]int, len(seqs))
	for step := 1; step <= 40 && len(s.running) > 0; step++ {
		s.plan()
		s.emit()
		for i, q := range seqs {
			if q.done.Load() && steps[i] == 0 {
				steps[i] = step
			}
		}
	}
	if steps[0] != 30 || steps[1] != 30 || steps[2] != 30 {
		t.Fatalf("the sequences finished at steps %v, want 30 each", steps)
	}
}
