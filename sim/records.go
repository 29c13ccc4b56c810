package sim

import "sync"

// recordLog keeps the most recent records in a ring.
type recordLog struct {
	mu   sync.Mutex
	ring []Record
	next int
	full bool
}

func newRecordLog(n int) *recordLog { return &recordLog{ring: make([]Record, n)} }

func (l *recordLog) add(r Record) {
	l.mu.Lock()
	l.ring[l.next] = r
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	l.mu.Unlock()
}

func (l *recordLog) all() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]Record(nil), l.ring[:l.next]...)
	}
	out := make([]Record, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}
