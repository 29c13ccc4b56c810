package load

import (
	"context"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// maxHistorySeconds bounds the whole-run record: a day of seconds, about
// 8 MB. Past it the oldest seconds are dropped (History.Dropped counts
// them), so a soak left running for a week still has a bounded engine.
const maxHistorySeconds = 24 * 3600

// Second is one second of the whole run, as kept for the reports: the
// same figures as a Point and the failures by class, in a compact form
// (counts in int32, latencies in whole microseconds) because the engine
// keeps one for every second of the run, not only the ring's last five
// minutes.
type Second struct {
	// Sec is the second of the run (0 is the first).
	Sec int64
	// Completed and Failed count requests that ended in this second;
	// ByClass splits Failed by class.
	Completed, Failed int32
	ByClass           [probe.NumClasses]int32
	// OutTokens are the output tokens that arrived in this second (see
	// Point.OutTokens), InTokens the input tokens of the requests that
	// completed in it.
	OutTokens, InTokens int32
	// InFlight is the most requests in flight seen in this second.
	InFlight int32
	// TTFT and E2E are the p50, p95 and p99 of the requests that finished
	// in this second, in microseconds (zero when none did);
	// TTFTIntended and E2EIntended the same from the intended send time
	// (the open loop's TTFT* and E2E*; zero in the closed loop).
	TTFT, E2E                 [3]uint32
	TTFTIntended, E2EIntended [3]uint32
}

// PhaseHistograms are one phase's (or the run's, ID 0) latency
// histograms, each in HdrHistogram's V2 compressed encoding, base64: the
// lossless form HdrHistogram's tools read, so a report can draw the whole
// distribution and runs can be merged later. A metric with no values has
// none.
type PhaseHistograms struct {
	ID     int
	Warmup bool
	Hist   [NumMetrics][]byte
}

// History is the whole run's record since the start or the last reset:
// every second, and the latency histograms of every phase and of the run.
type History struct {
	Seconds []Second
	// Dropped counts the oldest seconds dropped past maxHistorySeconds.
	Dropped int64
	Phases  []PhaseHistograms
	Run     PhaseHistograms
}

// secHistory is the aggregator's whole-run record of seconds.
type secHistory struct {
	secs    []Second
	dropped int64
	limit   int // 0: maxHistorySeconds (tests set less)
}

func (h *secHistory) reset() { h.secs, h.dropped = nil, 0 }

// recordSecond keeps second c, being sealed, in the whole-run record; the
// current second's histograms still hold its values.
func (a *aggregator) recordSecond(c *secSlot) {
	s := Second{Sec: c.sec, Completed: int32(c.completed), Failed: int32(c.failed), InTokens: int32(c.inTok), InFlight: int32(c.inflight)}
	for i, n := range c.byClass {
		s.ByClass[i] = int32(n)
	}
	q3 := func(m Metric) (out [3]uint32) {
		if c.mom[m].n == 0 {
			return out
		}
		for i, v := range a.curHist[m].ValueAtPercentilesSlice([]float64{50, 95, 99}) {
			out[i] = uint32(min(max(v, c.mom[m].min), c.mom[m].max)) // a bucket's top can pass the exact max
		}
		return out
	}
	s.TTFT, s.E2E = q3(TTFT), q3(E2E)
	s.TTFTIntended, s.E2EIntended = q3(TTFTIntended), q3(E2EIntended)
	h := &a.hist
	limit := h.limit
	if limit == 0 {
		limit = maxHistorySeconds
	}
	if len(h.secs) >= limit {
		// Drop a tenth at once so the copy is paid once in 8640 seconds.
		n := max(limit/10, 1)
		h.secs = append(h.secs[:0], h.secs[n:]...)
		h.dropped += int64(n)
	}
	h.secs = append(h.secs, s)
}

// history builds the record at this moment. Output tokens still arrive
// for sealed seconds in the ring (see spreadTokens), so those seconds take
// the ring's corrected count. Phase histograms still live are encoded now;
// finished phases were encoded when their histograms were released.
func (a *aggregator) history() History {
	h := History{Seconds: append([]Second(nil), a.hist.secs...), Dropped: a.hist.dropped}
	for i := range h.Seconds {
		s := &h.Seconds[i]
		if s.Sec <= a.cur.sec-ringSeconds {
			continue
		}
		if slot := &a.ring[s.Sec%ringSeconds]; slot.valid && slot.sec == s.Sec {
			s.OutTokens = int32(slot.outTok)
		}
	}
	for _, p := range a.phases {
		ph := PhaseHistograms{ID: p.info.id, Warmup: p.info.warmup, Hist: p.encoded}
		if p.final == nil {
			ph.Hist = encodeHists(&p.hist)
		}
		h.Phases = append(h.Phases, ph)
	}
	h.Run = PhaseHistograms{Hist: encodeHists(&a.run.hist)}
	return h
}

// encodeHists encodes every histogram with values.
func encodeHists(hs *[NumMetrics]*hdr.Histogram) (out [NumMetrics][]byte) {
	for m, h := range hs {
		out[m] = encodeHist(h)
	}
	return out
}

// encodeHist is h in HdrHistogram's V2 compressed encoding, base64 (nil:
// no histogram, or no value in it).
func encodeHist(h *hdr.Histogram) []byte {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil
	}
	return b
}

// historyDesk hands the aggregator's records (History, Seconds) to
// callers on other goroutines: while Run runs, the aggregator belongs to
// its goroutine, so a request goes through the Run loop; once Run is
// over the aggregator no longer changes and is read directly.
type historyDesk struct {
	mu   sync.Mutex
	req  chan func(*aggregator)
	done chan struct{} // closed when Run no longer answers req
	agg  *aggregator   // set at the end of Run, behind mu
}

func (d *historyDesk) open() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.req, d.done = make(chan func(*aggregator)), make(chan struct{})
}

// close is called by Run once its aggregator will change no more.
func (d *historyDesk) close(agg *aggregator) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.agg = agg
	close(d.done)
}

// ask has fn read the aggregator on its owner's goroutine (Run's, a tick
// at most away) or, once Run is over, here; before Run it is zero. It
// waits for ctx too.
func ask[T any](ctx context.Context, d *historyDesk, fn func(*aggregator) T) (T, error) {
	var zero T
	d.mu.Lock()
	req, done, agg := d.req, d.done, d.agg
	if agg != nil {
		defer d.mu.Unlock()
		return fn(agg), nil
	}
	d.mu.Unlock()
	if req == nil {
		return zero, nil
	}
	reply := make(chan T, 1)
	select {
	case req <- func(a *aggregator) { reply <- fn(a) }:
		select {
		case v := <-reply:
			return v, nil
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	case <-done:
		return ask(ctx, d, fn)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// History returns the whole run's record since the start or the last
// reset: one Second for every second sealed and every phase's latency
// histograms, losslessly encoded. While the run goes on it waits for the
// engine's loop (a tick at most) or for ctx; it is empty before Run.
func (e *Engine) History(ctx context.Context) (History, error) {
	return ask(ctx, &e.desk, (*aggregator).history)
}

// Micros turns a latency of a Second into a duration.
func Micros(us uint32) time.Duration { return time.Duration(us) * time.Microsecond }
