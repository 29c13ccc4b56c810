package load

import "sync"

// Latest returns the newest snapshot (zero before the first tick).
func (e *Engine) Latest() Snapshot {
	if s := e.latest.Load(); s != nil {
		return *s
	}
	return Snapshot{}
}

// Subscribe returns a channel that always holds the newest snapshot not yet
// read (a new one replaces an unread one), and a function to unsubscribe.
// The channel is closed when the engine stops.
func (e *Engine) Subscribe() (<-chan Snapshot, func()) {
	ch := make(chan Snapshot, 1)
	e.subMu.Lock()
	defer e.subMu.Unlock()
	if e.closed {
		close(ch)
		return ch, func() {}
	}
	e.subs[ch] = struct{}{}
	if s := e.latest.Load(); s != nil {
		ch <- *s
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			e.subMu.Lock()
			defer e.subMu.Unlock()
			if _, ok := e.subs[ch]; ok {
				delete(e.subs, ch)
				close(ch)
			}
		})
	}
}

// publish hands s to every subscriber without ever blocking: a slow reader
// gets the newest snapshot when it looks again, not a queue of stale ones.
func (e *Engine) publish(s Snapshot) {
	e.latest.Store(&s)
	e.subMu.Lock()
	defer e.subMu.Unlock()
	for ch := range e.subs {
		select { // drop the unread one: latest wins
		case <-ch:
		default:
		}
		select {
		case ch <- s:
		default:
		}
	}
}

// closeSubscriptions closes every subscriber's channel once the last
// snapshot is out, so readers see the end; later Subscribes get a closed
// channel.
func (e *Engine) closeSubscriptions() {
	e.subMu.Lock()
	e.closed = true
	for ch := range e.subs {
		close(ch)
		delete(e.subs, ch)
	}
	e.subMu.Unlock()
}
