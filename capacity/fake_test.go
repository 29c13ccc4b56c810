package capacity

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// fake is an engine on a virtual clock: every snapshot advances it by a
// tick, each phase completes requests at a rate and with a TTFT that are
// functions of its load, so the search's walk is tested in milliseconds
// and exactly.
type fake struct {
	mu       sync.Mutex
	phases   []load.Phase
	now      time.Duration
	ending   chan struct{}
	ttft     func(l float64) time.Duration
	rate     func(l float64) float64 // completions per second
	loadOf   func(k load.Knobs) float64
	intruder int // at this call of NewPhase, a phase of someone else's follows (0: never)
	calls    int
	// queued, when set, is the TTFT of the requests a phase started that
	// come back last (a closed loop's queued ones), a tenth of them: they
	// are in flight while the phase is current and back 500 ms after it
	// ends, when they join its distribution as its slowest tenth.
	queued func(l float64) time.Duration
	// lost keeps the queued requests in flight for ever (a server that
	// never answers them); draining, when set, is the in flight a paused
	// phase reports (a queue that never drains).
	lost     bool
	draining int
}

func newFake(t *testing.T, knee float64) (*fake, <-chan load.Snapshot) {
	f := &fake{
		ending: make(chan struct{}),
		ttft: func(l float64) time.Duration {
			if l <= knee {
				return 100 * time.Millisecond
			}
			return time.Duration(100+200*(l-knee)) * time.Millisecond
		},
		rate:   func(l float64) float64 { return 10 * max(min(l, knee), 1) },
		loadOf: func(k load.Knobs) float64 { return float64(k.Concurrency) },
	}
	ch := make(chan load.Snapshot)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			s := f.tick()
			select {
			case ch <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f, ch
}

func (f *fake) Ending() <-chan struct{} { return f.ending }

func (f *fake) NewPhase(fn func(*load.Knobs)) (load.Knobs, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var k load.Knobs
	if n := len(f.phases); n > 0 {
		k = f.phases[n-1].Knobs
		f.phases[n-1].Current, f.phases[n-1].End = false, f.now
	}
	fn(&k)
	f.calls++
	f.phases = append(f.phases, load.Phase{ID: len(f.phases) + 1, Knobs: k, Start: f.now, Current: true})
	id := len(f.phases)
	if f.calls == f.intruder {
		f.phases[id-1].Current = false
		f.phases = append(f.phases, load.Phase{ID: id + 1, Knobs: k, Start: f.now, Current: true})
	}
	return k, id
}

// tick advances the clock by 100 ms and returns the snapshot then.
func (f *fake) tick() load.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += 100 * time.Millisecond
	s := load.Snapshot{Elapsed: f.now}
	if n := len(f.phases); n > 1 && f.queued != nil {
		if p := &f.phases[n-2]; p.Pending > 0 && f.now-p.End >= 500*time.Millisecond && !f.lost {
			q := f.queued(f.loadOf(p.Knobs))
			p.Completed += p.Pending
			p.Pending = 0
			p.Latency[load.TTFT].P95, p.Latency[load.TTFT].P99, p.Latency[load.TTFT].Count = q, q, p.Completed
		}
	}
	if n := len(f.phases); n > 0 {
		p := &f.phases[n-1]
		l := f.loadOf(p.Knobs)
		p.Completed = int64(f.rate(l) * (f.now - p.Start).Seconds())
		d := f.ttft(l)
		p.Latency[load.TTFT] = load.Dist{Count: p.Completed, P50: d, P90: d, P95: d, P99: d, P999: d, Max: d, Mean: d}
		p.OutTokens = p.Completed * 100
		p.Good = p.Completed
		if f.queued != nil && f.queued(l) > d {
			p.Pending = max(p.Completed/9, 1)
		}
		s.Knobs = p.Knobs
		if p.Knobs.Paused {
			s.InFlight = f.draining
		} else if p.Knobs.Mode == load.OpenLoop && f.rate(l) < p.Knobs.Rate {
			s.Backlog = 1 // arrivals past what it carries wait
		}
		for sec := int64(0); time.Duration(sec+1)*time.Second <= f.now; sec++ {
			s.Series = append(s.Series, load.Point{Sec: sec, Completed: int64(f.rate(l)), TTFTP50: d})
		}
	}
	for _, p := range f.phases {
		s.TotalCompleted += p.Completed
		if p.Knobs.Mode == load.OpenLoop {
			end := p.End
			if p.Current {
				end = f.now
			}
			s.Scheduled += int64(p.Knobs.Rate * (end - p.Start).Seconds())
		}
	}
	s.Phases = append([]load.Phase(nil), f.phases...)
	return s
}

