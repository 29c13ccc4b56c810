package exporter

import (
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestHTTPPhaseSeries: every request that got an answer, a failed one
// too, is in each HTTP phase's histogram; one that got none is in none.
func TestHTTPPhaseSeries(t *testing.T) {
	x := New(nil)
	x.Observe(load.Record{Result: probe.Result{Status: 200, TTFB: 2 * time.Millisecond, E2E: 9 * time.Millisecond}})
	x.Observe(load.Record{Result: probe.Result{Class: probe.HTTP5xx, Status: 503, TTFB: 3 * time.Millisecond, E2E: 4 * time.Millisecond}})
	x.Observe(load.Record{Result: probe.Result{Class: probe.Connection}})
	got := scrape(t, x)
	for i := range probe.NumHTTPPhases {
		name := "infertop_" + i.String() + "_seconds_count"
		if got[name] != 2 {
			t.Errorf("%s = %v, want 2", name, got[name])
		}
	}
}

// TestTTFTSplitSeries: a request whose server gave its timings is in
// each part of the split, and its cached tokens counted; one whose server
// gave none is in no part.
func TestTTFTSplitSeries(t *testing.T) {
	x := New(nil)
	x.Observe(load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: 9 * time.Millisecond, InputTokens: 100,
		Server: probe.ServerTimings{TTFT: 5 * time.Millisecond, HasTTFT: true, Queue: time.Millisecond, HasQueue: true, CachedTokens: 40, HasCached: true}}})
	x.Observe(load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: time.Millisecond, InputTokens: 50}})
	got := scrape(t, x)
	for _, part := range []string{"connection", "queue", "prefill", "rest", "gap"} {
		if n := got[`infertop_ttft_split_seconds{part="`+part+`"}_count`]; n != 1 {
			t.Errorf("part %s: %v requests, want 1", part, n)
		}
	}
	if got["infertop_cached_prompt_tokens_total"] != 40 || got["infertop_prompt_tokens_cache_known_total"] != 100 {
		t.Errorf("cache: %v of %v", got["infertop_cached_prompt_tokens_total"], got["infertop_prompt_tokens_cache_known_total"])
	}
}

// TestServerPerfSeries: each /perf_metrics entry (TensorRT-LLM) is in
// the spans it gave, and its blocks and draft tokens counted.
func TestServerPerfSeries(t *testing.T) {
	x := New(nil)
	x.ObservePerf(probe.ServerPerf{Queue: time.Millisecond, HasQueue: true, TTFT: 3 * time.Millisecond, HasTTFT: true,
		ReusedBlocks: 3, MissedBlocks: 1, HasBlocks: true, SpecAccepted: 2, SpecDrafted: 5, HasSpec: true})
	x.ObservePerf(probe.ServerPerf{Generation: time.Second, HasGeneration: true})
	got := scrape(t, x)
	for part, want := range map[string]float64{"queue": 1, "prefill": 0, "ttft": 1, "generation": 1} {
		if n := got[`infertop_server_perf_seconds{part="`+part+`"}_count`]; n != want {
			t.Errorf("part %s: %v entries, want %v", part, n, want)
		}
	}
	if got[`infertop_server_perf_kv_blocks_total{kind="reused"}`] != 3 || got[`infertop_server_perf_kv_blocks_total{kind="missed"}`] != 1 ||
		got[`infertop_server_perf_draft_tokens_total{kind="accepted"}`] != 2 || got[`infertop_server_perf_draft_tokens_total{kind="drafted"}`] != 5 {
		t.Errorf("counts: %v", got)
	}
}
