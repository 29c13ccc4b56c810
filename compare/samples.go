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

// sideSamples are one side's rings: one per latency metric compared, one
// of outcomes for the error rate, and one of the judged answers' for the
// invalid rate (nil unless a statistic reads it).
type sideSamples struct {
	lat      [load.NumMetrics]*ring
	errs     *ring
	inv      *ring
	maxPhase int // the newest phase a record came from
	// Every request of the setting, for the confidence sequences: each
	// latency's counts per value (beside its ring), the failed and all
	// requests, the invalid and all judged answers, and the seconds they
	// came in.
	cnt             [load.NumMetrics]*valueCounts
	failed, total   int64
	invalid, judged int64
	secs            span
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
	setting setting
	sides   [2]sideSamples
	epoch   int // clearLocked's calls (see Knobs)
	held    held
}

// setting is the knob setting a comparison's samples belong to, and the
// moment of its last reset: the rule for which requests count, shared by
// a Pair's Samples and a split's Groups.
type setting struct {
	since   time.Time // requests started before it are left out (a reset)
	knobs   load.Knobs
	hasKnob bool
}

// admit reports whether rec, seen at now, counts; newest is the newest
// phase its source (a side, or the one engine of a split) has recorded.
// restart says every sample held must go first: rec is the first of a
// newer phase under another setting (a walk moves each engine on its own).
// A late one of an older setting is left out.
func (st *setting) admit(rec load.Record, now time.Time, newest int) (ok, restart bool) {
	if rec.Warmup || now.Add(-rec.E2E).Before(st.since) {
		return false, false // the warm-up's, or started before a reset
	}
	if st.hasKnob && samePhase(st.knobs, rec.Knobs) {
		return true, false
	}
	if st.hasKnob && rec.Phase <= newest {
		return false, false
	}
	restart = st.hasKnob
	st.knobs, st.hasKnob = rec.Knobs, true
	return true, restart
}

// set says the knobs are now k; true when that is a new setting.
func (st *setting) set(k load.Knobs) (changed bool) {
	changed = st.hasKnob && !samePhase(st.knobs, k)
	st.knobs, st.hasKnob = k, true
	return changed
}

// NewSamples keeps n samples (0: DefaultSamples) per side of every metric
// stats need, counting seconds from t0.
func NewSamples(stats []Stat, n int, t0 time.Time) *Samples {
	if n <= 0 {
		n = DefaultSamples
	}
	s := &Samples{stats: stats, t0: t0}
	for i := range s.sides {
		s.sides[i] = newSideSamples(stats, n, true)
	}
	return s
}

// newSideSamples are the rings of one side (or group) for stats, n each,
// and the counts per value beside them when counts.
func newSideSamples(stats []Stat, n int, counts bool) sideSamples {
	side := sideSamples{errs: newRing(n), secs: newSpan()}
	for _, st := range stats {
		if st.Invalid && side.inv == nil {
			side.inv = newRing(n)
		}
		if !st.ErrorRate && side.lat[st.Metric] == nil {
			side.lat[st.Metric] = newRing(n)
			if counts {
				side.cnt[st.Metric] = &valueCounts{}
			}
		}
	}
	return side
}

// counting starts (on) or stops counting every request per value, for
// stats; a counter already there keeps its counts.
func (sd *sideSamples) counting(stats []Stat, on bool) {
	for _, st := range stats {
		switch m := st.Metric; {
		case st.ErrorRate:
		case !on:
			sd.cnt[m] = nil
		case sd.cnt[m] == nil:
			sd.cnt[m] = &valueCounts{}
		}
	}
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
	s.epoch++
	s.held.reset()
	for i := range s.sides {
		s.sides[i].clear()
	}
}

// clear forgets the side's samples.
func (sd *sideSamples) clear() {
	sd.errs.clear()
	if sd.inv != nil {
		sd.inv.clear()
	}
	for _, r := range sd.lat {
		if r != nil {
			r.clear()
		}
	}
	for _, c := range sd.cnt {
		if c != nil {
			c.clear()
		}
	}
	sd.failed, sd.total, sd.invalid, sd.judged, sd.secs = 0, 0, 0, 0, newSpan()
}

// SetAnytime says whether the comparison is judged with the confidence
// sequences (Options.Anytime), which read every request of the setting
// counted per value: on by default; off, Observe keeps only the
// bootstrap's rings, and a Compare with Options.Anytime has no counts to
// judge (NotEnough). Call it before the first Observe.
func (s *Samples) SetAnytime(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sides {
		s.sides[i].counting(s.stats, on)
	}
}

// SetKnobs says the knobs are now k (the controller moved both sides): a
// new setting starts the comparison over.
func (s *Samples) SetKnobs(k load.Knobs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.setting.set(k) {
		s.clearLocked()
	}
}

// Reset forgets every sample; requests that started before at are left
// out when they end.
func (s *Samples) Reset(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.setting.since = at
}

