package load

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

// fakeDo answers after d, or never (d < 0) until its context ends.
func fakeDo(d time.Duration) func(context.Context, probe.Request) probe.Result {
	return func(ctx context.Context, r probe.Request) probe.Result {
		if d < 0 {
			<-ctx.Done()
			return probe.Result{Class: probe.Canceled}
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return probe.Result{Class: probe.OK, HasTTFT: true, TTFT: d / 2, E2E: d, OutputTokens: 4, InputTokens: 8}
		case <-ctx.Done():
			return probe.Result{Class: probe.Canceled}
		}
	}
}

// runFor runs an engine with cfg (a tick of 20 ms unless it has one) until
// its run is done, or fails after within.
func runFor(t *testing.T, cfg Config, within time.Duration) Snapshot {
	t.Helper()
	if cfg.Tick == 0 {
		cfg.Tick = 20 * time.Millisecond
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	return waitFor(t, e, within, "done", func(s Snapshot) bool { return s.Done })
}

// TestLimitsEndTheRun: each limit ends the run, and what was in flight is
// counted; in synctest bubbles, so that the durations are virtual time.
func TestLimitsEndTheRun(t *testing.T) {
	k := Knobs{Concurrency: 4, PromptTokens: 8, OutputTokens: 4}
	t.Run("requests", virtual(func(t *testing.T) {
		s := runFor(t, Config{Do: fakeDo(5 * time.Millisecond), Knobs: k, MaxRequests: 40}, 10*time.Second)
		if s.DoneWhy != EndRequests || s.TotalCompleted != 40 || s.Incomplete != 0 || s.InFlight != 0 {
			t.Fatalf("why %q, completed %d, incomplete %d, in flight %d; want %q, 40, 0, 0", s.DoneWhy, s.TotalCompleted, s.Incomplete, s.InFlight, EndRequests)
		}
	}))
	t.Run("duration stops the clock", virtual(func(t *testing.T) {
		cfg := Config{Do: fakeDo(5 * time.Millisecond), Knobs: k, Duration: 300 * time.Millisecond}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); e.Run(ctx) }()
		defer func() { cancel(); <-ran }()
		s := waitFor(t, e, 10*time.Second, "done", func(s Snapshot) bool { return s.Done })
		if s.DoneWhy != EndDuration || s.Elapsed < 300*time.Millisecond || s.Elapsed > 2*time.Second {
			t.Fatalf("why %q at %v", s.DoneWhy, s.Elapsed)
		}
		time.Sleep(200 * time.Millisecond)
		e.Update(func(k *Knobs) { k.Concurrency = 8 }) // a knob after the end starts nothing
		later := waitFor(t, e, 10*time.Second, "a later snapshot", func(l Snapshot) bool { return l.Seq > s.Seq+5 })
		if later.Elapsed != s.Elapsed || later.TotalCompleted != s.TotalCompleted || later.Run.Duration != s.Run.Duration {
			t.Fatalf("after done: elapsed %v completed %d span %v; at done %v %d %v", later.Elapsed, later.TotalCompleted, later.Run.Duration, s.Elapsed, s.TotalCompleted, s.Run.Duration)
		}
	}))
	t.Run("nothing starts at the duration", virtual(func(t *testing.T) {
		open := k
		open.Mode, open.Rate = OpenLoop, 200
		do, last := lastSend(5 * time.Millisecond)
		// A run loop that falls behind, as on a starved machine: each
		// result takes it 20 ms (OnResult runs on it), four times the open
		// loop's gap, so its timer's turn comes late; the dispatcher goes
		// on meanwhile, and must stop at the duration by itself.
		cfg := Config{Knobs: open, Duration: 300 * time.Millisecond, Do: do,
			OnResult: func(Record) { time.Sleep(20 * time.Millisecond) }}
		s := runFor(t, cfg, 10*time.Minute)
		t.Logf("the last request sent at %v of %v; %d completed", last(), cfg.Duration, s.TotalCompleted)
		if s.DoneWhy != EndDuration || last() >= cfg.Duration || s.TotalCompleted == 0 {
			t.Fatalf("why %q, the last request sent at %v of %v, completed %d", s.DoneWhy, last(), cfg.Duration, s.TotalCompleted)
		}
	}))
	t.Run("nothing starts from the backlog at the duration", virtual(func(t *testing.T) {
		// The review's case: one slot (--max-in-flight 1) and 700 ms
		// requests at 2/s, so arrivals wait in the backlog, and a Run loop
		// 800 ms a result behind: the slot's next request from the
		// backlog went out at 1.4 s in a run of 1.2 s.
		open := Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 4, Mode: OpenLoop, Rate: 2}
		do, last := lastSend(700 * time.Millisecond)
		cfg := Config{Knobs: open, Duration: 1200 * time.Millisecond, MaxInFlight: 1, Do: do,
			OnResult: func(Record) { time.Sleep(800 * time.Millisecond) }}
		s := runFor(t, cfg, 10*time.Minute)
		if last() >= cfg.Duration {
			t.Errorf("a request sent at %v, past the duration %v", last(), cfg.Duration)
		}
		if s.Scheduled != s.Run.Sent()+s.Dropped {
			t.Errorf("scheduled %d != %d sent + %d dropped", s.Scheduled, s.Run.Sent(), s.Dropped)
		}
	}))
	t.Run("drain runs out", virtual(func(t *testing.T) {
		s := runFor(t, Config{Do: fakeDo(-1), Knobs: k, Duration: 100 * time.Millisecond, Drain: 100 * time.Millisecond}, 10*time.Second)
		if s.Incomplete != 4 || s.TotalCompleted+s.TotalFailed != 0 || s.InFlight != 0 {
			t.Fatalf("incomplete %d, finished %d, in flight %d; want 4, 0, 0", s.Incomplete, s.TotalCompleted+s.TotalFailed, s.InFlight)
		}
		if s.Run.Incomplete != 4 || s.Run.Sent() != 4 || s.Run.Pending != 0 {
			t.Fatalf("run: incomplete %d, sent %d, pending %d", s.Run.Incomplete, s.Run.Sent(), s.Run.Pending)
		}
	}))
	t.Run("open loop", virtual(func(t *testing.T) {
		ok := k
		ok.Mode, ok.Rate = OpenLoop, 200
		s := runFor(t, Config{Do: fakeDo(5 * time.Millisecond), Knobs: ok, MaxRequests: 30}, 10*time.Second)
		if s.TotalCompleted != 30 || s.DoneWhy != EndRequests || s.Scheduled != 30 || s.Run.Sent() != 30 {
			t.Fatalf("completed %d why %q scheduled %d sent %d", s.TotalCompleted, s.DoneWhy, s.Scheduled, s.Run.Sent())
		}
	}))
	t.Run("backlog dropped at the end", virtual(func(t *testing.T) {
		ok := k
		ok.Mode, ok.Rate = OpenLoop, 400
		s := runFor(t, Config{Do: fakeDo(50 * time.Millisecond), Knobs: ok, MaxInFlight: 2, Duration: 300 * time.Millisecond}, 10*time.Second)
		if s.Scheduled <= s.Run.Sent() || s.Run.Sent() != s.Run.Completed+s.Run.Failed+s.Run.Incomplete {
			t.Fatalf("scheduled %d, sent %d = %d + %d + %d", s.Scheduled, s.Run.Sent(), s.Run.Completed, s.Run.Failed, s.Run.Incomplete)
		}
	}))
	t.Run("stages", virtual(func(t *testing.T) {
		st := []Stage{{Concurrency: 2, Duration: 100 * time.Millisecond}, {Concurrency: 3, Duration: 100 * time.Millisecond}}
		s := runFor(t, Config{Do: fakeDo(5 * time.Millisecond), Knobs: k, Stages: st, EndAfterStages: true}, 10*time.Second)
		if s.DoneWhy != EndStages || len(s.Phases) != 2 {
			t.Fatalf("why %q, %d phases", s.DoneWhy, len(s.Phases))
		}
	}))
}

