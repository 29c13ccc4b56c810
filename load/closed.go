package load

import (
	"context"
	"time"

	"github.com/infertop/infertop/crash"
)

// A closed-loop worker whose requests fail in a row backs off, so that an
// endpoint rejecting everything is not sent a thousand requests a second
// (which would only measure how fast it says no, and may keep it down):
// after k failures in a row it waits backoffBase*2^(k-1), at most
// backoffMax, or what the server's Retry-After asked for, at most
// retryAfterMax (a bad header must not stop the load for an hour). The
// open loop keeps its schedule: that is its point.
const (
	backoffBase   = 5 * time.Millisecond
	backoffMax    = time.Second
	retryAfterMax = 30 * time.Second
)

// backoff is the wait after fails failures in a row, the last of which
// asked for retryAfter (zero: it did not).
func backoff(fails int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, retryAfterMax)
	}
	if fails < 1 {
		return 0
	}
	if fails > 16 { // long past the cap; no shift overflows
		return backoffMax
	}
	return min(backoffBase<<(fails-1), backoffMax)
}

// spawnLocked starts the workers the concurrency asks for and are not
// running. Workers above the concurrency stop by themselves.
func (e *Engine) spawnLocked() {
	if !e.started || e.stopping || e.ending || e.runCtx.Err() != nil {
		return
	}
	if e.knobs.Mode != ClosedLoop {
		return
	}
	for len(e.workerSlots) < e.knobs.Concurrency {
		e.workerSlots = append(e.workerSlots, e.board.add())
	}
	for id := range e.knobs.Concurrency {
		if !e.alive[id] {
			e.alive[id] = true
			e.workers.Add(1)
			go e.worker(e.runCtx, id, e.workerSlots[id])
		}
	}
}

// next tells worker id what to do: its knobs and phase, a channel closed at
// the next knob change, and false when it must stop.
func (e *Engine) next(id int) (Knobs, *phaseInfo, <-chan struct{}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waitHoldLocked()
	if id >= e.knobs.Concurrency || e.stopping || e.ending || e.knobs.Mode != ClosedLoop {
		delete(e.alive, id)
		return Knobs{}, nil, nil, false
	}
	if !e.knobs.Paused {
		if !e.admitLocked() {
			delete(e.alive, id)
			return Knobs{}, nil, nil, false
		}
		e.endWarmupLocked(e.elapsedLocked())
		e.begunAll.Add(1)
		e.phase.outstanding.Add(1)
	}
	return e.knobs, e.phase, e.changed, true
}

// worker is closed-loop worker id; slot is where it shows its request in
// flight, its own while it runs (a worker of the same id starts only after it stopped).
func (e *Engine) worker(ctx context.Context, id int, slot *slot) {
	defer e.workers.Done()
	defer crash.Recover()
	fails := 0 // failures in a row
	conv := e.conversationFor()
	d := e.newDoer()
	defer d.stop()
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
		ok, retryAfter, delivered := e.send(ctx, k, ph, time.Time{}, slot, conv.next(k), d)
		if !delivered {
			return
		}
		if ok { // full speed again at once (a session's next turn after its think time)
			fails = 0
			conv.think(ctx, changed)
			continue
		}
		fails++
		e.backOff(ctx, backoff(fails, retryAfter), changed)
	}
}

// backOff waits d, or less when the knobs change (the person at the keys
// wants to see the new setting now) or the run ends or stops (changed is
// closed then too). Snapshot.BackingOff counts the workers waiting in it.
func (e *Engine) backOff(ctx context.Context, d time.Duration, changed <-chan struct{}) {
	if d <= 0 {
		return
	}
	e.backingOff.Add(1)
	defer e.backingOff.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-ctx.Done():
	}
}
