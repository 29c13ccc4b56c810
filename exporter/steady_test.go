package exporter

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
)

// metricsText is x's /metrics as a scraper reads it.
func metricsText(t *testing.T, x *Exporter) string {
	t.Helper()
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Result().Body)
	if err != nil || rec.Code != 200 {
		t.Fatalf("/metrics: %d %v", rec.Code, err)
	}
	return string(b)
}

// TestSteadySeries: /metrics says 0 and NaN until the closed loop's
// steady-state window is found, then 1 and the window's span and
// throughputs as the snapshot has them; a change of the concurrency,
// which starts it over, or the open loop, back to 0.
func TestSteadySeries(t *testing.T) {
	x := New(nil)
	want := func(lines ...string) {
		t.Helper()
		body := metricsText(t, x)
		for _, l := range lines {
			if !strings.Contains(body, "\n"+l+"\n") {
				t.Errorf("/metrics lacks %q", l)
			}
		}
	}
	want("infertop_steady 0", "infertop_steady_requests_per_second NaN", "infertop_steady_output_tokens_per_second NaN", "infertop_steady_window_seconds NaN")
	s := load.Snapshot{Knobs: load.Knobs{Concurrency: 64}, Steady: load.SteadyState{Target: 64}}
	x.Update(s, slo.FromWindow(s))
	want("infertop_steady 0", "infertop_steady_output_tokens_per_second NaN")
	// Steady since this snapshot: a window of no length has no rates yet.
	s.Steady = load.SteadyState{Target: 64, Reached: true, Start: 250 * time.Millisecond, End: 250 * time.Millisecond}
	x.Update(s, slo.FromWindow(s))
	want("infertop_steady 1", "infertop_steady_requests_per_second NaN", "infertop_steady_window_seconds 0")
	s.Steady = load.SteadyState{Target: 64, Reached: true, Start: 250 * time.Millisecond, End: 29750 * time.Millisecond, Completed: 380,
		ReqPerSec: 12.88, OutTokPerSec: 1666}
	x.Update(s, slo.FromWindow(s))
	want("infertop_steady 1", "infertop_steady_requests_per_second 12.88", "infertop_steady_output_tokens_per_second 1666", "infertop_steady_window_seconds 29.5")
	s.Steady = load.SteadyState{Target: 32}
	x.Update(s, slo.FromWindow(s))
	want("infertop_steady 0", "infertop_steady_requests_per_second NaN")
}

// TestTurnCacheSeries: a session's turn counts the prompt tokens its
// server's prefix cache held, by the server's count, under its turn's
// label; a request whose server did not say, or that failed, counts in
// neither.
func TestTurnCacheSeries(t *testing.T) {
	x := New(nil)
	said := func(turn, cached, of int) load.Record {
		return load.Record{Turn: turn, Result: probe.Result{Status: 200, InputTokens: of, Server: probe.ServerTimings{CachedTokens: cached, HasCached: true}}}
	}
	x.Observe(said(1, 0, 100))
	x.Observe(said(2, 90, 200))
	x.Observe(said(2, 150, 250))
	x.Observe(load.Record{Turn: 2, Result: probe.Result{Status: 200, InputTokens: 300}})                       // no count
	x.Observe(load.Record{Turn: 2, Result: probe.Result{Class: probe.HTTP5xx, Status: 503, InputTokens: 300}}) // failed
	body := metricsText(t, x)
	for _, l := range []string{`infertop_turn_cached_prompt_tokens_total{turn="1"} 0`, `infertop_turn_prompt_tokens_cache_known_total{turn="1"} 100`,
		`infertop_turn_cached_prompt_tokens_total{turn="2"} 240`, `infertop_turn_prompt_tokens_cache_known_total{turn="2"} 450`} {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("/metrics lacks %q", l)
		}
	}
}
