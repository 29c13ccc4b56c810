package compare

import "math"

// MarginVerdict is a regression's margin judged by a confidence
// sequence: the three answers an interval can give about one number, and
// a fourth when the histograms are too coarse to ever give one.
type MarginVerdict int

// The margin verdicts.
const (
	// Undecided: the interval holds the margin; more requests will tell
	// (or not judged yet).
	Undecided MarginVerdict = iota
	// WithinMargin: the whole interval is at or below the margin.
	WithinMargin
	// BeyondMargin: the whole interval is above it: the regression is
	// breached, with the comparison's confidence.
	BeyondMargin
	// NotResolvable: both sides' quantiles lie in one server bucket
	// wider than the margin, so no number of requests can decide.
	NotResolvable
)

// String is the margin verdict as lines say it.
func (m MarginVerdict) String() string {
	switch m {
	case WithinMargin:
		return "within the margin"
	case BeyondMargin:
		return "worse beyond the margin"
	case NotResolvable:
		return "not resolvable with these buckets"
	}
	return "undecided"
}

// Methods, as the reports name them (ComparisonJSON.Method).
const (
	// Method is the bootstrap's, the default.
	Method = "paired block bootstrap over the seconds both sides ran (percentile intervals, Bonferroni over the statistics)"
	// AnytimeMethod is the confidence sequences' (Options.Anytime).
	AnytimeMethod = "anytime-valid confidence sequences, valid at every look (quantiles: Howard & Ramdas 2022, beta-binomial mixtures from counts per value; error rate: Robbins' mixture martingale), each side read at its design effect over blocks of seconds, Bonferroni over the statistics"
)

// judgeAnytime judges one statistic from both sides' tallies with a
// confidence sequence at level 1-alpha (QuantileInterval,
// RateInterval). Like the bootstrap's judge it says NotEnough below a
// statistic's fewest requests or the fewest seconds: the interval would
// be valid, but a phase's first seconds are its quickest requests (the
// slow ones of the same cohort are still running), and a verdict on
// them is a verdict on the wrong population.
func judgeAnytime(st Stat, t [2]tally, alpha float64, minSeconds int) Result {
	r := Result{Stat: st}
	if st.ErrorRate {
		r.NBaseline, r.NCanary = int(t[0].total), int(t[1].total)
	} else {
		r.NBaseline, r.NCanary = int(t[0].c.Total()), int(t[1].c.Total())
	}
	if r.NBaseline == 0 || r.NCanary == 0 {
		return r
	}
	if first, last := max(t[0].first, t[1].first), max(t[0].last, t[1].last); last >= first {
		r.Seconds = int(last-first) + 1
	}
	var iv Interval
	var ok bool
	if st.ErrorRate {
		r.Baseline = float64(t[0].failed) / float64(t[0].total)
		r.Canary = float64(t[1].failed) / float64(t[1].total)
		r.Delta = r.Canary - r.Baseline
		if r.NBaseline < st.minSamples() || r.NCanary < st.minSamples() || r.Seconds < minSeconds {
			return r
		}
		iv, ok = rateInterval([2]rateSide{t[0].rates(), t[1].rates()}, alpha)
	} else {
		var jb, jc int
		r.Baseline, jb, _ = t[0].c.Quantile(st.Q)
		r.Canary, jc, _ = t[1].c.Quantile(st.Q)
		if r.Baseline <= 0 {
			return r
		}
		r.Delta = r.Canary/r.Baseline - 1
		r.Resolution = resolution(t[0].c, t[1].c, jb, jc)
		if r.NBaseline < st.minSamples() || r.NCanary < st.minSamples() || r.Seconds < minSeconds {
			return r
		}
		iv, ok = QuantileInterval(t[0].c, t[1].c, st.Q, alpha)
	}
	if !ok {
		return r
	}
	r.Lo, r.Hi = iv.Lo, iv.Hi
	r.Verdict = verdictOf(r.Lo, r.Hi)
	return r
}

// resolution is the relative width of the one server bucket both sides'
// quantiles fall in (buckets jb and jc, with the same edges), 0 when
// they fall in different ones or the values are exact: a difference
// inside it is one no count can show.
func resolution(b, c Counts, jb, jc int) float64 {
	if b.Lower == nil || c.Lower == nil || b.Values[jb] != c.Values[jc] || b.Lower[jb] != c.Lower[jc] {
		return 0
	}
	if b.Lower[jb] <= 0 {
		return math.Inf(1)
	}
	return b.Values[jb]/b.Lower[jb] - 1
}

// margin is a gate's regression judged against its result's interval.
func margin(r Result, tolerance float64) MarginVerdict {
	switch {
	case r.Verdict == NotEnough:
		return Undecided
	case r.Lo > tolerance:
		return BeyondMargin
	case r.Hi <= tolerance:
		return WithinMargin
	case r.Resolution > math.Abs(tolerance):
		return NotResolvable
	}
	return Undecided
}

// verdictOf is an interval's verdict on zero.
func verdictOf(lo, hi float64) Verdict {
	switch {
	case lo > 0:
		return Worse
	case hi < 0:
		return Better
	}
	return NoDifference
}
