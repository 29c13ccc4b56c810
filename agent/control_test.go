package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// fakeLoad is a running load as a board sees it, its controller's calls
// recorded.
type fakeLoad struct {
	mu      sync.Mutex
	knobs   load.Knobs
	phases  int
	windows []time.Duration
	resets  int
	ended   []string
}

func (f *fakeLoad) Finish(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, why)
}

func (f *fakeLoad) Latest() load.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return load.Snapshot{Knobs: f.knobs}
}

func (f *fakeLoad) Report(context.Context, load.Snapshot) *report.Report { return nil }

func (f *fakeLoad) Update(fn func(*load.Knobs)) load.Knobs {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.knobs)
	return f.knobs
}

func (f *fakeLoad) NewPhase(fn func(*load.Knobs)) (load.Knobs, int) { return f.NewPhaseFrom(0, fn) }

func (f *fakeLoad) NewPhaseFrom(least int, fn func(*load.Knobs)) (load.Knobs, int) {
	k := f.Update(fn)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phases = max(f.phases, least-1) + 1
	return k, f.phases
}

func (f *fakeLoad) SetWindow(w time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.windows = append(f.windows, w)
}

func (f *fakeLoad) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets++
}

// TestControl: an agent takes its share of the whole knobs a follower
// sends (waiting for its start when it comes before), each control once
// by its seq, the window and a reset with it; it refuses knobs that leave
// its share nothing, invalid ones and a body not strictly a control, in a
// line; it logs every change applied, and /control wants the token.
func TestControl(t *testing.T) {
	const token = "0123456789abcdef"
	b := &Board{Share: Share{Index: 3, Of: 4}, Version: "test"}
	cfg := load.Config{Knobs: load.Knobs{Concurrency: 8, PromptTokens: 16, OutputTokens: 20}}
	if err := b.Cut(&cfg, false); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	h := b.Handler([]byte(token), func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(f, a...))
	})
	post := func(body, auth string) (int, State, string) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/control", strings.NewReader(body))
		r.Header.Set("Authorization", auth)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var st State
		if w.Code == 200 {
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
		}
		return w.Code, st, w.Body.String()
	}
	knobs := func(mode string, c int, rate float64, prompt int) string {
		return fmt.Sprintf(`"knobs":{"mode":%q,"concurrency":%d,"rate":%g,"prompt_tokens":%d,"output_tokens":20,"paused":false,"speed":0}`, mode, c,
			rate, prompt)
	}
	auth := "Bearer " + token
	if st := b.State(); st.Whole == nil || st.Whole.Concurrency != 8 || st.ControlSeq != 0 {
		t.Fatalf("before any control: %+v", st)
	}
	// Before the start: taken, applied at the start.
	code, st, body := post(`{"seq":1,`+knobs("closed", 12, 0, 16)+`}`, auth)
	if code != 200 || st.ControlSeq != 1 || st.Whole.Concurrency != 12 {
		t.Fatalf("before the start: %d %s", code, body)
	}
	fl := &fakeLoad{knobs: load.Knobs{Concurrency: 2, PromptTokens: 16, OutputTokens: 20}}
	b.Started(fl, fl)
	if k := fl.Latest().Knobs; k.Concurrency != 3 || fl.phases != 1 {
		t.Fatalf("at the start: %+v, %d phases", k, fl.phases)
	}
	// The open loop at 10 req/s: this share 2.5, a phase of its own.
	code, st, body = post(`{"seq":2,`+knobs("open", 12, 10, 32)+`,"window_ms":60000}`, auth)
	if k := fl.Latest().Knobs; code != 200 || st.ControlSeq != 2 || k.Mode != load.OpenLoop || k.Rate != 2.5 || k.PromptTokens != 32 ||
		fl.phases != 2 || len(fl.windows) != 1 || fl.windows[0] != time.Minute {
		t.Fatalf("seq 2: %d %s; %+v, %d phases, windows %v", code, body, k, fl.phases, fl.windows)
	}
	// Repeated and stale: applied once.
	for _, seq := range []int{2, 1} {
		if code, st, _ := post(fmt.Sprintf(`{"seq":%d,`, seq)+knobs("closed", 40, 0, 16)+`,"reset_seq":2}`, auth); code != 200 || st.ControlSeq != 2 {
			t.Errorf("seq %d again: %d, seq %d", seq, code, st.ControlSeq)
		}
	}
	if k := fl.Latest().Knobs; k.Mode != load.OpenLoop || fl.phases != 2 || fl.resets != 0 {
		t.Errorf("a stale control applied: %+v, %d phases, %d resets", k, fl.phases, fl.resets)
	}
	// A reset alone: the knobs as they are, no new phase.
	if code, _, body := post(`{"seq":3,`+knobs("open", 12, 10, 32)+`,"window_ms":60000,"reset_seq":3}`, auth); code != 200 || fl.resets != 1 ||
		fl.phases != 2 || len(fl.windows) != 1 {
		t.Errorf("a reset: %d %s, %d resets, %d phases", code, body, fl.resets, fl.phases)
	}
	for _, tt := range []struct {
		body, auth string
		code       int
		want       string
	}{
		{`{"seq":4,` + knobs("closed", 3, 0, 16) + `}`, auth, 422, "leaves this share none"},
		{`{"seq":4,` + knobs("open", 12, 0.02, 16) + `}`, auth, 422, "below the open loop's slowest"},
		{`{"seq":4,` + knobs("sideways", 12, 0, 16) + `}`, auth, 422, "neither open nor closed"},
		{`{"seq":4,` + knobs("closed", 12, 0, 0) + `}`, auth, 422, "prompt of 0 tokens"},
		{`{"seq":4,` + knobs("closed", 12, 0, 16) + `,"window_ms":7}`, auth, 422, "window of 7ms"},
		{`{"seq":4,"colour":"red"}`, auth, 400, "unknown field"},
		{`{"seq":4}{"seq":5}`, auth, 400, "data after"},
		{`{"knobs":null}`, auth, 400, "no seq"},
		{`{"seq":4,"pad":"` + strings.Repeat("x", MaxControlBytes) + `"}`, auth, 413, "too large"},
		{`{"seq":4}`, "Bearer nope", 401, "token"},
		{`{"seq":4,"phase":-1}`, auth, 400, "phase -1 is outside"},
		{`{"seq":18446744073709551615}`, auth, 400, "is past"}, // would wrap every follower's count
	} {
		if code, _, body := post(tt.body, tt.auth); code != tt.code || !strings.Contains(body, tt.want) || strings.Count(strings.TrimSpace(body), "\n") > 0 {
			t.Errorf("%.60s: %d %q, want %d and %q in a line", tt.body, code, body, tt.code, tt.want)
		}
	}
	if st := b.State(); st.ControlSeq != 3 || fl.Latest().Knobs.Concurrency != 3 {
		t.Errorf("a refused control moved the agent: %+v", st)
	}
	// A phase the follower numbers: started at that id with the knobs
	// as they are, once; the state says the agent is in it.
	if code, st, body := post(`{"seq":4,"phase":9}`, auth); code != 200 || fl.phases != 9 || st.Phase != 9 || fl.Latest().Knobs.Rate != 2.5 {
		t.Errorf("phase 9: %d %s, %d phases", code, body, fl.phases)
	}
	if code, _, body := post(`{"seq":5,"phase":9,"window_ms":60000}`, auth); code != 200 || fl.phases != 9 {
		t.Errorf("phase 9 again: %d %s, %d phases", code, body, fl.phases)
	}
	// The end of the run, once.
	for _, seq := range []int{6, 7} {
		if code, _, body := post(fmt.Sprintf(`{"seq":%d,"finish":true}`, seq), auth); code != 200 || len(fl.ended) != 1 || fl.ended[0] != FinishWhy {
			t.Errorf("finish (seq %d): %d %s, ended %q", seq, code, body, fl.ended)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/control", nil)
	r.Header.Set("Authorization", auth)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /control: %d", w.Code)
	}
	mu.Lock()
	defer mu.Unlock()
	var applied []string
	for _, l := range logs {
		if strings.Contains(l, ": control ") {
			applied = append(applied, l)
		}
	}
	if len(applied) != 5 || !strings.Contains(applied[4], "the run ended") || !strings.Contains(applied[0], "(at the start)") || !strings.Contains(applied[1], "this share open loop, concurrency 3, rate 2.5") ||
		!strings.Contains(applied[2], "statistics reset") || !strings.Contains(applied[3], "phase 9: the whole open loop") {
		t.Errorf("the log of the changes applied:\n%s", strings.Join(applied, "\n"))
	}
	if strings.Contains(strings.Join(logs, "\n"), token) {
		t.Error("the token is in the log")
	}
}