func fakeHold() Hold {
	return Hold{Warmup: time.Second, MinRequests: 20, MinTime: 2 * time.Second, MaxTime: 10 * time.Second, ClearMargin: 0.5}
}

// TestSearchWalksUpThenBisects: the knee at 37 is found to the
// resolution, every step kept, the knee step marked.
func TestSearchWalksUpThenBisects(t *testing.T) {
	f, snaps := newFake(t, 37)
	var progress []Progress
	var told []Step
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), Resolution: 0.01,
		Progress: func(p Progress) { progress = append(progress, p) },
		OnStep:   func(s Step) { told = append(told, s) }}.Run(context.Background(), f, snaps)
	if err != nil {
		t.Fatal(err)
	}
	logSteps(t, res)
	// 1, 2, 4, … 64 (breaks), then 48, 40 (break), 36, 38, 39 (hold):
	// the TTFT at 39 is 500 ms, at 40 700 ms.
	if !res.Found || res.MaxLoad != 39 {
		t.Fatalf("found %v at %v, want 39", res.Found, res.MaxLoad)
	}
	if at := res.At(); at == nil || at.Load != 39 || !at.Held {
		t.Fatalf("the knee step is %+v", at)
	}
	var loads []float64
	for _, s := range res.Steps {
		loads = append(loads, s.Load)
		if s.Phase != s.WarmupPhase+1 {
			t.Errorf("step %d: warm-up phase %d, measured %d", s.N, s.WarmupPhase, s.Phase)
		}
	}
	want := []float64{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 39}
	if len(loads) != len(want) {
		t.Fatalf("steps at %v, want %v", loads, want)
	}
	for i := range want {
		if loads[i] != want[i] {
			t.Fatalf("steps at %v, want %v", loads, want)
		}
	}
	if len(progress) == 0 || progress[len(progress)-1].State != StateHeld {
		t.Fatalf("progress ends %+v", progress[len(progress)-1])
	}
	// OnStep tells each step as it is judged, the same as the result's.
	if len(told) != len(res.Steps) {
		t.Fatalf("OnStep told %d steps, the result has %d", len(told), len(res.Steps))
	}
	for i := range told {
		if told[i].N != res.Steps[i].N || told[i].Load != res.Steps[i].Load || told[i].Held != res.Steps[i].Held {
			t.Fatalf("OnStep's step %d is %+v, the result's %+v", i, told[i], res.Steps[i])
		}
	}
}

// TestSettleCountsTheLastBack: a step whose first requests back are quick
// while a tenth of them queued is judged on all of them once they are
// back, not held on the quick ones: past the knee at 20, where the queued
// requests wait 900 ms, the search finds 20, though every step's first
// completions have the same 100 ms TTFT.
func TestSettleCountsTheLastBack(t *testing.T) {
	f, snaps := newFake(t, 1000) // the first back: 100 ms at every load
	f.queued = func(l float64) time.Duration {
		if l > 20 {
			return 900 * time.Millisecond
		}
		return 150 * time.Millisecond
	}
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold()}.Run(context.Background(), f, snaps)
	if err != nil {
		t.Fatal(err)
	}
	logSteps(t, res)
	if !res.Found || res.MaxLoad != 20 {
		t.Fatalf("found %v at %v, want 20", res.Found, res.MaxLoad)
	}
	for _, s := range res.Steps {
		if s.TailPhase != s.Phase+1 {
			t.Errorf("step %d: measured phase %d, tail %d", s.N, s.Phase, s.TailPhase)
		}
		if s.Load > 20 && (s.Held || !strings.HasPrefix(s.Why, "breached")) {
			t.Errorf("step %d at %v: held %v (%s)", s.N, s.Load, s.Held, s.Why)
		}
	}
}

// TestSettleLost: requests that never come back, past the tail's time,
// are the step's slowest: it is not held on the others, and its counts
// say how many were left in flight.
func TestSettleLost(t *testing.T) {
	f, snaps := newFake(t, 1000)
	f.queued = func(float64) time.Duration { return 900 * time.Millisecond }
	f.lost = true
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), To: 1}.Run(context.Background(), f, snaps)
	if err != nil {
		t.Fatal(err)
	}
	logSteps(t, res)
	s := res.Steps[0]
	if s.Held || s.Pending == 0 || !strings.Contains(s.Why, "still in flight") {
		t.Fatalf("a step with requests lost: held %v, pending %d (%s)", s.Held, s.Pending, s.Why)
	}
}

