package agent

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// TestCanaryServed: an agent of a comparison serves its canary's state,
// result and seconds under /canary/ (behind the token), its baseline's
// where a plain agent serves its load's, and no control there; its run
// lingers until a follower has fetched both sides' last words.
func TestCanaryServed(t *testing.T) {
	const token = "0123456789abcdef"
	b := &Board{Share: Share{Index: 0, Of: 2}, Version: "test", Compare: true}
	h := b.Handler([]byte(token), nil)
	do := func(method, path, tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	state := func(path string) State {
		t.Helper()
		w := do(http.MethodGet, path, token)
		var st State
		if err := json.Unmarshal(w.Body.Bytes(), &st); w.Code != 200 || err != nil {
			t.Fatalf("%s: HTTP %d, %v", path, w.Code, err)
		}
		return st
	}
	if st := state("/canary/state"); !st.Compare || !st.Canary || !st.Started.IsZero() {
		t.Errorf("before the start: %+v", st)
	}
	if w := do(http.MethodGet, "/canary/state", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("/canary/state without the token: HTTP %d", w.Code)
	}
	base, canary := &fakeLoad{knobs: load.Knobs{Concurrency: 5}}, &fakeLoad{knobs: load.Knobs{Concurrency: 3}}
	b.StartedCanary(canary)
	b.Started(base, base)
	if st := state("/state"); st.Concurrency != 5 || !st.Compare || st.Canary || st.Started.IsZero() {
		t.Errorf("the baseline's: %+v", st)
	}
	if st := state("/canary/state"); st.Concurrency != 3 || !st.Canary || st.Started.IsZero() {
		t.Errorf("the canary's: %+v", st)
	}
	for _, path := range []string{"/canary/control", "/canary/healthz", "/canary/"} {
		if w := do(http.MethodPost, path, token); w.Code != http.StatusNotFound {
			t.Errorf("%s: HTTP %d, want 404", path, w.Code)
		}
	}
	if w := do(http.MethodGet, "/canary/seconds", token); w.Code != http.StatusServiceUnavailable {
		t.Errorf("/canary/seconds of a load that keeps none: HTTP %d", w.Code)
	}
	rep := func(url string) *report.Report {
		return &report.Report{Manifest: report.Manifest{Tool: "infertop", URL: url}}
	}
	b.Finish(rep("http://baseline"), rep("http://canary"))
	lingered := make(chan struct{})
	go func() { defer close(lingered); b.Linger(time.Hour, nil) }()
	for _, side := range []struct{ path, url string }{{"/result", "http://baseline"}, {"/canary/result", "http://canary"}} {
		b.mu.Lock()
		fetched := b.fetched
		b.mu.Unlock()
		select {
		case <-fetched: // what ends the linger
			t.Fatalf("every last word counted fetched before %s was", side.path)
		default:
		}
		w := do(http.MethodGet, side.path, token)
		if w.Code != 200 || w.Header().Get(ResultHeader) != ResultFinal || !bytes.Contains(w.Body.Bytes(), []byte(side.url)) {
			t.Errorf("%s: HTTP %d, %q: %.200s", side.path, w.Code, w.Header().Get(ResultHeader), w.Body.String())
		}
	}
	<-lingered
}

// TestFinishWithoutCanary: a canary without a last word (its report
// missing) leaves the baseline's kept, and the linger waits for it alone.
func TestFinishWithoutCanary(t *testing.T) {
	b := &Board{Share: Share{Index: 0, Of: 1}, Compare: true}
	b.Finish(&report.Report{Manifest: report.Manifest{Tool: "infertop", URL: "http://baseline"}}, nil)
	if b.final[0] == nil || b.final[1] != nil || b.unfetched != [2]bool{true, false} {
		t.Fatalf("finals %v %v, unfetched %v", b.final[0] != nil, b.final[1] != nil, b.unfetched)
	}
	var w bytes.Buffer
	if final, err := b.Result(t.Context(), &w); !final || err != nil {
		t.Fatalf("the baseline's last word: %v %v", final, err)
	}
	b.Linger(time.Hour, nil) // returns: every last word there is was fetched
}
