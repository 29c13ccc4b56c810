package load

// Latest returns the newest snapshot (zero before the first tick).
func (e *Engine) Latest() Snapshot {
	s, _ := e.hub.Latest()
	return s
}

// Subscribe returns a channel that always holds the newest snapshot not yet
// read (a new one replaces an unread one), and a function to unsubscribe
// (latest.Hub). The channel is closed when the engine stops.
func (e *Engine) Subscribe() (<-chan Snapshot, func()) { return e.hub.Subscribe() }

// publish hands s to every subscriber without ever blocking: a slow reader
// gets the newest snapshot when it looks again, not a queue of stale ones.
func (e *Engine) publish(s Snapshot) { e.hub.Publish(s) }

// closeSubscriptions closes every subscriber's channel once the last
// snapshot is out, so readers see the end.
func (e *Engine) closeSubscriptions() { e.hub.Close() }