// Observe counts one finished request of side, seen at now.
func (s *Samples) Observe(side Side, rec load.Record, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sd := &s.sides[side]
	ok, restart := s.setting.admit(rec, now, sd.maxPhase)
	if !ok {
		return
	}
	if restart {
		s.clearLocked()
	}
	sd.record(rec, secondOf(now, s.t0))
}

// secondOf is the second of the comparison now falls in, counted from t0.
func secondOf(now, t0 time.Time) int32 {
	return int32(max(now.Sub(t0), 0) / time.Second)
}

// record adds rec, finished in second sec, to the side's rings.
func (sd *sideSamples) record(rec load.Record, sec int32) {
	sd.maxPhase = max(sd.maxPhase, rec.Phase)
	fail := 0.0
	if !rec.OK() {
		fail = 1
	}
	sd.errs.add(sample{sec, fail})
	sd.total++
	sd.failed += int64(fail)
	sd.secs.see(sec)
	// The completed requests' judged answers, as the load counts them
	// (Snapshot.InvalidRate): a failed request is the error rate's.
	if sd.inv != nil && rec.OK() && rec.Output.Judged {
		bad := 0.0
		if !rec.Output.Valid {
			bad = 1
		}
		sd.inv.add(sample{sec, bad})
		sd.judged++
		sd.invalid += int64(bad)
	}
	add := func(m load.Metric, d time.Duration) {
		if r := sd.lat[m]; r != nil {
			r.add(sample{sec, float64(d) / 1e6})
			if c := sd.cnt[m]; c != nil { // nil: no sequences judge (SetAnytime)
				c.add(float64(d)/1e6, 1)
			}
		}
	}
	// Latency from the intended send time: the open loop's queue counts,
	// as it does for the person waiting (zero in the closed loop). A TTFT
	// and the gaps after it stay when the request then failed: they were
	// measured, and the live window keeps them too.
	if rec.HasTTFT {
		add(load.TTFT, rec.TTFT+rec.Queue)
		if sd.lat[load.ITL] != nil {
			rec.ITLs(func(d time.Duration) { add(load.ITL, d) })
		}
	}
	if rec.HasTTFO {
		add(load.TTFO, rec.TTFO+rec.Queue)
	}
	if !rec.OK() {
		return
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
	return [2][]sample{s.sides[0].items(st), s.sides[1].items(st)}
}

// tallies copies what the confidence sequences read of both sides for
// st.
func (s *Samples) tallies(st Stat) [2]tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	return [2]tally{s.sides[0].tally(st, nil), s.sides[1].tally(st, nil)}
}

// tally is the side's tally of st: its counts since mark (a copy of the
// side taken earlier; nil: since the setting began).
func (sd *sideSamples) tally(st Stat, mark *sideSamples) tally {
	t := tally{failed: sd.failed, total: sd.total, first: sd.secs.first, last: sd.secs.last}
	if st.Invalid {
		t.failed, t.total = sd.invalid, sd.judged
	}
	if mark != nil {
		if st.Invalid {
			t.failed, t.total = t.failed-mark.invalid, t.total-mark.judged
		} else {
			t.failed, t.total = t.failed-mark.failed, t.total-mark.total
		}
		if mark.secs.first <= mark.secs.last {
			t.first = max(t.first, mark.secs.last)
		}
	}
	// The design effect from the newest requests (the ring's: the
	// bootstrap's), at the statistic's own point: the error rate's
	// failures, a quantile's value over the setting.
	if st.ErrorRate {
		t.deff = ringDeff(sd.outcomes(st), 0.5)
		return t
	}
	if c := sd.cnt[st.Metric]; c != nil {
		var m *valueCounts
		if mark != nil {
			m = mark.cnt[st.Metric]
		}
		t.c = c.minus(m).counts()
		if x, _, ok := t.c.Quantile(st.Q); ok {
			t.c.DesignEffect = ringDeff(sd.lat[st.Metric], x)
		}
	}
	return t
}

// mark is a copy of what tally reads of the side now, to count from.
func (sd *sideSamples) mark() *sideSamples {
	m := &sideSamples{failed: sd.failed, total: sd.total, invalid: sd.invalid, judged: sd.judged, secs: sd.secs}
	for i, c := range sd.cnt {
		if c != nil {
			m.cnt[i] = c.clone()
		}
	}
	return m
}

// outcomes is the ring of a rate's 0/1 outcomes: the failures, or the
// judged answers' (nil when not kept).
func (sd *sideSamples) outcomes(st Stat) *ring {
	if st.Invalid {
		return sd.inv
	}
	return sd.errs
}

// items copies the side's samples of stat (nil for none).
func (sd *sideSamples) items(st Stat) []sample {
	r := sd.outcomes(st)
	if !st.ErrorRate {
		r = sd.lat[st.Metric]
	}
	if r == nil {
		return nil
	}
	return append([]sample(nil), r.items()...)
}
