package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
)

// engineLoad is a running engine as a board reads it (a runner's part).
type engineLoad struct{ *load.Engine }

func (engineLoad) Report(context.Context, load.Snapshot) *report.Report { return nil }

// TestSecondsServed: GET /seconds needs the token, refuses a bad since,
// and serves the engine's sealed seconds after since, each second's
// histograms decoding to its counts (every TTFT 5 ms here), numbered
// from the load's start. Virtual time (a synctest bubble), the handler
// called without a network.
func TestSecondsServed(t *testing.T) { synctest.Test(t, testSecondsServed) }

func testSecondsServed(t *testing.T) {
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		start := time.Now()
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return probe.Result{Class: probe.Canceled}
		}
		return probe.Result{Start: start, HasTTFT: true, TTFT: 5 * time.Millisecond, E2E: 20 * time.Millisecond, OutputTokens: 4, InputTokens: 8,
			Messages: 4}
	}
	eng, err := load.New(load.Config{Do: do, Knobs: load.Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := &Board{Share: Share{Index: 0, Of: 1}}
	const token = "0123456789abcdef"
	h := b.Handler([]byte(token), nil)
	get := func(path, tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := get("/seconds", token); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("before the start: HTTP %d", w.Code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { defer close(ran); eng.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	b.Started(engineLoad{eng}, eng)
	time.Sleep(3500 * time.Millisecond)
	for path, code := range map[string]int{"/seconds?since=x": 400, "/seconds?since=-2": 400} {
		if w := get(path, token); w.Code != code {
			t.Errorf("%s: HTTP %d, want %d", path, w.Code, code)
		}
	}
	if w := get("/seconds", "wrong-token-wrong-token"); w.Code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: HTTP %d", w.Code)
	}
	w := get("/seconds?since=0", token)
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", w.Code, w.Body)
	}
	var s Seconds
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Encoding != report.HistogramEncoding || !s.Started.Equal(eng.Started()) || s.Current < 3 || len(s.Seconds) != int(s.Current)-1 {
		t.Fatalf("%s, started %v (the engine %v), current %d, %d seconds", s.Encoding, s.Started, eng.Started(), s.Current, len(s.Seconds))
	}
	for i, sec := range s.Seconds {
		if sec.Sec != int64(i+1) || sec.Completed == 0 {
			t.Fatalf("second %d: %+v", i, sec)
		}
		d, err := hdr.Decode([]byte(sec.Hist["ttft"]))
		if err != nil {
			t.Fatal(err)
		}
		if d.TotalCount() == 0 || !d.ValuesAreEquivalent(d.Max(), 5000) || !d.ValuesAreEquivalent(d.Min(), 5000) {
			t.Fatalf("second %d: %d TTFTs, %d..%d µs", sec.Sec, d.TotalCount(), d.Min(), d.Max())
		}
		if _, ok := sec.Hist["e2el"]; !ok {
			t.Fatalf("second %d: no E2E histogram: %v", sec.Sec, sec.Hist)
		}
	}
	// Within a budget the newest are kept, the oldest left out, and the
	// answer is as large as said.
	sealed, err := eng.Seconds(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	all := secondsOf(sealed, MaxSecondsBytes)
	n := len(all.Seconds)
	two := secondSize(&all.Seconds[n-1]) + secondSize(&all.Seconds[n-2])
	cut := secondsOf(sealed, two)
	if len(cut.Seconds) != 2 || cut.Skipped != n-2 || cut.Seconds[1].Sec != all.Seconds[n-1].Sec || cut.Seconds[0].Sec != all.Seconds[n-2].Sec {
		t.Fatalf("within %d bytes: %d seconds, %d skipped (of %d)", two, len(cut.Seconds), cut.Skipped, n)
	}
	if b, _ := json.Marshal(all.Seconds[n-1]); len(b) > secondSize(&all.Seconds[n-1]) {
		t.Fatalf("a second of %d bytes counted %d", len(b), secondSize(&all.Seconds[n-1]))
	}
}