func TestDefaultMaxInFlight(t *testing.T) {
	for fd, want := range map[uint64]int{0: 64, 256: 64, 1024: 576, 1 << 20: 4096} {
		if got := DefaultMaxInFlight(fd); got != want {
			t.Errorf("DefaultMaxInFlight(%d) = %d, want %d", fd, got, want)
		}
	}
}

// TestOwedArrivalsDropped: arrivals due before the duration that a
// dispatcher which fell behind never sent are scheduled and dropped,
// so the schedule the figures show is the one asked for (as arithmetic:
// 10 ms gaps from 900 ms to a 1 s duration owe 10).
func TestOwedArrivalsDropped(t *testing.T) {
	e, err := New(Config{Knobs: Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 4, Mode: OpenLoop, Rate: 100},
		Duration: time.Second, Do: fakeDo(0)})
	if err != nil {
		t.Fatal(err)
	}
	gap := func() time.Duration { return 10 * time.Millisecond }
	e.t0 = time.Now()
	e.dropOwed(e.t0.Add(900*time.Millisecond), gap) // the run did not end by its duration: nothing owed
	if e.scheduled.Load() != 0 || e.dropped.Load() != 0 {
		t.Fatalf("run not ended: scheduled %d dropped %d", e.scheduled.Load(), e.dropped.Load())
	}
	e.mu.Lock()
	e.why = EndDuration
	e.mu.Unlock()
	e.dropOwed(e.t0.Add(900*time.Millisecond), gap)
	if e.scheduled.Load() != 10 || e.dropped.Load() != 10 || e.scheduledAll.Load() != 10 || e.droppedAll.Load() != 10 || e.phase.dropped.Load() != 10 {
		t.Fatalf("scheduled %d dropped %d (all %d, %d; phase %d); want 10 each", e.scheduled.Load(), e.dropped.Load(),
			e.scheduledAll.Load(), e.droppedAll.Load(), e.phase.dropped.Load())
	}
	e.dropOwed(e.t0.Add(time.Second), gap) // due at the duration: not owed
	if e.dropped.Load() != 10 {
		t.Fatalf("an arrival due at the duration counted: %d", e.dropped.Load())
	}
}

// lastSend is fakeDo(d) that keeps when its latest request was sent,
// from now (a synctest bubble's clock stands still until Run waits).
func lastSend(d time.Duration) (do func(context.Context, probe.Request) probe.Result, last func() time.Duration) {
	var mu sync.Mutex
	var at time.Duration
	t0, slow := time.Now(), fakeDo(d)
	do = func(ctx context.Context, r probe.Request) probe.Result {
		mu.Lock()
		at = max(at, time.Since(t0))
		mu.Unlock()
		return slow(ctx, r)
	}
	return do, func() time.Duration { mu.Lock(); defer mu.Unlock(); return at }
}
