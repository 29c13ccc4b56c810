package compare

import (
	"sync"
	"time"

	"github.com/infertop/infertop/load"
)

// Side is one of the two endpoints.
type Side int

// The sides.
const (
	Baseline Side = iota
	Canary
)

// String names the side as the exporter's target label and the reports do.
func (s Side) String() string {
	if s == Canary {
		return "canary"
	}
	return "baseline"
}

// DefaultSamples is how many of the newest samples a side keeps per metric.
const DefaultSamples = 4096

// sample is one request's value (milliseconds for a latency, 0 or 1 for a
// failure) and the second of the comparison it finished in: the block the
// bootstrap resamples.
type sample struct {
	sec int32
	v   float64
}

// ring keeps the newest samples, a fixed number.
type ring struct {
	buf  []sample
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]sample, n)} }

func (r *ring) add(s sample) {
	r.buf[r.next] = s
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// items are the samples held, in no particular order.
func (r *ring) items() []sample {
	if r.full {
		return r.buf
	}
	return r.buf[:r.next]
}

func (r *ring) clear() { r.next, r.full = 0, false }

// sideSamples are one side's rings: one per latency metric compared and
// one of outcomes for the error rate.
type sideSamples struct {
	lat      [load.NumMetrics]*ring
	errs     *ring
	maxPhase int // the newest phase a record came from
}

// Samples collects both sides' requests for a comparison: the newest N
// per metric and side, stamped with the second they finished in. Only the
// requests of the current knob setting count (a change of a knob, or a
// reset, starts over), never the warm-up's. Its methods are safe from any
// goroutine; Observe is cheap (the engine's aggregator calls it).
type Samples struct {
	mu      sync.Mutex
	stats   []Stat
	t0      time.Time
	since   time.Time // requests started before it are left out (a reset)
	knobs   load.Knobs
	hasKnob bool
	sides   [2]sideSamples
}

// NewSamples keeps n samples (0: DefaultSamples) per side of every metric
// stats need, counting seconds from t0.
func NewSamples(stats []Stat, n int, t0 time.Time) *Samples {
	if n <= 0 {
		n = DefaultSamples
	}
	s := &Samples{stats: stats, t0: t0}
	for i := range s.sides {
		side := &s.sides[i]
		side.errs = newRing(n)
		for _, st := range stats {
			if !st.ErrorRate && side.lat[st.Metric] == nil {
				side.lat[st.Metric] = newRing(n)
			}
		}
	}
	return s
}

// samePhase is load's notion of one setting: the pause is not a change.
func samePhase(a, b load.Knobs) bool {
	a.Paused, b.Paused = false, false
	if a.Mode == load.ClosedLoop {
		a.Rate, b.Rate = 0, 0
	} else {
		a.Concurrency, b.Concurrency = 0, 0
	}
	return a == b
}

// clearLocked forgets every sample.
func (s *Samples) clearLocked() {
	for i := range s.sides {
		side := &s.sides[i]
		side.errs.clear()
		for _, r := range side.lat {
			if r != nil {
				r.clear()
			}
		}
	}
}

// SetKnobs says the knobs are now k (the controller moved both sides): a
// new setting starts the comparison over.
func (s *Samples) SetKnobs(k load.Knobs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasKnob && !samePhase(s.knobs, k) {
		s.clearLocked()
	}
	s.knobs, s.hasKnob = k, true
}

// Reset forgets every sample; requests that started before at are left
// out when they end.
func (s *Samples) Reset(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.since = at
}

// Observe counts one finished request of side, seen at now.
func (s *Samples) Observe(side Side, rec load.Record, now time.Time) {
	if rec.Warmup {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Add(-rec.E2E).Before(s.since) {
		return // started before a reset
	}
	sd := &s.sides[side]
	if !s.hasKnob || !samePhase(s.knobs, rec.Knobs) {
		// A walk moves each engine on its own: the first request of a newer
		// phase under another setting starts the comparison over; a late
		// one of an older setting is left out.
		if s.hasKnob && rec.Phase <= sd.maxPhase {
			return
		}
		if s.hasKnob {
			s.clearLocked()
		}
		s.knobs, s.hasKnob = rec.Knobs, true
	}
	sd.maxPhase = max(sd.maxPhase, rec.Phase)
	sec := int32(max(now.Sub(s.t0), 0) / time.Second)
	fail := 0.0
	if !rec.OK() {
		fail = 1
	}
	sd.errs.add(sample{sec, fail})
	if !rec.OK() {
		return
	}
	add := func(m load.Metric, d time.Duration) {
		if r := sd.lat[m]; r != nil {
			r.add(sample{sec, float64(d) / 1e6})
		}
	}
	// Latency from the intended send time: the open loop's queue counts,
	// as it does for the person waiting (zero in the closed loop).
	if rec.HasTTFT {
		add(load.TTFT, rec.TTFT+rec.Queue)
		if sd.lat[load.ITL] != nil {
			rec.ITLs(func(d time.Duration) { add(load.ITL, d) })
		}
	}
	if tpot, ok := rec.TPOT(); ok {
		add(load.TPOT, tpot)
	}
	add(load.E2E, rec.E2E+rec.Queue)
	if rec.TTFB > 0 {
		add(load.TTFB, rec.TTFB)
	}
}

// snapshot copies what stat needs of both sides.
func (s *Samples) snapshot(st Stat) [2][]sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [2][]sample
	for i := range s.sides {
		r := s.sides[i].errs
		if !st.ErrorRate {
			r = s.sides[i].lat[st.Metric]
		}
		if r != nil {
			out[i] = append([]sample(nil), r.items()...)
		}
	}
	return out
}
