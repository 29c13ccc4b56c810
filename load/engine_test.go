package load

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

type rig struct {
	eng  *Engine
	sim  *sim.Server
	stop func()
}

// startRig runs the in-process sim and an engine against it.
func startRig(t *testing.T, p sim.Params, k Knobs, opts ...func(*Config)) *rig {
	t.Helper()
	return startRigTimeout(t, p, k, 0, opts...)
}

// startRigTimeout is startRig with a per-request timeout for the client (0:
// the default).
func startRigTimeout(t *testing.T, p sim.Params, k Knobs, timeout time.Duration, opts ...func(*Config)) *rig {
	t.Helper()
	srv := simtest.Start(t, p)
	client, err := probe.New(probe.Config{URL: srv.ChatURL, Model: p.Model, MaxConns: 64, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Do: client.Do, Knobs: k, Tick: 50 * time.Millisecond, Target: Target{URL: srv.Origin, Model: p.Model, API: "openai-chat", Sim: true}}
	for _, o := range opts {
		o(&cfg)
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engCtx, engCancel := context.WithCancel(context.Background())
	engDone := make(chan struct{})
	go func() { defer close(engDone); eng.Run(engCtx) }()
	r := &rig{eng: eng, sim: srv.Sim}
	var stopped bool
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		engCancel()
		<-engDone
		srv.Close()
		client.Close()
	}
	t.Cleanup(r.stop)
	return r
}

// waitFor polls the engine's latest snapshot until cond holds.
func waitFor(t *testing.T, e *Engine, within time.Duration, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := e.Latest()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last snapshot: inflight %d, completed %d, failed %d, last error %q)",
				what, within, s.InFlight, s.TotalCompleted, s.TotalFailed, s.LastError)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exact(sorted []time.Duration, q float64) time.Duration {
	// The nearest-rank percentile, as HdrHistogram computes it.
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// TestEngineMatchesSim holds the client's TTFT and E2E against the sim's own
// server-side record of the same requests.
func TestEngineMatchesSim(t *testing.T) {
	if raceDetector {
		// The race detector slows both HTTP stacks on the same two cores by
		// more than the bound being checked; `make test` runs this test
		// again without it, against the 2 ms and 5 %.
		t.Skip("a timing test: run without -race (make test does)")
	}
	p, _ := sim.Preset("default")
	// 400 requests, so that p99 is not one of the two slowest requests
	// (a single scheduling hiccup on two shared cores would move it).
	r := startRig(t, p, Knobs{Concurrency: 6, PromptTokens: 256, OutputTokens: 12})
	waitFor(t, r.eng, 40*time.Second, "400 requests", func(s Snapshot) bool { return s.TotalCompleted >= 400 })
	r.eng.SetPaused(true)
	var records []sim.Record
	s := waitFor(t, r.eng, 10*time.Second, "drain", func(s Snapshot) bool {
		if s.InFlight != 0 {
			return false
		}
		records = r.sim.Records()
		return int64(len(records)) == s.TotalCompleted
	})
	if s.TotalFailed != 0 {
		t.Fatalf("%d failures: %s", s.TotalFailed, s.LastError)
	}
	var ttft, e2e []time.Duration
	for _, rec := range records {
		ttft = append(ttft, rec.TTFT())
		e2e = append(e2e, rec.E2E())
	}
	slices.Sort(ttft)
	slices.Sort(e2e)
	// The bounds: 2 ms at p50, 5 % at p99.
	p50Tol, p99Tol := 2*time.Millisecond, 0.05
	for _, c := range []struct {
		name   string
		client Dist
		server []time.Duration
	}{{"TTFT", s.Latency[TTFT], ttft}, {"E2E", s.Latency[E2E], e2e}} {
		if c.client.Count != int64(len(c.server)) {
			t.Fatalf("%s: %d client samples, %d server records", c.name, c.client.Count, len(c.server))
		}
		sp50, sp99 := exact(c.server, 0.50), exact(c.server, 0.99)
		t.Logf("%s p50 client %v server %v; p99 client %v server %v", c.name, c.client.P50, sp50, c.client.P99, sp99)
		if d := c.client.P50 - sp50; d < -time.Millisecond || d > p50Tol {
			t.Errorf("%s p50: client %v, server %v", c.name, c.client.P50, sp50)
		}
		if !near(c.client.P99, sp99, p99Tol) {
			t.Errorf("%s p99: client %v, server %v", c.name, c.client.P99, sp99)
		}
	}
	t.Logf("TTFB p50 %v", s.Latency[TTFB].P50)
	if s.Latency[ITL].Count != 11*s.TotalCompleted || s.Latency[TPOT].Count != s.TotalCompleted {
		t.Errorf("ITL count %d, TPOT count %d for %d requests of 12 tokens", s.Latency[ITL].Count, s.Latency[TPOT].Count, s.TotalCompleted)
	}
	if s.OutputEstimated || s.TotalOutTokens != 12*s.TotalCompleted {
		t.Errorf("output tokens %d (estimated %v)", s.TotalOutTokens, s.OutputEstimated)
	}
}

func TestConcurrencyFollows(t *testing.T) {
	t.Parallel()
	// The deadlines are for a busy machine: each wait ends at its event.
	p, _ := sim.Preset("default")
	r := startRig(t, p, Knobs{Concurrency: 4, PromptTokens: 16, OutputTokens: 64})
	waitFor(t, r.eng, 10*time.Second, "4 in flight", func(s Snapshot) bool { return s.InFlight == 4 })
	r.eng.SetConcurrency(12)
	waitFor(t, r.eng, 10*time.Second, "12 in flight", func(s Snapshot) bool { return s.InFlight == 12 && s.Knobs.Concurrency == 12 })
	r.eng.Update(func(k *Knobs) { k.Concurrency /= 6 })
	waitFor(t, r.eng, 10*time.Second, "2 in flight", func(s Snapshot) bool { return s.InFlight == 2 })
	r.eng.SetPaused(true)
	// Nothing in flight and nothing pending: a request leaves InFlight
	// before the aggregator counts it, so InFlight alone left one to be
	// counted after this snapshot (completed 12 → 13 "while paused").
	p0 := waitFor(t, r.eng, 10*time.Second, "paused", func(s Snapshot) bool {
		return s.InFlight == 0 && s.Run.Pending == 0 && s.Knobs.Paused
	})
	// Four more ticks (snapshots, 200 ms) start nothing.
	if s := waitFor(t, r.eng, 10*time.Second, "four more snapshots", func(s Snapshot) bool { return s.Seq >= p0.Seq+4 }); s.TotalCompleted != p0.TotalCompleted || s.Run.Sent() != p0.Run.Sent() {
		t.Fatalf("completed %d → %d, sent %d → %d while paused", p0.TotalCompleted, s.TotalCompleted, p0.Run.Sent(), s.Run.Sent())
	}
	r.eng.SetPaused(false)
	waitFor(t, r.eng, 10*time.Second, "resumed", func(s Snapshot) bool { return s.InFlight == 2 })
}

func TestPhasesFollowKnobs(t *testing.T) {
	p, _ := sim.Preset("default")
	r := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 16, OutputTokens: 8}, func(c *Config) { c.NoCalibrate = true })
	waitFor(t, r.eng, 10*time.Second, "first requests", func(s Snapshot) bool { return s.TotalCompleted >= 4 })
	r.eng.Update(func(k *Knobs) { k.PromptTokens *= 2 })
	s := waitFor(t, r.eng, 10*time.Second, "second phase", func(s Snapshot) bool {
		return len(s.Phases) == 2 && s.Phases[1].Completed >= 4 && s.Phases[0].End > 0
	})
	if s.Phases[0].Knobs.PromptTokens != 16 || s.Phases[1].Knobs.PromptTokens != 32 || !s.Phases[1].Current {
		t.Fatalf("phases %+v", s.Phases)
	}
	// The sim counts our prompt words one token each, plus its template.
	// The sim counts a long word as two tokens, and adds its chat template.
	if got := s.Phases[1].InTokens / s.Phases[1].Completed; got < 32+7 || got > 2*32+7 {
		t.Errorf("phase 2 prompt tokens %d per request, want %d to %d", got, 32+7, 2*32+7)
	}
	r.eng.Reset()
	s = waitFor(t, r.eng, 10*time.Second, "reset", func(s Snapshot) bool { return len(s.Phases) == 1 && s.Phases[0].ID == 3 })
	if s.TotalCompleted > 2 {
		t.Errorf("%d completed right after reset", s.TotalCompleted)
	}
}

