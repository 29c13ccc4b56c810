package watch

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/engines"
)

// vllmTTFT are vLLM's TTFT bucket bounds.
var vllmTTFT = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560, math.Inf(1)}

// fine are bucket bounds 5 % apart, from 10 ms: a server built with
// buckets fine enough to resolve a 10 % margin.
func fine() []float64 {
	var out []float64
	for b := 0.01; b < 100; b *= 1.05 {
		out = append(out, b)
	}
	return append(out, math.Inf(1))
}

// fakeServer is a server whose counters grow by a seeded traffic each
// read: rate requests a read, TTFT lognormal around median seconds.
type fakeServer struct {
	t      Target
	rng    *rand.Rand
	median float64
	rate   int
	failP  float64
	r      engines.Reading
	err    error
}

func newFake(name, group string, median float64, seed uint64) *fakeServer {
	return newFakeOn(name, group, median, seed, vllmTTFT)
}

func newFakeOn(name, group string, median float64, seed uint64, bounds []float64) *fakeServer {
	f := &fakeServer{t: Target{Name: name, URL: "http://" + name + "/metrics", Group: group},
		rng: rand.New(rand.NewPCG(seed, 1)), median: median, rate: 20}
	f.r = engines.Reading{Engine: "vllm", TTFT: &engines.Histogram{Bounds: bounds, Counts: make([]float64, len(bounds))}}
	f.r.Requests.Has, f.r.Failed.Has, f.r.GenTokens.Has, f.r.Running.Has = true, true, true, true
	return f
}

// step adds one read's traffic.
func (f *fakeServer) step() {
	for range f.rate {
		v := f.median * math.Exp(0.5*f.rng.NormFloat64())
		for i, b := range f.r.TTFT.Bounds {
			if v <= b {
				f.r.TTFT.Counts[i]++
			}
		}
		f.r.TTFT.Sum += v
		f.r.Requests.V++
		f.r.GenTokens.V += 50
		if f.rng.Float64() < f.failP {
			f.r.Failed.V++
		}
	}
	f.r.Running.V = 4
}

// fakeSource reads its servers, each a step further on.
type fakeSource struct {
	mu      sync.Mutex
	servers []*fakeServer
}

func (s *fakeSource) String() string { return "fake fleet" }

func (s *fakeSource) Read(context.Context) ([]Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Observation
	for _, f := range s.servers {
		f.step()
		r := f.r
		h := *f.r.TTFT
		h.Counts = append([]float64(nil), h.Counts...)
		r.TTFT = &h
		out = append(out, Observation{Target: f.t, Reading: r, Err: f.err})
	}
	return out, nil
}

// fleetOf is two stable servers and two canaries, the canary's TTFT
// median slower by factor.
func fleetOf(factor float64, seed uint64) *fakeSource { return fleetOn(factor, seed, vllmTTFT) }

func fleetOn(factor float64, seed uint64, bounds []float64) *fakeSource {
	return &fakeSource{servers: []*fakeServer{
		newFakeOn("a", "stable", 0.2, seed, bounds), newFakeOn("b", "stable", 0.2, seed+1, bounds),
		newFakeOn("c", "canary", 0.2*factor, seed+2, bounds), newFakeOn("d", "canary", 0.2*factor, seed+3, bounds),
	}}
}

// follow runs a watch of src for reads reads on a virtual clock and
// calls see with every snapshot.
func follow(t *testing.T, cfg Config, reads int, see func(Snapshot) bool) Snapshot {
	t.Helper()
	var last Snapshot
	synctest.Test(t, func(t *testing.T) {
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		snaps, unsubscribe := w.Subscribe()
		defer unsubscribe()
		done := make(chan struct{})
		go func() { defer close(done); w.Run(ctx) }()
		n := 0
		for s := range snaps {
			last = s
			n++
			if see(s) || n >= reads {
				break
			}
		}
		cancel()
		<-done
	})
	return last
}