// TestRunEndsInTail: a run that ends while a step's tail waits keeps the
// step, judged on what came back, and the search stops with ErrRunEnded.
func TestRunEndsInTail(t *testing.T) {
	f, snaps := newFake(t, 1000)
	f.queued = func(float64) time.Duration { return 900 * time.Millisecond }
	f.lost = true
	ended := false
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), Progress: func(p Progress) {
		if p.State == StateSettling && !ended {
			ended = true
			close(f.ending)
		}
	}}.Run(context.Background(), f, snaps)
	if !errors.Is(err, ErrRunEnded) || len(res.Steps) != 1 || res.Steps[0].Why == "" {
		t.Fatalf("ended in the tail: %v, steps %+v", err, res.Steps)
	}
}

// TestDrainStoppedRestores: a search stopped while it drains the queue an
// open-loop step left leaves the load as that step had it, not paused.
func TestDrainStoppedRestores(t *testing.T) {
	f, snaps := newFake(t, 1000)
	f.loadOf = func(k load.Knobs) float64 { return k.Rate }
	f.rate = func(l float64) float64 { return min(l, 30) }
	f.draining = 50 // the queue never drains
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Over: Rate, From: 80, Hold: fakeHold(),
		Progress: func(p Progress) {
			if p.State == StateDraining {
				cancel()
			}
		}}.Run(ctx, f, snaps)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped mid-drain: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.phases[len(f.phases)-1].Knobs
	if k.Paused || k.Mode != load.OpenLoop || k.Rate != 80 {
		t.Fatalf("the load after a search stopped mid-drain: %+v", k)
	}
}

// TestMatrixCellDrains: a matrix cell that ends on a saturated open loop
// leaves a backlog; the next cell's first step drains it first.
func TestMatrixCellDrains(t *testing.T) {
	f, snaps := newFake(t, 1000)
	f.loadOf = func(k load.Knobs) float64 { return k.Rate }
	f.rate = func(l float64) float64 { return min(l, 30) }
	m, _ := ParseMatrix("prompt=10;output=100,200", load.Knobs{})
	// Each cell held at 100 req/s, where 30 are carried: the first starts
	// on an idle engine, the second on the first's backlog.
	out, err := m.Run(context.Background(), f, snaps, Search{Over: Rate, Hold: fakeHold()}, 100)
	if err != nil || len(out.Cells) != 2 {
		t.Fatalf("%v %+v", err, out)
	}
	for i, c := range out.Cells {
		if st := c.Result.Steps[0]; (i == 1) != (st.DrainPhase > 0) {
			t.Errorf("cell %d's first step: drain phase %d", i+1, st.DrainPhase)
		}
	}
}

// TestOpenLoopFallsBehind: an open loop whose completions fall short of
// its rate is over-saturated when its hold ends, though its TTFT still
// held; the next step starts by draining the queue (a paused phase).
func TestOpenLoopFallsBehind(t *testing.T) {
	f, snaps := newFake(t, 1000)
	f.loadOf = func(k load.Knobs) float64 { return k.Rate }
	f.rate = func(l float64) float64 { return min(l, 30) } // carries 30 req/s
	f.ttft = func(float64) time.Duration { return 100 * time.Millisecond }
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Over: Rate, From: 10, Resolution: 0.1, Hold: fakeHold()}.Run(context.Background(), f, snaps)
	if err != nil {
		t.Fatal(err)
	}
	logSteps(t, res)
	// The rule allows a queue growing by a tenth of the arrivals: 33.
	if !res.Found || res.MaxLoad < 27 || res.MaxLoad > 33 {
		t.Fatalf("found %v at %v, want 27 to 33", res.Found, res.MaxLoad)
	}
	drained := 0
	for i, s := range res.Steps {
		if s.Load > 33 && (s.Held || !s.Saturated) {
			t.Errorf("step %d at %v: held %v (%s)", s.N, s.Load, s.Held, s.Why)
		}
		if i > 0 && res.Steps[i-1].Saturated {
			if s.DrainPhase != s.WarmupPhase-1 {
				t.Errorf("step %d after an over-saturated one: drain phase %d, warm-up %d", s.N, s.DrainPhase, s.WarmupPhase)
			} else if ph := f.phases[s.DrainPhase-1]; !ph.Knobs.Paused {
				t.Errorf("step %d after an over-saturated one: phase %d before its warm-up is not a pause: %+v", s.N, ph.ID, ph.Knobs)
			}
			drained++
		}
	}
	if drained == 0 {
		t.Error("no step came after an over-saturated one")
	}
}

