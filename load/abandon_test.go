package load

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

// stuckDo is a request function stuck past any context, as a transport
// deadlocked on its own lock is: its calls return only once release is
// closed (at the test's end, so that goleak finds nothing left), and
// started is told of each call.
func stuckDo(t *testing.T) (do func(context.Context, probe.Request) probe.Result, started <-chan struct{}) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	st := make(chan struct{}, 64)
	return func(context.Context, probe.Request) probe.Result {
		select {
		case st <- struct{}{}:
		default:
		}
		<-release
		return probe.Result{}
	}, st
}

// TestStuckRequestsEndTheRun: requests that never return, whatever their
// context says, are given up on AbandonGrace after the drain: the run
// ends, with every request counted incomplete.
func TestStuckRequestsEndTheRun(t *testing.T) {
	t.Parallel()
	do, started := stuckDo(t)
	const drain = 100 * time.Millisecond
	eng, err := New(Config{Do: do, Knobs: Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 8}, Tick: 20 * time.Millisecond, Drain: drain})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	<-started
	<-started
	t0 := time.Now()
	eng.Finish(EndDuration)
	s := waitFor(t, eng, drain+AbandonGrace+5*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done })
	if took := time.Since(t0); took < drain+AbandonGrace {
		t.Errorf("done %v after Finish: before the drain and the grace", took)
	}
	if s.Incomplete != 2 || s.TotalCompleted != 0 || s.TotalFailed != 0 || s.InFlight != 0 {
		t.Errorf("incomplete %d, completed %d, failed %d, in flight %d: want 2 incomplete", s.Incomplete, s.TotalCompleted, s.TotalFailed, s.InFlight)
	}
	if n := eng.Abandoned(); n != 2 {
		t.Errorf("%d abandoned, want 2", n)
	}
	cancel()
	<-done
}

// TestStuckRequestsStop: stopping the engine (a second signal) while its
// requests are stuck returns within AbandonGrace, not never.
func TestStuckRequestsStop(t *testing.T) {
	t.Parallel()
	do, started := stuckDo(t)
	eng, err := New(Config{Do: do, Knobs: Knobs{Concurrency: 3, PromptTokens: 8, OutputTokens: 8}, Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	for range 3 {
		<-started
	}
	t0 := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(AbandonGrace + 10*time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	t.Logf("Run returned %v after its context ended", time.Since(t0))
	if s := eng.Latest(); s.Incomplete != 3 || s.InFlight != 0 {
		t.Errorf("incomplete %d, in flight %d: want 3 incomplete", s.Incomplete, s.InFlight)
	}
}
