// Package latest is the one latest-wins hub of the project: every stream
// of snapshots (an engine's, a fleet's views, a merge's) is offered
// through it. A reader that is slow gets the newest value when it looks
// again, never a queue of stale ones, and a publisher never blocks: a
// slow terminal must not slow the load (coordinated omission by the UI).
package latest

import "sync"

// Hub offers the newest value of a stream to any number of subscribers.
// The zero Hub is ready to use; its methods are safe from any goroutine.
type Hub[T any] struct {
	mu     sync.Mutex
	latest T
	set    bool
	subs   map[chan T]struct{}
	closed bool
}

// Latest is the newest value published (T's zero before the first) and
// whether one was.
func (h *Hub[T]) Latest() (T, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest, h.set
}

// Subscribe returns a channel that always holds the newest value not yet
// read (a new one replaces an unread one), and a function to unsubscribe,
// safe to call more than once. The channel holds the newest value at
// once, if there is one, and is closed by Close (at once after it).
func (h *Hub[T]) Subscribe() (<-chan T, func()) {
	ch := make(chan T, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		if h.set {
			ch <- h.latest
		}
		close(ch)
		return ch, func() {}
	}
	if h.subs == nil {
		h.subs = map[chan T]struct{}{}
	}
	h.subs[ch] = struct{}{}
	if h.set {
		ch <- h.latest
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if _, ok := h.subs[ch]; ok {
				delete(h.subs, ch)
				close(ch)
			}
		})
	}
}

// Publish makes v the newest value and offers it to every subscriber
// without blocking. After Close it is dropped.
func (h *Hub[T]) Publish(v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.latest, h.set = v, true
	for ch := range h.subs {
		select { // drop the unread one: latest wins
		case <-ch:
		default:
		}
		ch <- v // room: the only sender holds the lock
	}
}

// Close closes every subscriber's channel once the last value is out, so
// readers see the end; later Subscribes get the last value and a closed
// channel. It may be called more than once.
func (h *Hub[T]) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		close(ch)
		delete(h.subs, ch)
	}
}

// Closed says Close was called.
func (h *Hub[T]) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
