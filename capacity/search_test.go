package capacity

import (
	"context"
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/slo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is an engine against an in-process sim, paused at the start (as
// the headless search starts it), stopped by the test's cleanup.
type rig struct {
	eng   *load.Engine
	snaps <-chan load.Snapshot
}

func startRig(t *testing.T, preset string, k load.Knobs) *rig {
	t.Helper()
	p, err := sim.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.Start(t, p)
	client, err := probe.New(probe.Config{URL: srv.ChatURL, Model: p.Model, MaxConns: 1024})
	if err != nil {
		t.Fatal(err)
	}
	k.Paused = true
	eng, err := load.New(load.Config{Do: client.Do, Knobs: k, Tick: 100 * time.Millisecond, Seed: 1, Drain: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	snaps, unsub := eng.Subscribe()
	t.Cleanup(func() { unsub(); cancel(); <-done; client.Close(); srv.Close() })
	return &rig{eng: eng, snaps: snaps}
}

func mustParse(t *testing.T, exprs ...string) []slo.Objective {
	t.Helper()
	objs, err := slo.ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// shortHold is the tests' hold: a few seconds a step.
func shortHold() Hold {
	return Hold{Warmup: 500 * time.Millisecond, MinRequests: 30, MinTime: 2 * time.Second, MaxTime: 15 * time.Second, ClearMargin: 0.5}
}

func logSteps(t *testing.T, r Result) {
	t.Helper()
	for _, s := range r.Steps {
		t.Logf("step %2d %s %-6s %-5v %6.1f req/s %7.0f tok/s TTFT p50 %-10v p99 %-10v n=%d %s", s.N, r.Over, r.Over.Format(s.Load), s.Held,
			s.ReqPerSec, s.OutTokPerSec, s.TTFT.P50.Round(time.Millisecond), s.TTFT.P99.Round(time.Millisecond), s.Completed+s.Failed, s.Why)
	}
	t.Logf("found %v max %s in %v: %s", r.Found, r.Over.Format(r.MaxLoad), r.Elapsed.Round(time.Millisecond), r.Why)
}

// bruteKnee holds every concurrency in cs (ascending) for the same hold
// and returns the highest one after which... the highest at which the
// objectives held before the first that broke.
func bruteKnee(t *testing.T, r *rig, objs []slo.Objective, cs []float64, h Hold) float64 {
	t.Helper()
	knee := 0.0
	for _, c := range cs {
		res, err := Search{Objectives: objs, Hold: h}.Measure(context.Background(), r.eng, r.snaps, c)
		if err != nil {
			t.Fatal(err)
		}
		st := res.Steps[0]
		t.Logf("brute force: concurrency %.0f: TTFT p99 %v held %v (%s)", c, st.TTFT.P99.Round(time.Millisecond), st.Held, st.Why)
		if !st.Held {
			break
		}
		knee = c
	}
	return knee
}

// TestSmallKnee: against --preset small (8 slots), the concurrency found
// for ttft_p99<=500ms at prompt 256, output 128 lies within 15 % of the
// knee a brute-force sweep of the same sim finds.
func TestSmallKnee(t *testing.T) {
	objs := mustParse(t, "ttft_p99<=500ms")
	r := startRig(t, "small", load.Knobs{Concurrency: 1, PromptTokens: 256, OutputTokens: 128})
	res, err := Search{Objectives: objs, Hold: shortHold(), From: 2}.Run(context.Background(), r.eng, r.snaps)
	logSteps(t, res)
	if err != nil {
		t.Fatal(err)
	}
	knee := bruteKnee(t, r, objs, []float64{7, 8, 9, 10, 11, 12}, shortHold())
	if !res.Found || math.Abs(res.MaxLoad-knee) > 0.15*knee+1e-9 && math.Abs(res.MaxLoad-knee) > 1 {
		t.Fatalf("found %v (%v), the brute-force knee is %v", res.MaxLoad, res.Found, knee)
	}
}

func TestRunNeedsObjectives(t *testing.T) {
	_, err := Search{}.Run(context.Background(), nil, nil)
	if err == nil {
		t.Fatal("a search without objectives ran")
	}
	if err := (Search{Objectives: mustParse(t, "ttft_p99<=1s"), From: 10, To: 5}).Check(); err == nil {
		t.Fatal("an empty range was accepted")
	}
}
