package compare

import "math"

// binsPerE is the bins of valueCounts per unit of log: 1/ln(1.001), bins
// 0.1 % wide, the precision of the HdrHistograms the rest of infertop
// records in (3 significant digits).
const binsPerE = 1000.4998333750

// valueCounts counts one side's values of a metric (milliseconds) since
// the comparison began, in bins 0.1 % wide: every request of the
// setting, in memory that grows with the values' spread, not their
// number. A confidence sequence is about everything seen since it began:
// the newest N requests (the bootstrap's rings) would let old requests
// leave it, and an interval over a sliding window is not one that holds
// at every look. Not safe for concurrent use (its owner's lock guards
// it).
type valueCounts struct {
	off   int     // the bin of bins[0]
	bins  []int64 // counts per bin from off on
	zero  int64   // values at or below zero
	total int64
}

// add counts n values of v.
func (vc *valueCounts) add(v float64, n int64) {
	if n <= 0 {
		return
	}
	vc.total += n
	if !(v > 0) {
		vc.zero += n
		return
	}
	i := int(math.Floor(math.Log(v) * binsPerE))
	switch {
	case len(vc.bins) == 0:
		vc.off, vc.bins = i, []int64{0}
	case i < vc.off:
		grown := make([]int64, vc.off-i+len(vc.bins))
		copy(grown[vc.off-i:], vc.bins)
		vc.off, vc.bins = i, grown
	case i >= vc.off+len(vc.bins):
		vc.bins = append(vc.bins, make([]int64, i-vc.off-len(vc.bins)+1)...)
	}
	vc.bins[i-vc.off] += n
}

// counts are the values held as Counts: each bin as its geometric
// middle, within 0.05 % of every value in it.
func (vc *valueCounts) counts() Counts {
	return vc.countsInto(Counts{Values: make([]float64, 0, len(vc.bins)+1), N: make([]int64, 0, len(vc.bins)+1)})
}

// countsInto is counts in c's slices, reused (a caller that looks every
// second at the same sides).
func (vc *valueCounts) countsInto(c Counts) Counts {
	c.Values, c.N, c.Lower = c.Values[:0], c.N[:0], nil
	if vc.zero > 0 {
		c.Values, c.N = append(c.Values, 0), append(c.N, vc.zero)
	}
	// One exponential, then a product a bin: a look reads every bin.
	v, step := math.Exp((float64(vc.off)+0.5)/binsPerE), math.Exp(1/binsPerE)
	for _, n := range vc.bins {
		if n > 0 {
			c.Values = append(c.Values, v)
			c.N = append(c.N, n)
		}
		v *= step
	}
	return c
}

// minus is what was counted since mark, a copy of vc taken earlier.
func (vc *valueCounts) minus(mark *valueCounts) *valueCounts {
	out := vc.clone()
	if mark == nil {
		return out
	}
	out.zero -= mark.zero
	out.total -= mark.total
	for j, n := range mark.bins {
		out.bins[mark.off+j-out.off] -= n
	}
	return out
}

func (vc *valueCounts) clone() *valueCounts {
	out := *vc
	out.bins = append([]int64(nil), vc.bins...)
	return &out
}

func (vc *valueCounts) clear() { *vc = valueCounts{} }

// tally is what the anytime statistics read of one side for one
// statistic: a latency's counts per value, or the error rate's failed
// and total requests; the seconds of the comparison it had requests
// in, first to last (first > last: none); and the design effect of its
// requests (see dependence.go; 0 or 1: independent).
type tally struct {
	c             Counts
	failed, total int64
	first, last   int32
	deff          float64
}

// span tracks the first and last second a side had requests in.
type span struct{ first, last int32 }

func (s *span) see(sec int32) {
	if s.first > s.last { // none yet
		s.first, s.last = sec, sec
		return
	}
	s.first, s.last = min(s.first, sec), max(s.last, sec)
}

// newSpan is a span with no second yet.
func newSpan() span { return span{first: 1, last: 0} }

// rates is the tally's error rate as the sequences read it.
func (t tally) rates() rateSide {
	return rateSide{failed: t.failed, total: t.total, w: weight(t.deff)}
}