// TestShareKnobs: the shares of whole knobs add up to the whole, and
// ClampWhole leaves every share a request in flight.
func TestShareKnobs(t *testing.T) {
	whole := load.Knobs{Mode: load.OpenLoop, Concurrency: 10, Rate: 9, PromptTokens: 16, OutputTokens: 8}
	var c int
	var r float64
	for i := range 4 {
		s := Share{Index: i, Of: 4}
		k := s.Knobs(whole)
		c, r = c+k.Concurrency, r+k.Rate
		if err := s.CheckKnobs(whole); err != nil || k.PromptTokens != 16 || k.Mode != load.OpenLoop {
			t.Errorf("share %d: %+v, %v", i, k, err)
		}
	}
	if c != 10 || r != 9 {
		t.Errorf("the shares add to %d, %g", c, r)
	}
	k := ClampWhole(load.Knobs{Concurrency: 2, PromptTokens: 0, OutputTokens: 1 << 30, Mode: load.OpenLoop}, 4)
	if k.Concurrency != 4 || k.PromptTokens != 1 || k.OutputTokens != load.MaxOutputTokens || k.Rate != 4*load.MinRate {
		t.Errorf("clamped: %+v", k)
	}
	for i := range 4 {
		if err := (Share{Index: i, Of: 4}).CheckKnobs(k); err != nil {
			t.Errorf("a clamped whole refused: %v", err)
		}
	}
}