func TestSubscribers(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("default")
	r := startRig(t, p, Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 4})
	a, cancelA := r.eng.Subscribe()
	b, cancelB := r.eng.Subscribe()
	var last uint64
	for range 3 {
		s := <-a
		if s.Seq <= last {
			t.Fatalf("seq %d after %d", s.Seq, last)
		}
		last = s.Seq
	}
	cancelA()
	cancelA()
	if _, ok := <-a; ok {
		// one snapshot may have been waiting; the next read must see the close
		if _, ok := <-a; ok {
			t.Fatal("cancelled subscription still open")
		}
	}
	// b was never read: it holds exactly the newest snapshot, after four
	// more were published.
	waitFor(t, r.eng, 10*time.Second, "four more snapshots", func(s Snapshot) bool { return s.Seq >= last+4 })
	s := <-b
	if s.Seq < r.eng.Latest().Seq-1 {
		t.Fatalf("stale snapshot %d, latest %d", s.Seq, r.eng.Latest().Seq)
	}
	r.stop()
	for range b {
	}
	cancelB()
	// A subscription after the stop holds the last snapshot, then ends.
	late, _ := r.eng.Subscribe()
	if s, ok := <-late; !ok || !s.Done {
		t.Fatalf("a subscription after stop: %v, done %v; want the last snapshot", ok, s.Done)
	}
	if _, ok := <-late; ok {
		t.Fatal("subscription after stop is open")
	}
}

func TestDeadEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	client, _ := probe.New(probe.Config{URL: "http://" + addr + "/v1/chat/completions", Model: "m"})
	defer client.Close()
	eng, _ := New(Config{Do: client.Do, Knobs: Knobs{Concurrency: 4, PromptTokens: 8, OutputTokens: 8}, Tick: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	s := waitFor(t, eng, 10*time.Second, "errors", func(s Snapshot) bool { return s.TotalFailed >= 20 })
	if s.TotalByClass[probe.Connection] != s.TotalFailed || s.ErrorRate != 1 || s.LastError == "" {
		t.Fatalf("classes %v rate %v last %q", s.TotalByClass, s.ErrorRate, s.LastError)
	}
	time.Sleep(500 * time.Millisecond)
	// 4 workers backing off, doubling from 5 ms to 1 s: about 8 failures
	// each in the first 1.3 s, over a window that covers only that much.
	if s := eng.Latest(); s.ErrPerSec > 100 {
		t.Errorf("%v errors/s against a dead endpoint", s.ErrPerSec)
	}
	cancel()
	<-done
}

func BenchmarkEngineNoop(b *testing.B) {
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		return probe.Result{Start: time.Now(), HasTTFT: true, TTFT: time.Millisecond, E2E: 2 * time.Millisecond, OutputTokens: 2}
	}
	eng, _ := New(Config{Do: do, Knobs: Knobs{Concurrency: 8, PromptTokens: 16, OutputTokens: 2}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	b.ResetTimer()
	start := eng.Latest().TotalCompleted
	for eng.Latest().TotalCompleted-start < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(eng.Latest().TotalCompleted)/b.Elapsed().Seconds(), "req/s")
}

func TestMaxRequestsGoodputAndRecords(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("default")
	var records []Record
	r := startRig(t, p, Knobs{Concurrency: 4, PromptTokens: 16, OutputTokens: 8}, func(c *Config) {
		c.MaxRequests = 30
		c.Goodput = Goodput{TTFT: time.Hour, E2E: time.Hour}
		c.OnResult = func(rec Record) { records = append(records, rec) } // the aggregator's goroutine only
	})
	// Done: the limit reached and every request started counted, so no
	// more can come. A bound on a hang (the run takes under a second
	// idle): beside the suite and a CPU hog, once, none of the first four
	// requests had come back at 10 s, and the rig took 8 s more to stop.
	s := waitFor(t, r.eng, time.Minute, "the end of the run", func(s Snapshot) bool { return s.Done })
	if s.TotalCompleted != 30 || s.DoneWhy != EndRequests {
		t.Fatalf("%d requests with a limit of 30 (%s)", s.TotalCompleted, s.DoneWhy)
	}
	if s.Run.Completed != 30 || s.Run.Good != 30 || s.Run.Latency[E2E].Count != 30 || s.Run.GoodPerSec <= 0 {
		t.Fatalf("run %+v", s.Run)
	}
	r.stop()
	if len(records) != 30 || records[0].Phase != 1 || records[0].Knobs.Concurrency != 4 || !records[0].Good || records[0].PromptTokens != 16 {
		t.Fatalf("%d records, first %+v", len(records), records[0])
	}
}

func TestGoodputLimits(t *testing.T) {
	r := probe.Result{HasTTFT: true, TTFT: 100 * time.Millisecond, E2E: time.Second, OutputTokens: 10}
	tests := []struct {
		g    Goodput
		good bool
	}{
		{Goodput{}, true}, {Goodput{TTFT: 200 * time.Millisecond}, true}, {Goodput{TTFT: 50 * time.Millisecond}, false},
		{Goodput{TPOT: 100 * time.Millisecond}, true}, {Goodput{TPOT: 50 * time.Millisecond}, false}, {Goodput{E2E: 500 * time.Millisecond}, false},
	}
	for _, tt := range tests {
		if got := tt.g.good(&r, 0); got != tt.good {
			t.Errorf("%+v: good %v", tt.g, got)
		}
	}
	// In the open loop a request that waited for a free slot waited for
	// its answer too: 100 ms of TTFT after 300 ms in the backlog is 400 ms
	// from its intended send.
	for _, g := range []Goodput{{TTFT: 200 * time.Millisecond}, {E2E: 1200 * time.Millisecond}} {
		if g.good(&r, 300*time.Millisecond) {
			t.Errorf("%+v: good after 300ms in the backlog", g)
		}
	}
	if !(Goodput{TPOT: 100 * time.Millisecond}).good(&r, time.Hour) {
		t.Error("TPOT is no time from the send: the queue is none of it")
	}
	failed := probe.Result{Class: probe.HTTP5xx}
	if (Goodput{}).good(&failed, 0) {
		t.Error("a failed request counted as good")
	}
}

// TestCalibrationAgainstSim: the sim counts long words as two tokens and
// adds a chat template; within 20 requests the prompts it reports are
// within 5 % of the length asked for.
func TestCalibrationAgainstSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	var mu sync.Mutex
	var got []int
	r := startRig(t, p, Knobs{Concurrency: 1, PromptTokens: 512, OutputTokens: 1}, func(c *Config) {
		c.OnResult = func(rec Record) { mu.Lock(); got = append(got, rec.InputTokens); mu.Unlock() }
	})
	waitFor(t, r.eng, 10*time.Second, "20 requests", func(s Snapshot) bool { return s.TotalCompleted >= 20 })
	r.stop()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("prompt tokens reported: first %d, 20th %d (asked 512)", got[0], got[19])
	if math.Abs(float64(got[19]-512))/512 > 0.05 {
		t.Fatalf("20th request: %d prompt tokens, asked 512 (all: %v)", got[19], got[:20])
	}
	if math.Abs(float64(got[0]-512))/512 < 0.05 {
		t.Fatalf("the first request was already within 5 %% (%d): the test shows nothing", got[0])
	}
}

