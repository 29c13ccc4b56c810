package load

import (
	"math"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// TestHTTPPhasesAgainstSim: every request that got an answer is in the
// run's and its phase's HTTP phases, the first connections' connect in
// http_req_connecting, and the phases' means add up to E2E's (each
// request's phases add up to its E2E; the moments are exact to a
// microsecond a value).
func TestHTTPPhasesAgainstSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	r := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 16, OutputTokens: 4}, func(c *Config) { c.MaxRequests = 20 })
	s := waitFor(t, r.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	h := s.Run.HTTP
	if s.Run.Completed != 20 || h[probe.Blocked].Count != 20 || h[probe.Receiving].Count != 20 || len(s.Phases) != 1 || s.Phases[0].HTTP[probe.Waiting].Count != 20 {
		t.Fatalf("completed %d, http counts %d %d", s.Run.Completed, h[probe.Blocked].Count, h[probe.Receiving].Count)
	}
	if h[probe.Connecting].Max <= 0 {
		t.Errorf("no connect among the first connections: %+v", h[probe.Connecting])
	}
	sum := h[probe.Blocked].Mean + h[probe.Sending].Mean + h[probe.Waiting].Mean + h[probe.Receiving].Mean
	if e2e := s.Run.Latency[E2E].Mean; math.Abs(float64(sum-e2e)) > float64(4*time.Microsecond) {
		t.Errorf("the phases' means sum to %v, E2E's mean %v", sum, e2e)
	}
}

// TestTTFTSplitAgainstSim: asked for the server's timings, every
// request's TTFT is split, the parts' means add up to TTFT's mean, and a
// shared prefix shows in the prefix cache's tokens.
func TestTTFTSplitAgainstSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	p.PrefixCacheBlocks = 4096
	r := startRig(t, p, Knobs{Concurrency: 4, PromptTokens: 128, OutputTokens: 4}, func(c *Config) {
		c.MaxRequests = 24
		c.PrefixTokens = 64
		c.Do = timedClient(t, c, p).Do
	})
	s := waitFor(t, r.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	run := s.Run
	if run.Completed != 24 || run.ServerTimed != 24 || run.TTFTSplit[SplitPrefill].Count != 24 || run.TTFTSplit[SplitGap].Count != 24 {
		t.Fatalf("completed %d, server-timed %d, split %d", run.Completed, run.ServerTimed, run.TTFTSplit[SplitPrefill].Count)
	}
	sp := run.TTFTSplit
	sum := sp[SplitConnection].Mean + sp[SplitQueue].Mean + sp[SplitPrefill].Mean + sp[SplitRest].Mean
	if ttft := run.Latency[TTFT].Mean; absDur(sum-ttft) > 10*time.Microsecond {
		t.Errorf("the parts' means sum to %v, TTFT's mean %v", sum, ttft)
	}
	// The run is shorter than the window: the window's split is the run's.
	for i, d := range s.TTFTSplit {
		if d.Count != 24 || d.P50 != sp[i].P50 || d.P99 != sp[i].P99 {
			t.Errorf("the window's part %d: %d requests, p50 %v p99 %v; the run's %d, %v, %v", i, d.Count, d.P50, d.P99, sp[i].Count, sp[i].P50, sp[i].P99)
		}
	}
	if run.ServerCounted != 24 || run.CountMismatch != 0 {
		t.Errorf("the server's output count for %d requests, the client's differing in %d: want 24 and 0 on the sim", run.ServerCounted, run.CountMismatch)
	}
	if run.CachedOf == 0 || run.CachedTokens == 0 || run.CachedTokens >= run.CachedOf {
		t.Errorf("prefix cache: %d of %d prompt tokens", run.CachedTokens, run.CachedOf)
	}
	t.Logf("TTFT p50 %v: connection %v, queue %v, prefill %v, rest %v; gap %v; cache %d/%d",
		run.Latency[TTFT].P50, sp[SplitConnection].P50, sp[SplitQueue].P50, sp[SplitPrefill].P50, sp[SplitRest].P50, sp[SplitGap].P50, run.CachedTokens, run.CachedOf)
}

// TestSpecDecodeAgainstSim: with the server's speculative decoding
// reported per request (the sim's SpecDecode), the run's accepted and
// drafted tokens are the sums of what the sim's records say it sent,
// exactly; without the per-request metrics asked, none.
func TestSpecDecodeAgainstSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	p.SpecDecode = sim.SpecDecode{Draft: 3, Accept: 0.6}
	r := startRig(t, p, Knobs{Concurrency: 4, PromptTokens: 16, OutputTokens: 24}, func(c *Config) {
		c.MaxRequests = 30
		c.Do = timedClient(t, c, p).Do
	})
	s := waitFor(t, r.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	var acc, drafted int64
	for _, rec := range r.sim.Records() {
		acc, drafted = acc+int64(rec.SpecAccepted), drafted+int64(rec.SpecDrafted)
	}
	run := s.Run
	if run.Completed != 30 || drafted == 0 || run.SpecAccepted != acc || run.SpecDrafted != drafted || s.Phases[0].SpecDrafted != drafted {
		t.Fatalf("run: %d of %d accepted over %d requests; the sim sent %d of %d", run.SpecAccepted, run.SpecDrafted, run.Completed, acc, drafted)
	}
	t.Logf("acceptance %.3f (%d of %d)", float64(acc)/float64(drafted), acc, drafted)
	plain := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 16, OutputTokens: 8}, func(c *Config) { c.MaxRequests = 6 })
	s = waitFor(t, plain.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	plain.stop()
	if s.Run.SpecDrafted != 0 {
		t.Errorf("not asked: %d drafted", s.Run.SpecDrafted)
	}
}

// timedClient is a client of c's sim that asks for the server's timings
// (and so its usage's cached tokens), closed by the test's cleanup.
func timedClient(t *testing.T, c *Config, p sim.Params) *probe.Client {
	t.Helper()
	client, err := probe.New(probe.Config{URL: c.Target.URL + "/v1/chat/completions", Model: p.Model,
		Body: probe.BodyOptions{Extra: probe.AskServerTimings(probe.OpenAIChat, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// TestCountMismatch: a server that sends two tokens a message makes the
// client's count (a token a message) differ from its own on every
// request; a request with no count of the server's is not counted.
func TestCountMismatch(t *testing.T) {
	var acc serverAcc
	acc.record(&probe.Result{HasTTFT: true, OutputTokens: 8, Messages: 4})
	acc.record(&probe.Result{HasTTFT: true, OutputTokens: 4, Messages: 4})
	acc.record(&probe.Result{HasTTFT: true, OutputTokens: 4, Messages: 4, OutputEstimated: true})
	acc.record(&probe.Result{OutputTokens: 4, Messages: 1}) // not streamed
	if acc.counted != 2 || acc.mismatched != 1 {
		t.Fatalf("counted %d, mismatched %d; want 2 and 1", acc.counted, acc.mismatched)
	}
}
