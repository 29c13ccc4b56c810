package capacity

import (
	"context"
	"math"
	"os"
	"sync"
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

// bruteKnee holds every concurrency in cs (ascending) in turn with the
// same hold, no search: the highest that held before the first that
// broke.
func bruteKnee(t *testing.T, r *rig, objs []slo.Objective, cs []float64, h Hold) (float64, error) {
	knee := 0.0
	for _, c := range cs {
		res, err := Search{Objectives: objs, Hold: h}.Measure(context.Background(), r.eng, r.snaps, c)
		if err != nil {
			return 0, err
		}
		st := res.Steps[0]
		t.Logf("brute force: concurrency %.0f: TTFT p99 %v held %v (%s)", c, st.TTFT.P99.Round(time.Millisecond), st.Held, st.Why)
		if !st.Held {
			break
		}
		knee = c
	}
	return knee, nil
}

// TestKnees holds searches against the sims to brute-force sweeps of the
// same sims, all at once (two at a time). Against the default sim (32 sequence slots)
// and --preset small (8), at prompt 256, output 128, the concurrency
// found for ttft_p99<=500ms lies within 15 % of the sweep's knee; two
// searches with the same seed end within one step of each other and one
// starting above the knee walks down to it (short answers, for speed);
// an open loop past the endpoint's capacity is over-saturated.
func TestKnees(t *testing.T) {
	if testing.Short() || os.Getenv("INFERTOP_SLOW") == "" {
		t.Skip("a minute of searches against the sim: the slow stage (make test-slow)")
	}
	objs := mustParse(t, "ttft_p99<=500ms")
	lengths := load.Knobs{Concurrency: 1, PromptTokens: 256, OutputTokens: 128}
	type job struct {
		name string
		rig  *rig
		run  func(*rig) (float64, Result, error)
	}
	search := func(s Search) func(*rig) (float64, Result, error) {
		return func(r *rig) (float64, Result, error) {
			res, err := s.Run(context.Background(), r.eng, r.snaps)
			return res.MaxLoad, res, err
		}
	}
	brute := func(cs ...float64) func(*rig) (float64, Result, error) {
		return func(r *rig) (float64, Result, error) {
			k, err := bruteKnee(t, r, objs, cs, shortHold())
			return k, Result{}, err
		}
	}
	rateObjs := mustParse(t, "ttft_p99<=1s")
	// Short answers against the small sim, for the checks of the walk
	// rather than of the knee: seconds a search.
	short := load.Knobs{Concurrency: 1, PromptTokens: 64, OutputTokens: 8}
	shortObjs := mustParse(t, "ttft_p99<=150ms")
	jobs := []job{
		{"default search", startRig(t, "default", lengths), search(Search{Objectives: objs, Hold: shortHold()})},
		{"default sweep", startRig(t, "default", lengths), brute(16, 24, 28, 30, 31, 32, 33, 34)},
		{"small search", startRig(t, "small", lengths), search(Search{Objectives: objs, Hold: shortHold(), From: 2})},
		{"small sweep", startRig(t, "small", lengths), brute(7, 8, 9, 10)},
		{"short search", startRig(t, "small", short), search(Search{Objectives: shortObjs, Hold: shortHold(), From: 2})},
		{"short search again", startRig(t, "small", short), search(Search{Objectives: shortObjs, Hold: shortHold(), From: 2})},
		{"short from above", startRig(t, "small", short), search(Search{Objectives: shortObjs, Hold: shortHold(), From: 40})},
		{"small over the rate", startRig(t, "small", load.Knobs{PromptTokens: 64, OutputTokens: 16, Mode: load.OpenLoop, Rate: 8}),
			search(Search{Objectives: rateObjs, Over: Rate, From: 8, Resolution: 0.1, Hold: shortHold()})},
	}
	found := make([]float64, len(jobs))
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	// Two at a time: more starve two cores under the race detector, and
	// the latencies with them.
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			found[i], results[i], errs[i] = j.run(j.rig)
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		t.Logf("%s: %v", j.name, found[i])
		if len(results[i].Steps) > 0 {
			logSteps(t, results[i])
		}
		if errs[i] != nil {
			t.Fatalf("%s: %v", j.name, errs[i])
		}
	}
	within := func(name string, got, knee float64) {
		if knee == 0 || math.Abs(got-knee) > 0.15*knee {
			t.Errorf("%s: found %v, the sweep's knee is %v: off by more than 15%%", name, got, knee)
		}
	}
	within("default", found[0], found[1])
	within("small", found[2], found[3])
	within("short from above", found[6], found[4])
	if a, b := found[4], found[5]; math.Abs(a-b) > 1 {
		t.Errorf("two searches with the same seed found %v and %v", a, b)
	}
	if r := results[6]; r.Steps[0].Held || r.Steps[1].Load >= r.Steps[0].Load {
		t.Errorf("the search from above did not walk down: %v then %v", r.Steps[0].Load, r.Steps[1].Load)
	}
	rate := results[7]
	saturated := false
	for _, s := range rate.Steps {
		saturated = saturated || s.Saturated
	}
	if !rate.Found || !saturated {
		t.Errorf("over the rate: found %v at %v, a step over-saturated: %v", rate.Found, rate.MaxLoad, saturated)
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
