package load

import (
	"context"
	"sync"
	"sync/atomic"
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

// ResetCache empties the server's prefix cache through Config.ResetCache
// where ResetPrefixCache asks for it, counting it in the snapshots'
// CacheResets; nothing otherwise. A stage of a walk and a capacity
// search's step call it just before their phase begins, so that each
// starts cold: from the reset's start until that phase begins (the next
// knob change, or the run's end) no closed-loop worker starts a request,
// else one of the phase before, sent after the reset, would warm the
// cache again for the new phase's first. (The open loop keeps its
// schedule.) A refusal is counted and returned, and holds nothing; the
// load goes on.
func (e *Engine) ResetCache(ctx context.Context) error {
	if !e.cfg.ResetPrefixCache || e.cfg.ResetCache == nil {
		return nil
	}
	e.mu.Lock()
	if e.hold == nil && !e.ending {
		e.hold = make(chan struct{})
	}
	e.mu.Unlock()
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