// TestSearchWalksDown: a search starting above the knee walks down.
func TestSearchWalksDown(t *testing.T) {
	f, snaps := newFake(t, 10)
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), From: 100}.Run(context.Background(), f, snaps)
	if err != nil {
		t.Fatal(err)
	}
	logSteps(t, res)
	if !res.Found || res.MaxLoad < 11 || res.MaxLoad > 12 || res.Steps[0].Held || res.Steps[1].Load != 50 {
		t.Fatalf("found %v at %v", res.Found, res.MaxLoad)
	}
}

// TestSearchTopAndBottom: the top of the range holding, and even the
// lowest load breaking.
func TestSearchTopAndBottom(t *testing.T) {
	f, snaps := newFake(t, 1000)
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), From: 4, To: 20}.Run(context.Background(), f, snaps)
	if err != nil || !res.Found || res.MaxLoad != 20 || res.Bad != 0 {
		t.Fatalf("top: %v %+v", err, res)
	}
	f2, snaps2 := newFake(t, 0)
	res, err = Search{Objectives: mustParse(t, "ttft_p99<=200ms"), Hold: fakeHold(), From: 4}.Run(context.Background(), f2, snaps2)
	logSteps(t, res)
	if err != nil || res.Found || res.Knee != -1 || len(res.Steps) != 3 { // 4, 2, 1
		t.Fatalf("bottom: %v %+v", err, res)
	}
}

// TestSearchStops: a cancelled context and a person at the knobs end the
// search with what it has.
func TestSearchStops(t *testing.T) {
	f, snaps := newFake(t, 37)
	ctx, cancel := context.WithCancelCause(context.Background())
	n := 0
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), Progress: func(p Progress) {
		if p.Step == 3 && n == 0 {
			n++
			cancel(ErrTakenOver)
		}
	}}.Run(ctx, f, snaps)
	if !errors.Is(err, ErrTakenOver) || len(res.Steps) != 2 || res.MaxLoad != 2 {
		t.Fatalf("cancelled: %v, %d steps, max %v", err, len(res.Steps), res.MaxLoad)
	}
	f2, snaps2 := newFake(t, 37)
	f2.intruder = 7 // step 3's warm-up (each step: warm-up, measured, tail)
	res, err = Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold()}.Run(context.Background(), f2, snaps2)
	if !errors.Is(err, ErrTakenOver) || len(res.Steps) != 2 {
		t.Fatalf("taken over: %v, %d steps", err, len(res.Steps))
	}
}

// TestSaturated: an open loop whose in-flight requests pile up while
// completions stall is over-saturated; a steady one is not.
func TestSaturated(t *testing.T) {
	h := fakeHold()
	var growing, steady []sample
	for i := range 60 {
		at := time.Duration(i) * 100 * time.Millisecond
		growing = append(growing, sample{at, 10 + 3*i})
		steady = append(steady, sample{at, 10 + i%3})
	}
	snap := load.Snapshot{Elapsed: 6 * time.Second}
	st := &Step{Knobs: load.Knobs{Mode: load.OpenLoop, Rate: 50}, ReqPerSec: 30}
	if _, ok := saturated(st, snap, 6*time.Second, growing, h); !ok {
		t.Error("a growing queue at 30 of 50 req/s is not over-saturated")
	}
	if _, ok := saturated(st, snap, 6*time.Second, steady, h); ok {
		t.Error("a steady queue is over-saturated")
	}
	st.ReqPerSec = 49
	if _, ok := saturated(st, snap, 6*time.Second, growing, h); ok {
		t.Error("a load carried in full is over-saturated")
	}
	st.Knobs.Mode = load.ClosedLoop
	if _, ok := saturated(st, snap, 6*time.Second, growing, h); ok {
		t.Error("a closed loop is over-saturated")
	}
}

