package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/telemetry"
)

// TestServerPerfEndToEnd: --server-timings against a sim that serves
// TensorRT-LLM's /perf_metrics. What the server kept from before the
// run is drained and left out; every request of the run has its entry in
// the report (the last ones read once the run is done), joined to it by
// the answer's id, and the server's TTFTs are the sim's own records' to
// the histogram's precision.
func TestServerPerfEndToEnd(t *testing.T) {
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	p.PerfMetrics, p.SpecDecode = 1000, sim.SpecDecode{Draft: 3, Accept: 0.6}
	srv := simtest.Start(t, p)
	cfg := simConfig(t)
	cfg.URL, cfg.API = srv.URL, probe.OpenAIChat
	cfg.Probe.ServerTimings = true
	cfg.Load.MaxRequests = 30

	before := simConfig(t) // a run before, without --server-timings: its entries wait in the server
	before.URL, before.API, before.Load.MaxRequests = srv.URL, probe.OpenAIChat, 5
	runSeen(t, before)

	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := waitSnap(t, r, 60*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	rep := r.Report(context.Background(), s)
	sp := rep.ServerPerf
	if sp == nil || !sp.Offered || sp.Before != 5 || sp.Entries != 30 || s.TotalCompleted != 30 || sp.Refused+sp.Lost != 0 {
		t.Fatalf("server perf %+v after %d completed; want 5 before the run, 30 in it", sp, s.TotalCompleted)
	}
	var ttfts []time.Duration
	recs := srv.Sim.Records()
	for _, rec := range recs[len(recs)-30:] {
		ttfts = append(ttfts, rec.TTFT())
	}
	slices.Sort(ttfts)
	want, got := ttfts[len(ttfts)/2-1], sp.Parts[telemetry.PerfTTFT] // the 15th of 30, as HdrHistogram picks a p50
	if got.Count != 30 || (got.P50-want).Abs() > want/200+5*time.Microsecond {
		t.Errorf("the server's TTFT p50 %v of %d, the sim's records' %v", got.P50, got.Count, want)
	}
	// The sim names its answers chatcmpl-<request_id>, as recent
	// TensorRT-LLM versions do: every request joins its entry, and its
	// split's queue is the entry's.
	if sp.Joined != 30 || sp.Split[load.SplitGap].Count != 30 {
		t.Errorf("%d joined, a gap of %d; want all 30", sp.Joined, sp.Split[load.SplitGap].Count)
	}
	if q, e := sp.Split[load.SplitQueue].P50, sp.Parts[telemetry.PerfQueue].P50; (q - e).Abs() > e/100+10*time.Microsecond {
		t.Errorf("the joined split's queue p50 %v, the entries' %v", q, e)
	}
	if sp.SpecDrafted == 0 || sp.SpecAccepted > sp.SpecDrafted || sp.MissedBlocks == 0 {
		t.Errorf("counts %+v", sp.PerfCounts)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "the server's own timings (TensorRT-LLM /perf_metrics, 30 requests") {
		t.Errorf("the summary lacks the server's timings:\n%s", text.String())
	}
}

// TestServerPerfNotOffered: --server-timings against a server without
// /perf_metrics (the sim as vLLM): asked once, said once, every request
// still counted.
func TestServerPerfNotOffered(t *testing.T) {
	cfg := simConfig(t)
	cfg.Probe.ServerTimings = true
	cfg.Load.MaxRequests = 6
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := waitSnap(t, r, 60*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	r.Stop()
	rep := r.Report(context.Background(), s)
	if sp := rep.ServerPerf; sp == nil || sp.Offered || !strings.Contains(sp.Err, "404") || s.TotalCompleted != 6 {
		t.Fatalf("server perf %+v, %d completed; want not offered (404), 6 completed", sp, s.TotalCompleted)
	}
}