// TestVerdictCanarySlower: a canary 30 % slower at every quantile is
// called regressed on its TTFT p99, on the servers' own buckets, and
// says when; an identical canary is never called over ten minutes of
// reads.
func TestVerdictCanarySlower(t *testing.T) {
	t.Parallel()
	regs := DefaultRegressions()[:1] // ttft_p99<+10%
	s := follow(t, Config{Source: fleetOn(1.3, 1, fine()), Regressions: regs, Canary: "canary"}, 600, func(s Snapshot) bool {
		return s.Verdict.State == Regressed
	})
	if s.Verdict.State != Regressed {
		t.Fatalf("a 30%% slower canary was not called in 600 reads: %+v", s.Verdict)
	}
	j := s.Verdict.Regressions[0]
	if j.DecidedAfter <= 0 || j.Verdict != "worse beyond the margin" {
		t.Errorf("the regression says %q after %v s", j.Verdict, j.DecidedAfter)
	}
	t.Logf("called after %.0f reads: %s", s.Elapsed, s.Verdict.Line)

	for seed := uint64(10); seed < 13; seed++ {
		s = follow(t, Config{Source: fleetOn(1, seed, fine()), Regressions: regs, Canary: "canary"}, 600, func(s Snapshot) bool {
			return s.Verdict.State == Regressed
		})
		if s.Verdict.State == Regressed {
			t.Fatalf("seed %d: an identical canary was called: %s", seed, s.Verdict.Line)
		}
	}
}

// TestRestartAndLeave: a server whose counters fall has restarted (no
// negative rate); one that stops answering is down with its reason and
// one that is no longer listed gone, and the others' figures go on.
func TestRestartAndLeave(t *testing.T) {
	t.Parallel()
	src := fleetOf(1, 3)
	reads := 0
	s := follow(t, Config{Source: src, Canary: "canary"}, 40, func(s Snapshot) bool {
		reads++
		src.mu.Lock()
		defer src.mu.Unlock()
		switch reads {
		case 10: // a restarts: its counters start again from zero
			a := src.servers[0]
			a.r.Requests.V, a.r.GenTokens.V = 0, 0
			a.r.TTFT.Counts = make([]float64, len(vllmTTFT))
		case 15:
			src.servers[1].err = errors.New("not answering: connection refused")
		case 20:
			src.servers = src.servers[:3] // d leaves
		}
		return false
	})
	state := map[string]ServerOf{}
	for _, r := range s.Servers {
		state[r.Name] = r
		if r.ReqPer < 0 {
			t.Errorf("%s: a negative rate %v", r.Name, r.ReqPer)
		}
	}
	if state["a"].Restarts != 1 || state["a"].State != StateUp {
		t.Errorf("a: %+v, want one restart and up", state["a"])
	}
	if state["b"].State != StateDown || state["b"].Err == "" {
		t.Errorf("b: %+v, want down with its reason", state["b"])
	}
	if state["d"].State != StateGone {
		t.Errorf("d: %+v, want gone", state["d"])
	}
	if c := state["c"]; c.State != StateUp || c.ReqPer < 15 {
		t.Errorf("c, honest, lost its figures: %+v", c)
	}
	for _, g := range s.Groups {
		if g.Name == "canary" && (g.Servers != 1 || g.Up != 1) {
			t.Errorf("canary group %+v: want 1 of 1 up (d gone)", g)
		}
	}
}

// TestUnusable: with one group there is no verdict, and it says why.
func TestUnusable(t *testing.T) {
	t.Parallel()
	src := &fakeSource{servers: []*fakeServer{newFake("a", "stable", 0.2, 1), newFake("b", "stable", 0.2, 2)}}
	s := follow(t, Config{Source: src}, 3, func(Snapshot) bool { return false })
	if s.Verdict.State != Unusable || s.Verdict.Why == "" {
		t.Fatalf("verdict %+v, want unusable with a reason", s.Verdict)
	}
}