// TestMatrixParse reads the lists and refuses bad ones.
func TestMatrixParse(t *testing.T) {
	m, err := ParseMatrix("prompt=64,256,1024;output=128,256,512", load.Knobs{})
	if err != nil || len(m.Prompts) != 3 || len(m.Outputs) != 3 || m.Cells() != 9 || m.Outputs[2] != 512 {
		t.Fatalf("%v %+v", err, m)
	}
	m, err = ParseMatrix("output=16", load.Knobs{PromptTokens: 100})
	if err != nil || m.Prompts[0] != 100 || m.Outputs[0] != 16 {
		t.Fatalf("%v %+v", err, m)
	}
	for _, bad := range []string{"", "prompt", "prompt=0", "size=1", "prompt=1;prompt=2", "output=x"} {
		if _, err := ParseMatrix(bad, load.Knobs{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestMatrixRun runs a search per cell, each at its lengths.
func TestMatrixRun(t *testing.T) {
	f, snaps := newFake(t, 0)
	f.loadOf = func(k load.Knobs) float64 { return float64(k.Concurrency) * float64(k.OutputTokens) / 100 }
	f.ttft = func(l float64) time.Duration { return time.Duration(l) * 10 * time.Millisecond }
	f.rate = func(l float64) float64 { return 20 }
	m, _ := ParseMatrix("prompt=10;output=100,200", load.Knobs{})
	out, err := m.Run(context.Background(), f, snaps, Search{Objectives: mustParse(t, "ttft_p99<=320ms"), Hold: fakeHold()}, 0)
	if err != nil || len(out.Cells) != 2 || !out.Found() {
		t.Fatalf("%v %+v", err, out)
	}
	if a, b := out.Cells[0].Result.MaxLoad, out.Cells[1].Result.MaxLoad; a != 32 || b != 16 {
		t.Fatalf("cells found %v and %v, want 32 and 16", a, b)
	}
	if k := out.Cells[1].Result.Steps[0].Knobs; k.PromptTokens != 10 || k.OutputTokens != 200 {
		t.Fatalf("cell 2 ran at %+v", k)
	}
	fixed, err := m.Run(context.Background(), f, snaps, Search{Hold: fakeHold()}, 8)
	if err != nil || len(fixed.Cells) != 2 || !fixed.Cells[1].Result.Fixed || fixed.Cells[1].Result.Steps[0].Load != 8 {
		t.Fatalf("fixed: %v %+v", err, fixed)
	}
}

// sharedFake is the fake split between agents (capacity.Shared): ready
// when the test says, no load below least.
type sharedFake struct {
	*fake
	ready chan struct{}
	least float64
}

func (s *sharedFake) Ready() <-chan struct{} { return s.ready }

func (s *sharedFake) Least(Over) float64 { return s.least }

// Knobs are the newest phase's.
func (s *sharedFake) Knobs() load.Knobs {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.phases); n > 0 {
		return s.phases[n-1].Knobs
	}
	return load.Knobs{}
}

// TestSearchOverShares: a search over a load split between agents waits
// for it to be ready (no phase started before) and starts at its least
// (one request in flight each: 4 over four agents, not 1); an engine
// that ends before it is ready ends the search with ErrRunEnded and no
// step.
func TestSearchOverShares(t *testing.T) {
	f, snaps := newFake(t, 37)
	sh := &sharedFake{fake: f, ready: make(chan struct{}), least: 4}
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), Resolution: 0.01}.Run(context.Background(), sh, snaps)
		done <- out{res, err}
	}()
	// The search takes no step while the load is not ready: the fake's
	// clock runs on, and no phase begins.
	for range 5 {
		<-snaps
	}
	f.mu.Lock()
	started := len(f.phases)
	f.mu.Unlock()
	if started != 0 {
		t.Fatalf("%d phases started before the load was ready", started)
	}
	close(sh.ready)
	o := <-done
	if o.err != nil || !o.res.Found || o.res.MaxLoad != 39 || o.res.Steps[0].Load != 4 {
		t.Fatalf("found %v at %v, first step at %v: %v", o.res.Found, o.res.MaxLoad, o.res.Steps[0].Load, o.err)
	}
	// Ended before it was ready: no step.
	g, gsnaps := newFake(t, 37)
	close(g.ending)
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold()}.Run(context.Background(), &sharedFake{fake: g, ready: make(chan struct{})}, gsnaps)
	if !errors.Is(err, ErrRunEnded) || len(res.Steps) != 0 {
		t.Fatalf("ended before ready: %v, %d steps", err, len(res.Steps))
	}
}
