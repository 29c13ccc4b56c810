package session

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/crash"
)

// live is the one live comparison loop, of a pair, a split and the
// agents' pair of merges alike: every so often it judges afresh, keeps
// the newest (read from any goroutine) and, through settings, the last
// line of every knob setting. Its goroutine is its own: stop ends it.
type live[T interface{ Line() string }] struct {
	newest atomic.Pointer[T]
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// start judges every every (1 s when not positive) until stop, each
// judgement kept by st under the setting it was made under.
func (l *live[T]) start(every time.Duration, st *settings, judge func() T) {
	if every <= 0 {
		every = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer crash.Recover()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// Kept before it is shown: a reader who acts on the
				// line shown (a knob change) finds it kept under its
				// setting, never lost to the restart it caused.
				var v T
				st.look(func() string {
					v = judge()
					return v.Line()
				})
				l.newest.Store(&v)
			}
		}
	}()
}

// get is the newest judgement; ok is false before the first.
func (l *live[T]) get() (v T, ok bool) {
	if p := l.newest.Load(); p != nil {
		return *p, true
	}
	return v, false
}

// stop ends the loop and waits for it; it may be called more than once,
// and before start.
func (l *live[T]) stop() {
	l.once.Do(func() {
		if l.cancel != nil {
			l.cancel()
		}
		l.wg.Wait()
	})
}