// TestErrorRate: a canary failing 5 % of its requests against 0 % is
// called on error_rate<+1pp.
func TestErrorRate(t *testing.T) {
	t.Parallel()
	src := fleetOf(1, 5)
	src.servers[2].failP, src.servers[3].failP = 0.05, 0.05
	r, err := compareRegression("error_rate<+1pp")
	if err != nil {
		t.Fatal(err)
	}
	s := follow(t, Config{Source: src, Regressions: r, Canary: "canary"}, 300, func(s Snapshot) bool { return s.Verdict.State == Regressed })
	if s.Verdict.State != Regressed {
		t.Fatalf("verdict %+v", s.Verdict)
	}
}

func compareRegression(exprs ...string) ([]compare.Regression, error) {
	return compare.ParseRegressions(exprs)
}

// TestCoarseBuckets: with vLLM's TTFT buckets a 30 % slower canary's
// p99 lies one bucket above the baseline's, (500ms, 750ms] against
// (750ms, 1s]: no count can show a 10 % margin exceeded there, and the
// verdict says so rather than call it.
func TestCoarseBuckets(t *testing.T) {
	t.Parallel()
	s := follow(t, Config{Source: fleetOf(1.3, 1), Regressions: DefaultRegressions()[:1], Canary: "canary"}, 300, func(Snapshot) bool { return false })
	j := s.Verdict.Regressions[0]
	if s.Verdict.State == Regressed || j.Verdict != "not resolvable with these buckets" {
		t.Fatalf("verdict %s, regression %q", s.Verdict.State, j.Verdict)
	}
	t.Log(s.Verdict.Line)
}

// TestStall: a server whose requests run with no token for StallAfter
// reads stalled, shown and counted as such, not as a quiet server.
func TestStall(t *testing.T) {
	t.Parallel()
	src := fleetOf(1, 4)
	reads := 0
	s := follow(t, Config{Source: src, Canary: "canary", StallAfter: 5 * time.Second}, 20, func(Snapshot) bool {
		reads++
		if reads == 8 {
			src.mu.Lock()
			src.servers[2].rate = 0 // c stops: its 4 requests run, no token comes
			src.mu.Unlock()
		}
		return false
	})
	for _, r := range s.Servers {
		if want := map[bool]string{true: StateStalled, false: StateUp}[r.Name == "c"]; r.State != want {
			t.Errorf("%s: %s, want %s", r.Name, r.State, want)
		}
	}
}

// TestRoles: with two groups and no role given, a name that says its
// role decides, whatever the sizes; else the smaller group is the
// canary, a tie by the alphabet; a role given wins.
func TestRoles(t *testing.T) {
	for _, c := range []struct {
		a, b         string
		na, nb       int
		base, canary string
		cfg          Config
	}{
		{"canary", "stable", 1, 1, "stable", "canary", Config{}},
		{"canary", "stable", 3, 1, "stable", "canary", Config{}},
		{"new", "v1", 1, 1, "v1", "new", Config{}},
		{"a", "prod", 1, 1, "prod", "a", Config{}},
		{"7c9f", "b24e", 3, 1, "7c9f", "b24e", Config{}},
		{"7c9f", "b24e", 2, 2, "7c9f", "b24e", Config{}},
		{"canary", "stable", 1, 1, "canary", "stable", Config{Canary: "stable"}},
	} {
		f := &fleetState{cfg: c.cfg}
		base, canary := f.roles(map[string]*Group{c.a: {Servers: c.na}, c.b: {Servers: c.nb}})
		if base != c.base || canary != c.canary {
			t.Errorf("%s (%d), %s (%d) %+v: baseline %q, canary %q; want %q, %q", c.a, c.na, c.b, c.nb, c.cfg, base, canary, c.base, c.canary)
		}
	}
}