// TestSameSeedSameRequests: a seed fixes the sequence of prompts and lengths.
func TestSameSeedSameRequests(t *testing.T) {
	run := func(seed uint64) []string {
		var mu sync.Mutex
		var reqs []string
		do := func(ctx context.Context, r probe.Request) probe.Result {
			mu.Lock()
			if len(reqs) < 30 {
				reqs = append(reqs, fmt.Sprintf("%d|%s", r.MaxTokens, r.Prompt))
			}
			mu.Unlock()
			return probe.Result{Start: time.Now(), E2E: time.Millisecond, OutputTokens: 1, InputEstimated: true}
		}
		_, pl, _ := ParseLength("uniform:50-150", MaxPromptTokens)
		_, ol, _ := ParseLength("normal:64,16", MaxOutputTokens)
		eng, _ := New(Config{Do: do, Seed: seed, Knobs: Knobs{Concurrency: 1, PromptTokens: 100, OutputTokens: 64},
			PromptLength: pl, OutputLength: ol, MaxRequests: 30})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); eng.Run(ctx) }()
		waitFor(t, eng, 10*time.Second, "30 requests", func(s Snapshot) bool { return s.TotalCompleted == 30 })
		cancel()
		<-done
		return reqs
	}
	a, b, c := run(5), run(5), run(6)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatal("the same seed gave different requests")
	}
	if strings.Join(a, "\n") == strings.Join(c, "\n") {
		t.Fatal("different seeds gave the same requests")
	}
	lengths := map[string]bool{}
	for _, r := range a {
		lengths[strings.SplitN(r, "|", 2)[0]] = true
	}
	if len(lengths) < 5 {
		t.Fatalf("output lengths do not vary: %v", lengths)
	}
}
