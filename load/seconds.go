package load

import (
	"context"
	"time"

	"github.com/infertop/infertop/probe"
)

// SealedSecond is one second of the run as the engine sealed it: its
// counters and its latency histograms, what a follower of several
// engines (package fleet) adds up second by second into exact figures.
type SealedSecond struct {
	// Sec is the second of the run (0 is the first).
	Sec int64
	// Completed, Failed and Good count the requests that ended in the
	// second (Good: those that met every goodput limit), ByClass the
	// failures by class; OutTokens are the output tokens that arrived in
	// it (as Point.OutTokens; a message folded late may still add to a
	// second after it was read), InTokens the input tokens of the
	// requests completed in it; InFlight the most requests in flight.
	Completed, Failed, Good, OutTokens, InTokens int64
	ByClass                                      [probe.NumClasses]int64
	InFlight                                     int
	// hist are the second's histograms, shared with the ring: a sealed
	// second's are never written again.
	hist [NumMetrics]sparse
}

// Count is how many values of m the second holds.
func (s *SealedSecond) Count(m Metric) int64 {
	var n int64
	for _, c := range s.hist[m].counts {
		n += c
	}
	return n
}

// Encoded is the second's histogram of m in HdrHistogram's V2 compressed
// encoding, base64 (the form History's and the run JSON's are in),
// values in microseconds; nil when it holds none. It costs a histogram's
// encoding: call it off the engine's loop.
func (s *SealedSecond) Encoded(m Metric) []byte {
	if len(s.hist[m].values) == 0 {
		return nil
	}
	h := newHist()
	s.hist[m].addTo(h)
	return encodeHist(h)
}

// Sealed is the engine's sealed seconds after one asked for.
type Sealed struct {
	// Seconds are oldest first, at most the ring's seconds (ringSeconds):
	// those still kept, since the last reset.
	Seconds []SealedSecond
	// From is the first second of the figures: the last reset's (0:
	// none). A second before it was forgotten.
	From int64
	// Current is the second the engine is in, not yet sealed.
	Current int64
	// Start is the instant second 0 began (Engine.Started).
	Start time.Time
}

// MaxSealedSeconds is the most seconds Seconds returns: the ring's.
const MaxSealedSeconds = ringSeconds

// Seconds returns the seconds sealed after second since (-1: every one
// still kept), oldest first, at most MaxSealedSeconds. The histograms are
// handed out as the ring keeps them, never copied (a sealed second's are
// never written again), so the engine's loop pays only for the counters.
// While the run goes on it waits for the engine's loop (a tick at most)
// or for ctx; it is empty before Run.
func (e *Engine) Seconds(ctx context.Context, since int64) (Sealed, error) {
	return ask(ctx, &e.desk, func(a *aggregator) Sealed { return a.sealedSince(since) })
}

// sealedSince is the sealed seconds after since still in the ring, since
// the last reset.
func (a *aggregator) sealedSince(since int64) Sealed {
	from := int64(a.resetAt / time.Second)
	out := Sealed{From: from, Current: a.cur.sec, Start: a.t0}
	for sec := max(a.cur.sec-ringSeconds+1, since+1, from, 0); sec < a.cur.sec; sec++ {
		slot := &a.ring[sec%ringSeconds]
		if !slot.valid || slot.sec != sec {
			continue
		}
		out.Seconds = append(out.Seconds, SealedSecond{Sec: sec, Completed: slot.completed, Failed: slot.failed, Good: slot.good,
			OutTokens: slot.outTok, InTokens: slot.inTok, ByClass: slot.byClass, InFlight: slot.inflight, hist: slot.hist})
	}
	return out
}
