package load

import (
	"context"
	"time"

	"github.com/infertop/infertop/crash"
)

// quickFailPause is the least time a worker spends on a failed request, so
// that an endpoint refusing connections does not spin a core.
const quickFailPause = 10 * time.Millisecond

// spawnLocked starts the workers the concurrency asks for and are not
// running. Workers above the concurrency stop by themselves.
func (e *Engine) spawnLocked() {
	if !e.started || e.stopping || e.ending || e.runCtx.Err() != nil {
		return
	}
	if e.knobs.Mode != ClosedLoop {
		return
	}
	for id := range e.knobs.Concurrency {
		if !e.alive[id] {
			e.alive[id] = true
			e.workers.Add(1)
			go e.worker(e.runCtx, id)
		}
	}
}

// next tells worker id what to do: its knobs and phase, a channel closed at
// the next knob change, and false when it must stop.
func (e *Engine) next(id int) (Knobs, *phaseInfo, <-chan struct{}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id >= e.knobs.Concurrency || e.stopping || e.ending || e.knobs.Mode != ClosedLoop {
		delete(e.alive, id)
		return Knobs{}, nil, nil, false
	}
	if !e.knobs.Paused {
		if !e.admitLocked() {
			delete(e.alive, id)
			return Knobs{}, nil, nil, false
		}
		e.endWarmupLocked()
		e.begunAll.Add(1)
		e.phase.outstanding.Add(1)
	}
	return e.knobs, e.phase, e.changed, true
}

func (e *Engine) worker(ctx context.Context, id int) {
	defer e.workers.Done()
	defer crash.Recover()
	for ctx.Err() == nil {
		k, ph, changed, ok := e.next(id)
		if !ok {
			return
		}
		if k.Paused {
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		start := time.Now()
		succeeded, delivered := e.send(ctx, k, ph, time.Time{})
		if !delivered {
			return
		}
		if !succeeded {
			if wait := quickFailPause - time.Since(start); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
		}
	}
}
