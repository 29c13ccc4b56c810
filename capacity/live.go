package capacity

import (
	"context"
	"errors"
	"sync"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// ErrClosed is the cause a closed Live stops its running search with, and
// what Find returns once it is closed.
var ErrClosed = errors.New("the live search was closed")

// News is news of live search ID: its latest progress, the steps judged
// since the last news, and its end. A dashboard takes it as a message.
type News struct {
	ID       int
	Progress *Progress
	Steps    []Step
	End      *End
}

// End is how a live search ended: its result and, when cut short, why.
type End struct {
	Result Result
	Err    error
}

// Live runs searches like one template on a live engine, one at a time,
// each on a goroutine of its own with a snapshot subscription of its own (a
// dashboard's subscription is its view's: the search must see every
// snapshot, the view only the latest). Its news is merged until it is
// read, so a slow reader never holds up the search. Whoever builds it
// closes it.
type Live struct {
	tmpl      Search
	eng       Engine
	subscribe func() (<-chan load.Snapshot, func())

	mu      sync.Mutex
	seq     int
	pending News
	has     bool
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the running search's goroutine returns
	notify  chan struct{} // a token: news is pending
	closed  chan struct{}
	once    sync.Once
}

// NewLive returns a Live running searches like tmpl (its knob, range,
// resolution and hold; its Progress and OnStep are the Live's own) on
// eng, each reading a subscription of subscribe's.
func NewLive(tmpl Search, eng Engine, subscribe func() (<-chan load.Snapshot, func())) *Live {
	tmpl.Progress, tmpl.OnStep = nil, nil
	done := make(chan struct{})
	close(done) // none running
	return &Live{tmpl: tmpl, eng: eng, subscribe: subscribe, done: done,
		notify: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Find starts a search for objs on a goroutine the Live owns and returns
// at once, with the search's id and stop, which cancels it with a cause
// and returns once it no longer turns the knobs.
func (s *Live) Find(objs []slo.Objective) (int, func(error), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
		return 0, nil, ErrClosed
	default:
	}
	select {
	case <-s.done:
	default:
		return 0, nil, errors.New("a search is already running")
	}
	s.seq++
	id := s.seq
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	search := s.tmpl
	search.Objectives = objs
	// Both run on the search's goroutine and must not block: they only
	// merge into the pending news, which the reader takes.
	search.Progress = func(p Progress) { s.post(id, func(m *News) { m.Progress = &p }) }
	search.OnStep = func(st Step) { s.post(id, func(m *News) { m.Steps = append(m.Steps, st) }) }
	snaps, unsubscribe := s.subscribe()
	go func() {
		defer crash.Recover()
		defer close(done)
		defer unsubscribe()
		res, err := search.Run(ctx, s.eng, snaps)
		settle(s.eng, search, res, err)
		s.post(id, func(m *News) { m.End = &End{Result: res, Err: err} })
	}()
	// stop waits for the goroutine: the person's knob, turned next, must
	// be the last word, not overturned by a step the search was starting.
	// Run returns as soon as it sees the context end.
	stop := func(cause error) { cancel(cause); <-done }
	return id, stop, nil
}

// settle leaves the load of a live search that found one at the load
// found: Run leaves the knobs at its last step, which, as a bisection
// ends, is as often the step that broke (33) as the one found (32). A
// search cut short, one that found nothing and a run ending leave the
// knobs as they are.
func settle(eng Engine, search Search, res Result, err error) {
	if err != nil || !res.Found || len(res.Steps) == 0 {
		return
	}
	select {
	case <-eng.Ending():
		return
	default:
	}
	search = search.withDefaults()
	if last := res.Steps[len(res.Steps)-1]; last.Held && last.Load == res.MaxLoad {
		return // already there
	}
	eng.NewPhase(func(k *load.Knobs) { search.set(k, res.MaxLoad) })
}

// post merges news of search id into the pending news; news of an older
// search still pending is dropped, the reader having moved on.
func (s *Live) post(id int, f func(*News)) {
	s.mu.Lock()
	if !s.has || s.pending.ID != id {
		s.pending, s.has = News{ID: id}, true
	}
	f(&s.pending)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default: // a token is already waiting
	}
}

// Next waits for news (what came since the last call, merged), or for
// Close; once closed there is no news (ok is false: the reader that would
// show it is gone).
func (s *Live) Next() (msg News, ok bool) {
	for {
		select {
		case <-s.closed:
			return News{}, false
		default:
		}
		s.mu.Lock()
		if s.has {
			m := s.pending
			s.pending, s.has = News{}, false
			s.mu.Unlock()
			return m, true
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-s.closed:
			return News{}, false
		}
	}
}

// Close stops a running search with ErrClosed and waits for its
// goroutine, and ends Next. Safe to call more than once.
func (s *Live) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		close(s.closed)
		cancel, done := s.cancel, s.done
		s.mu.Unlock()
		if cancel != nil {
			cancel(ErrClosed)
		}
		<-done
	})
}
