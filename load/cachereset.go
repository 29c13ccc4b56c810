package load

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// CacheResets says how often the server's prefix cache was emptied
// before a phase (Config.ResetPrefixCache): Done the resets it took,
// Failed those it refused, Last the last refusal's words (the server's,
// unsanitised: a display sanitises it).
type CacheResets struct {
	Done, Failed int64
	Last         string
}

// cacheResets is the engine's count of them, safe for concurrent use.
type cacheResets struct {
	done, failed atomic.Int64
	mu           sync.Mutex
	last         string
}

func (c *cacheResets) figures() CacheResets {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheResets{Done: c.done.Load(), Failed: c.failed.Load(), Last: c.last}
}

// resetDrainMax bounds a reset's drain: past it the reset is asked for
// with requests still out (the server may refuse it: counted).
const resetDrainMax = time.Minute

// ResetCache empties the server's prefix cache through Config.ResetCache
// where ResetPrefixCache asks for it, counting it in the snapshots'
// CacheResets; nothing otherwise. A stage of a walk and a capacity
// search's step call it just before their phase begins, so that each
// starts cold. In the closed loop it first drains: no worker starts a
// request from then until that phase begins (the next knob change, or
// the run's end), and the reset waits for every request out to finish
// (at most resetDrainMax). A request out after the reset would warm the
// cache again for the new phase's first, and the engines refuse a reset
// while requests hold its blocks (vLLM's leaves them; SGLang answers
// 400). The open loop keeps its schedule: the reset is asked for as it
// goes. A refusal is counted and returned, and holds nothing; the load
// goes on.
func (e *Engine) ResetCache(ctx context.Context) error {
	if !e.cfg.ResetPrefixCache || e.cfg.ResetCache == nil {
		return nil
	}
	e.mu.Lock()
	closed := e.knobs.Mode == ClosedLoop
	if closed && e.hold == nil && !e.ending {
		e.hold = make(chan struct{})
	}
	e.mu.Unlock()
	if closed {
		if err := e.drain(ctx); err != nil {
			e.mu.Lock()
			e.releaseLocked()
			e.mu.Unlock()
			return err
		}
	}
	if err := e.cfg.ResetCache(ctx); err != nil {
		e.mu.Lock()
		e.releaseLocked()
		e.mu.Unlock()
		e.resets.failed.Add(1)
		e.resets.mu.Lock()
		e.resets.last = err.Error()
		e.resets.mu.Unlock()
		return err
	}
	e.resets.done.Add(1)
	return nil
}

// drain waits until no request is out (every one admitted is counted),
// resetDrainMax passes or the run ends; an error only when ctx ends.
func (e *Engine) drain(ctx context.Context) error {
	t := time.NewTimer(resetDrainMax)
	defer t.Stop()
	for e.unsettled.Load() > 0 {
		select {
		case <-e.settled: // one went to zero; look again (a stale signal only loops once more)
		case <-t.C:
			return nil
		case <-e.endingCh:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// settleOne counts one admitted request settled (counted, dropped or
// lost), signalling settled when none is left; it returns how many are.
func (e *Engine) settleOne() int64 {
	n := e.unsettled.Add(-1)
	if n == 0 {
		select {
		case e.settled <- struct{}{}:
		default:
		}
	}
	return n
}

// releaseLocked lets the workers ResetCache held start again.
func (e *Engine) releaseLocked() {
	if e.hold != nil {
		close(e.hold)
		e.hold = nil
	}
}

// waitHoldLocked waits, e.mu held (and let go while waiting), until no
// reset holds the workers, the run ends, or its context does.
func (e *Engine) waitHoldLocked() {
	for e.hold != nil && !e.ending && !e.stopping && e.runCtx.Err() == nil {
		h := e.hold
		e.mu.Unlock()
		select {
		case <-h:
		case <-e.runCtx.Done():
		}
		e.mu.Lock()
	}
}
