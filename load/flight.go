package load

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/probe"
)

// flight is one request from its start to the aggregator's last look at
// it: its settings, its live stream (probe.Live) and, once it has ended,
// its result. The sender fills the fields above live before it publishes
// the flight in its slot; the aggregator alone touches the ones below
// res. A flight is reused only after the aggregator has released it (its
// slot's spare), so its Live is never reset while it is being read.
type flight struct {
	live     probe.Live
	slot     *slot
	phase    *phaseInfo
	start    time.Duration // the run time the sender began it
	intended time.Time     // the open loop's scheduled send time (zero when closed)
	prompt   int           // the prompt length asked for, when the server reports none
	words    int           // the prompt's length in the generator's words
	turn     int           // a session's turn (0: none); session, the whole session's time when it ended one
	session  time.Duration

	res probe.Result // set when it ended, before it is handed to the aggregator

	// The aggregator's: how many of the live messages it has folded, the
	// output tokens it credited from them, and the run time of the last.
	taken    int
	counted  int64
	last     time.Duration
	first    bool // its first message (the TTFT) has been folded
	answered bool // its first answer message (the TTFO) has been folded
}

// slot is where one sender (a closed-loop worker, an open-loop sender)
// shows the request it has out: cur while it is out, spare a released
// flight for its next request.
type slot struct {
	cur   atomic.Pointer[flight]
	spare atomic.Pointer[flight]
}

// take returns a flight for the slot's next request: its spare, or a new
// one when the aggregator has not yet released the last. A spare's Live
// is reset here, before the flight is shown in the slot: the aggregator
// must not take the last request's messages for the next one's.
func (s *slot) take(origin time.Time) *flight {
	if f := s.spare.Swap(nil); f != nil {
		f.live.Reset()
		return f
	}
	f := &flight{slot: s}
	f.live.Origin = origin
	return f
}

// release hands a flight the aggregator is done with back to its slot.
func (f *flight) release() {
	f.taken, f.counted, f.last, f.first, f.answered = 0, 0, 0, false, false
	f.res, f.phase, f.intended = probe.Result{}, nil, time.Time{}
	f.slot.spare.Store(f)
}

// board is every slot, for the aggregator's look at the requests in
// flight on each tick. Slots are only added (one per worker id, one per
// open-loop sender ever needed), so a tick scans a few thousand at most.
type board struct {
	mu    sync.Mutex
	slots []*slot
}

// add is a new slot on the board.
func (b *board) add() *slot {
	s := new(slot)
	b.mu.Lock()
	b.slots = append(b.slots, s)
	b.mu.Unlock()
	return s
}

// flying calls fn with every flight out now.
func (b *board) flying(fn func(*flight)) {
	b.mu.Lock()
	slots := b.slots // appended to only: this prefix stays as it is
	b.mu.Unlock()
	for _, s := range slots {
		if f := s.cur.Load(); f != nil {
			fn(f)
		}
	}
}

// Streams is the requests in flight by what they are doing: waiting for
// their first message, or generating; and those whose server has stopped
// sending (a stall: no message for longer than StallAfter of the stream).
type Streams struct {
	Waiting, Generating, Stalled int
	// The age of the oldest request waiting and of the oldest
	// generating, and the longest silence of a stalled one.
	OldestWaiting, OldestGenerating, LongestStall time.Duration
}

// The stall rule: a stream is stalled when its last message is older than
// stallFloor, and than stallFactor times its own median gap.
const (
	stallFloor  = 2 * time.Second
	stallFactor = 10
	// stallGaps is how many of a stream's last gaps its median is taken
	// over: the recent pace, and a bounded cost.
	stallGaps = 256
)

// StallAfter is the silence after which a stream whose median gap is
// median counts as stalled: max(2 s, 10× the median).
func StallAfter(median time.Duration) time.Duration {
	return max(stallFloor, stallFactor*median)
}

// medianGap is the median of the last stallGaps gaps of f's stream
// (scratch is reused); 0 with fewer than two messages.
func medianGap(f *flight, scratch []time.Duration) (time.Duration, []time.Duration) {
	n := f.live.Len()
	if n < 2 {
		return 0, scratch
	}
	from := max(1, n-stallGaps)
	scratch = scratch[:0]
	prev, _ := f.live.At(from - 1)
	for i := from; i < n; i++ {
		at, _ := f.live.At(i)
		scratch = append(scratch, at-prev)
		prev = at
	}
	sort.Slice(scratch, func(i, j int) bool { return scratch[i] < scratch[j] })
	return scratch[len(scratch)/2], scratch
}

// look folds every stream in flight up to now and sorts the requests out
// into waiting, generating and stalled, then seals the seconds up to now:
// the tick's one pass over the board.
func (a *aggregator) look(now time.Duration) Streams {
	var st Streams
	if a.flying != nil {
		a.flying(func(f *flight) {
			a.fold(f)
			age := max(now-f.start, 0)
			if !f.first {
				st.Waiting++
				st.OldestWaiting = max(st.OldestWaiting, age)
				return
			}
			st.Generating++
			st.OldestGenerating = max(st.OldestGenerating, age)
			if silence := now - f.last; silence > stallFloor {
				var med time.Duration
				med, a.medians = medianGap(f, a.medians)
				if silence > StallAfter(med) {
					st.Stalled++
					st.LongestStall = max(st.LongestStall, silence)
				}
			}
		})
	}
	a.advance(now)
	return st
}
