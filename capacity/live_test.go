package capacity

import (
	"errors"
	"testing"

	"github.com/infertop/infertop/load"
)

// stillEngine is an Engine whose run never moves: a search on it waits
// for snapshots until stopped.
type stillEngine struct{ ending chan struct{} }

func (e stillEngine) NewPhase(func(*load.Knobs)) (load.Knobs, int) { return load.Knobs{}, 1 }
func (e stillEngine) Ending() <-chan struct{}                      { return e.ending }

// TestLiveStops: a Live runs one search at a time, its stop returns once
// the search has, the end comes as news, and Close ends the reader
// (goleak checks no goroutine is left).
func TestLiveStops(t *testing.T) {
	snaps := make(chan load.Snapshot)
	s := NewLive(Search{}, stillEngine{make(chan struct{})}, func() (<-chan load.Snapshot, func()) { return snaps, func() {} })
	objs := mustParse(t, "ttft_p99<=500ms")
	id, stop, err := s.Find(objs)
	if err != nil || id != 1 {
		t.Fatalf("Find: %d, %v", id, err)
	}
	if _, _, err := s.Find(objs); err == nil {
		t.Fatal("a second search started beside the first")
	}
	stop(ErrTakenOver)
	msg, ok := s.Next()
	if !ok || msg.ID != 1 || msg.End == nil || !errors.Is(msg.End.Err, ErrTakenOver) {
		t.Fatalf("the end: %+v, %v", msg, ok)
	}
	if id, _, err := s.Find(objs); err != nil || id != 2 {
		t.Fatalf("Find after the stop: %d, %v", id, err)
	}
	next := make(chan bool)
	go func() { _, ok := s.Next(); next <- ok }() // the end of search 2, from Close
	s.Close()
	<-next
	if _, ok := s.Next(); ok {
		t.Fatal("Next after Close")
	}
	if _, _, err := s.Find(objs); !errors.Is(err, ErrClosed) {
		t.Fatalf("Find after Close: %v", err)
	}
}

// TestLiveNewsToTheEnd: however the news is merged, a reader that reads
// to the end has every step in order, the latest progress, and the
// result, and the subscription is given back.
func TestLiveNewsToTheEnd(t *testing.T) {
	f, snaps := newFake(t, 37)
	unsubscribed := make(chan struct{})
	s := NewLive(Search{Hold: fakeHold(), Resolution: 0.01}, f, func() (<-chan load.Snapshot, func()) {
		return snaps, func() { close(unsubscribed) }
	})
	defer s.Close()
	id, _, err := s.Find(mustParse(t, "ttft_p99<=500ms"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	var last *Progress
	for {
		m, ok := s.Next()
		if !ok {
			t.Fatal("Next ended before the search did")
		}
		if m.ID != id {
			t.Fatalf("news of search %d, want %d", m.ID, id)
		}
		steps = append(steps, m.Steps...)
		if m.Progress != nil {
			last = m.Progress
		}
		if m.End != nil {
			if m.End.Err != nil || !m.End.Result.Found || m.End.Result.MaxLoad != 39 {
				t.Fatalf("the end: %+v", m.End)
			}
			if len(steps) != len(m.End.Result.Steps) {
				t.Fatalf("%d steps told, the result has %d", len(steps), len(m.End.Result.Steps))
			}
			for i := range steps {
				if steps[i].N != m.End.Result.Steps[i].N {
					t.Fatalf("step %d told as %d", m.End.Result.Steps[i].N, steps[i].N)
				}
			}
			break
		}
	}
	if last == nil || last.State != StateHeld {
		t.Fatalf("the last progress: %+v", last)
	}
	<-unsubscribed
}

// TestLiveLeavesTheLoadFound: a live search that found a load leaves the
// knobs there, not at its last step (on main the dashboard stayed at the
// step that broke, 33, where 32 was found).
func TestLiveLeavesTheLoadFound(t *testing.T) {
	f, snaps := newFake(t, 30)
	s := NewLive(Search{Hold: fakeHold(), Resolution: 0.01}, f, func() (<-chan load.Snapshot, func()) { return snaps, func() {} })
	defer s.Close()
	if _, _, err := s.Find(mustParse(t, "ttft_p99<=500ms")); err != nil {
		t.Fatal(err)
	}
	for {
		m, ok := s.Next()
		if !ok {
			t.Fatal("Next ended before the search did")
		}
		if m.End == nil {
			continue
		}
		res := m.End.Result
		if m.End.Err != nil || !res.Found || res.MaxLoad != 32 {
			t.Fatalf("the end: %+v", m.End)
		}
		last := res.Steps[len(res.Steps)-1]
		if last.Held {
			t.Fatalf("the search ended on a step that held (%v): nothing to test", last.Load)
		}
		f.mu.Lock()
		k := f.phases[len(f.phases)-1].Knobs
		f.mu.Unlock()
		if k.Concurrency != 32 || k.Paused {
			t.Fatalf("the knobs after the search: %+v (its last step at %v, held %v)", k, last.Load, last.Held)
		}
		return
	}
}
