package probe

import (
	"sync/atomic"
	"time"
)

// Live is what one request has shown so far: the time of every message
// that was timed (the first is the TTFT's) and what it carried (Mark).
// The goroutine running the request writes it as each message arrives;
// one other goroutine (the engine's aggregator) reads it on its tick and
// once more when the request has ended. So the first token, each gap and
// each message's tokens reach the live figures within a tick of their
// arrival instead of when the request ends, at the cost of one slice
// write and one atomic store a message: no lock, no channel send, and no
// allocation once the slice has grown to the longest answer seen.
//
// The owner's rule: a Live is reset (by Do, at the start of a request)
// only when its reader has finished with it. The engine keeps that rule
// by reusing a Live only after its aggregator has released it.
type Live struct {
	// Origin is the instant every time is counted from (the engine's run
	// start), set by the owner before the Live is first used.
	Origin time.Time

	w     []int64 // the writer's view: the times, as offsets from Origin <<2 | Mark
	buf   atomic.Pointer[[]int64]
	n     atomic.Int64 // entries published
	start atomic.Int64 // the request's Start as an offset from Origin, plus one; 0: not begun
}

// Mark says what a timed message carried.
type Mark uint8

// The marks: a message timed without output (first-chunk mode's message
// with choices but no text), one with output of any kind (reasoning), one
// with output of the answer (the first of these ends TTFO).
const (
	Timed  Mark = 0
	Output Mark = 1
	Answer Mark = 3
)

// Output reports whether the message carried output, of either kind.
func (m Mark) Output() bool { return m&Output != 0 }

// Answer reports whether the message carried output of the answer.
func (m Mark) Answer() bool { return m&Answer == Answer }

// Reset forgets the last request's times before l is shown to its reader
// again (Begin forgets them too, at the next request's Start): a reader
// looking between the two would otherwise see the last request's
// messages as the next one's.
func (l *Live) Reset() {
	if l == nil {
		return
	}
	l.n.Store(0)
	l.start.Store(0)
	l.w = l.w[:0]
}

// Begin starts a request at start on l, forgetting the last one's times.
// Client.Do calls it; another request function that tells a Live calls
// it before its first Add, under the owner's rule.
func (l *Live) Begin(start time.Time) {
	if l == nil {
		return
	}
	l.n.Store(0)
	l.w = l.w[:0]
	l.start.Store(int64(start.Sub(l.Origin)) + 1)
}

// Add records a timed message at off from the request's Start (the one
// given to Begin): one slice write and one atomic store, no lock.
func (l *Live) Add(start time.Time, off time.Duration, m Mark) {
	if l == nil {
		return
	}
	v := int64(start.Sub(l.Origin)+off)<<2 | int64(m&Answer)
	grew := len(l.w) == cap(l.w)
	l.w = append(l.w, v)
	if grew {
		l.publish()
	}
	l.n.Store(int64(len(l.w)))
}

// publish makes the writer's array, to its capacity, the one the reader
// reads the published entries from: entries written later within its
// capacity need no new pointer, only the count.
func (l *Live) publish() {
	w := l.w[:cap(l.w)]
	l.buf.Store(&w)
}

// Reserve makes room for n messages before a request, so that a stream
// of up to n messages grows nothing while it runs.
func (l *Live) Reserve(n int) {
	if l == nil || cap(l.w) >= n {
		return
	}
	l.w = make([]int64, 0, n)
	l.publish()
}

// Start is the request's Start as an offset from Origin; ok is false
// before the request has begun.
func (l *Live) Start() (start time.Duration, ok bool) {
	v := l.start.Load()
	return time.Duration(v - 1), v > 0
}

// Len is the number of timed messages published so far.
func (l *Live) Len() int { return int(l.n.Load()) }

// At is timed message i (i < Len): its time as an offset from Origin and
// what it carried.
func (l *Live) At(i int) (at time.Duration, m Mark) {
	v := (*l.buf.Load())[i]
	return time.Duration(v >> 2), Mark(v & 3)
}

// ITLs calls fn with every gap between successive timed messages
// published so far: the request's inter-token latencies.
func (l *Live) ITLs(fn func(time.Duration)) {
	if l == nil {
		return
	}
	n := l.Len()
	if n < 2 {
		return
	}
	buf := *l.buf.Load()
	for i := 1; i < n; i++ {
		fn(time.Duration(buf[i]>>2 - buf[i-1]>>2))
	}
}

// Replay writes a finished request's message times into l as Do writes
// them while they arrive: the first at ttft, the others at the offsets
// rest, every one carrying the answer's output. It is for request functions other than
// a Client's (a test's fake endpoint, a replay of recorded results); l
// may be nil.
func (l *Live) Replay(start time.Time, ttft time.Duration, rest ...time.Duration) {
	if l == nil {
		return
	}
	l.Begin(start)
	l.Add(start, ttft, Answer)
	for _, d := range rest {
		l.Add(start, d, Answer)
	}
}
