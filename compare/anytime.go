package compare

import (
	"math"
	"slices"
)

// The anytime-valid statistics: confidence sequences, intervals that
// hold at every look at once. A verdict read every second for half an
// hour is tens of thousands of tests of one question; an interval built
// for one look at a fixed horizon (the bootstrap's) misses its truth at
// some look far more often than its level says (10 of 100 identical
// pairs called different at some look, against 1 at the end). A
// confidence sequence at level 1-α misses at any look, ever, with
// probability at most α (Ville's inequality over a nonnegative
// supermartingale), so the person on call and a --fail-fast gate may
// look as often as they like.
//
// Both statistics here are the same construction, a test martingale per
// side multiplied across the two sides (they are independent) and
// inverted into an interval for the difference:
//
//   - a quantile's, from counts per value (Howard & Ramdas 2022,
//     "Sequential estimation of quantiles with applications to
//     A/B-testing and best-arm identification", Bernoulli 28(3); the
//     beta-binomial mixture of Howard, Ramdas, McAuliffe & Sekhon 2021,
//     "Time-uniform, nonparametric, nonasymptotic confidence sequences",
//     Ann. Statist. 49(2)): per-request samples, merged HDR seconds and a
//     server's histogram buckets are all counts per value, judged by the
//     one code;
//   - the error rate's, from the counts of completed and failed
//     requests (Robbins' beta-binomial mixture martingale, 1970).

// Counts are one side's values of a statistic as counts per value: what
// a ring of samples, the agents' merged HDR seconds and a server's
// histogram all reduce to.
type Counts struct {
	// Values are ascending and distinct, N[i] the requests of Values[i].
	Values []float64
	N      []int64
	// Lower, when set, makes each value a bucket: N[i] requests somewhere
	// in (Lower[i], Values[i]] (a server's histogram: Lower[i] is the
	// previous bucket's upper bound, 0 for the first). Nil: each value is
	// exact (or within the histogram's precision, 0.1 %).
	Lower []float64
	// DesignEffect, when above one, says the requests are not
	// independent: their counts vary D times as much as independent
	// requests' would (see dependence.go), and the sequences read the
	// side as Total()/D requests. 0 or 1: independent.
	DesignEffect float64
}

// Total is the requests counted.
func (c Counts) Total() int64 {
	var n int64
	for _, k := range c.N {
		n += k
	}
	return n
}

// lower is the lower edge of value i (the value itself when exact).
func (c Counts) lower(i int) float64 {
	if c.Lower != nil {
		return c.Lower[i]
	}
	return c.Values[i]
}

// Quantile is the empirical q-quantile: the smallest value whose
// cumulative count reaches q of the total (as the bootstrap's statOf
// reads it), interpolated linearly inside a bucket (as Prometheus'
// histogram_quantile does); ok is false over no requests. Bucket is the
// index of the value it falls in.
func (c Counts) Quantile(q float64) (v float64, bucket int, ok bool) {
	total := c.Total()
	if total == 0 {
		return 0, 0, false
	}
	target := q * float64(total)
	var cum int64
	for i, n := range c.N {
		if n == 0 {
			continue
		}
		if float64(cum+n) >= target {
			if c.Lower == nil {
				return c.Values[i], i, true
			}
			f := max(0, (target-float64(cum))/float64(n))
			return c.Lower[i] + f*(c.Values[i]-c.Lower[i]), i, true
		}
		cum += n
	}
	last := len(c.Values) - 1
	return c.Values[last], last, true
}

// optSamples is the number of requests a side has when the quantile
// sequences are tuned to be narrowest: a mixture's prior can make its
// boundary tightest at one time only, and it stays within a few per cent
// of the best for a wide range around it (Howard et al. 2021, §3.5). A
// thousand is 50 s of a canary at 20 requests a second: the minute in
// which a rollout is decided.
const optSamples = 1000

// betaMix is the beta-binomial mixture test martingale of "θ = p" for the
// count K of successes in n Bernoulli(θ) trials: the likelihood ratio
// of a Beta(a, b) mixture of alternatives to the null,
//
//	M(K) = B(a+K, b+n-K) / B(a, b) / (p^K (1-p)^(n-K)),
//
// a nonnegative martingale under θ = p, so by Ville's inequality
// P(∃n: M ≥ 1/α) ≤ α. Log M is convex in K, least near np.
type betaMix struct {
	a, b, p float64
	n       int64
	w       float64 // the weight log M is read at (see weight)
	c0      float64 // -lbeta(a, b)
	lpq     float64 // log(p/(1-p))
}

// newQuantileMix is the mixture for the count of values at or below the
// p-quantile, its prior centred on p (Howard & Ramdas 2022, §3, with
// the two-sided normal mixture's best ρ for optSamples at α: Howard et
// al. 2021, Prop. 3 and eq. (15); the library confseq's BetaBinomial).
func newQuantileMix(p float64, n int64, alpha float64) betaMix {
	v := p * (1 - p)
	l := math.Log(1 / alpha)
	rho := optSamples * v / (2*l + math.Log(1+2*l))
	r := max(rho-v, 1e-3*v)
	return newBetaMix(r/(1-p), r/p, p, n)
}

func newBetaMix(a, b, p float64, n int64) betaMix {
	return betaMix{a: a, b: b, p: p, n: n, w: 1, c0: -lbeta(a, b), lpq: math.Log(p / (1 - p))}
}

func lbeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// logM is log M(K), times the weight.
func (m betaMix) logM(k int64) float64 {
	kf, nf := float64(k), float64(m.n)
	return m.w * (lbeta(m.a+kf, m.b+nf-kf) + m.c0 - kf*math.Log(m.p) - (nf-kf)*math.Log1p(-m.p))
}

// step is log M(K+1) - log M(K): the ratio of beta functions is
// (a+K)/(b+n-K-1), so a walk along K costs a logarithm a step.
func (m betaMix) step(k int64) float64 {
	return m.w * (math.Log((m.a+float64(k))/(m.b+float64(m.n-k)-1)) - m.lpq)
}

// qArm is one side of a quantile's comparison: its counts, cumulated,
// and its mixture's log M over the counts where it can matter.
type qArm struct {
	c   Counts
	cum []int64 // cum[i]: requests at or below value i (or bucket i)
	mix betaMix
	// kMin is where log M is least, gMin its value; tab holds log M(K)
	// for K in [k0, k0+len(tab)): outside it log M is at least limit,
	// and a sum with the other side's least can never fall below the
	// threshold.
	kMin, k0 int64
	gMin     float64
	tab      []float64
	limit    float64
	// j0, j1 are the values whose counts reach into the table: outside
	// them nothing can fall below the threshold either.
	j0, j1 int
}

// newQArm prepares side c for the p-quantile at level alpha.
func newQArm(c Counts, p, alpha float64) *qArm {
	a := &qArm{c: c, cum: make([]int64, len(c.N))}
	var s int64
	for i, n := range c.N {
		s += n
		a.cum[i] = s
	}
	a.mix = newQuantileMix(p, s, alpha)
	a.mix.w = weight(c.DesignEffect)
	// The least of a convex sequence: walk downhill from np.
	k := min(max(int64(p*float64(s)), 0), s)
	g := a.mix.logM(k)
	for k < s && a.mix.step(k) < 0 {
		g += a.mix.step(k)
		k++
	}
	for k > 0 && a.mix.step(k-1) > 0 {
		k--
		g -= a.mix.step(k)
	}
	a.kMin, a.gMin = k, g
	return a
}

// window fills the table of log M below limit (the threshold less the
// other side's least) and the values it spans.
func (a *qArm) window(limit float64) {
	a.limit = limit
	lo, hi := a.kMin, a.kMin
	g := a.gMin
	var left []float64
	for lo > 0 {
		g -= a.mix.step(lo - 1)
		if g >= limit {
			break
		}
		lo--
		left = append(left, g)
	}
	slices.Reverse(left)
	a.tab = append(left, a.gMin)
	g = a.gMin
	for hi < a.mix.n {
		g += a.mix.step(hi)
		if g >= limit {
			break
		}
		hi++
		a.tab = append(a.tab, g)
	}
	a.k0 = lo
	// The values whose range [cum[i-1], cum[i]] meets [lo, hi].
	a.j0, _ = slices.BinarySearch(a.cum, lo)
	a.j1, _ = slices.BinarySearch(a.cum, hi+1)
	a.j0 = min(a.j0, len(a.cum)-1)
	a.j1 = min(a.j1, len(a.cum)-1)
}

// from and to are the window's reach in x, on a scale.
func (a *qArm) from(scale float64) float64 {
	if a.k0 == 0 {
		return math.Inf(-1)
	}
	return a.c.lower(a.j0) * scale
}

func (a *qArm) to(scale float64) float64 {
	if a.k0+int64(len(a.tab))-1 >= a.mix.n {
		return math.Inf(1)
	}
	return a.c.Values[a.j1] * scale
}

// g is log M at K, at least limit outside the table.
func (a *qArm) g(k int64) float64 {
	if i := k - a.k0; i >= 0 && i < int64(len(a.tab)) {
		return a.tab[i]
	}
	return max(a.limit, a.mix.logM(k))
}

// The three ways a side's evidence is read over a range of counts
// [klo, khi] (the counts a point of the other side's scale may have,
// ties and buckets leaving it uncertain): the least of log M over it
// (both), of its lower branch made nonincreasing (below: only counts too
// low, "the quantile is above x", count), or of its upper branch made
// nondecreasing (above).
const (
	both = iota
	below
	above
)

func (a *qArm) least(klo, khi int64, how int) float64 {
	switch how {
	case below:
		if khi < a.kMin {
			return a.g(khi)
		}
		return a.gMin
	case above:
		if klo > a.kMin {
			return a.g(klo)
		}
		return a.gMin
	}
	switch {
	case khi < a.kMin:
		return a.g(khi)
	case klo > a.kMin:
		return a.g(klo)
	}
	return a.gMin
}

// cursor walks one side's values at increasing points x (scaled by
// scale): the counts certainly below x (every value, or bucket, wholly
// under it) and possibly at or below it (every one starting at or
// under it), the closed range a true count of "at or below x" lies in.
type cursor struct {
	a      *qArm
	scale  float64
	ie, il int // values with upper edge < x, with lower edge <= x
}

func (c *cursor) at(x float64) (klo, khi int64) {
	v := c.a.c
	for c.ie < len(v.Values) && v.Values[c.ie]*c.scale < x {
		c.ie++
	}
	for c.il < len(v.Values) && v.lower(c.il)*c.scale <= x {
		c.il++
	}
	if c.ie > 0 {
		klo = c.a.cum[c.ie-1]
	}
	if c.il > 0 {
		khi = c.a.cum[c.il-1]
	}
	return klo, khi
}

// start puts the cursor before x0.
func (c *cursor) start(x0 float64) {
	v := c.a.c
	c.ie, _ = slices.BinarySearchFunc(v.Values, x0, func(e, x float64) int { return cmpF(e*c.scale, x) })
	c.il = c.ie
	for c.il > 0 && v.lower(c.il-1)*c.scale > x0 {
		c.il--
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// below reports whether min over x of the baseline's evidence at x and
// the canary's at x·(1+δ) (read how) falls below limit: whether the
// relative difference δ = e^u - 1 stays in the confidence sequence.
// The least is reached at an edge of a value of either side (between
// edges neither side's range grows), so only edges are visited, and
// only those inside both sides' windows.
func qBelow(b, c *qArm, u float64, how int, limit float64) bool {
	s := math.Exp(-u) // the canary's values on the baseline's scale
	// Outside the canary's window its evidence is past its limit, except
	// on the side that a one-sided reading makes flat at its least: above
	// its window for "below", beneath it for "above".
	// A window that reaches a count of none (or of all) reaches every x
	// below (above) the values too.
	lo, hi := b.from(1), b.to(1)
	if how != above {
		lo = max(lo, c.from(s))
	}
	if how != below {
		hi = min(hi, c.to(s))
	}
	if lo > hi {
		// The windows do not meet: at any x one side's evidence is past
		// its limit; the sum is not below the threshold anywhere near.
		return false
	}
	cb, cc := cursor{a: b, scale: 1}, cursor{a: c, scale: s}
	if !math.IsInf(lo, -1) {
		cb.start(lo)
		cc.start(lo)
	}
	// Edges in order: the four ascending lists (each side's lower and
	// upper edges), merged.
	ib, ic := [2]int{b.j0, b.j0}, [2]int{c.j0, c.j0}
	edge := func(a *qArm, i [2]int, k int, sc float64) float64 {
		if i[k] > a.j1 {
			return math.Inf(1)
		}
		if k == 0 {
			return a.c.lower(i[k]) * sc
		}
		return a.c.Values[i[k]] * sc
	}
	eval := func(x float64) bool {
		blo, bhi := cb.at(x)
		clo, chi := cc.at(x)
		return b.least(blo, bhi, both)+c.least(clo, chi, how) < limit
	}
	for {
		x, who, k := math.Inf(1), 0, 0
		for kk := range 2 {
			if e := edge(b, ib, kk, 1); e < x {
				x, who, k = e, 0, kk
			}
			if e := edge(c, ic, kk, s); e < x {
				x, who, k = e, 1, kk
			}
		}
		if x > hi || math.IsInf(x, 1) {
			return false
		}
		if who == 0 {
			ib[k]++
		} else {
			ic[k]++
		}
		if x >= lo && eval(x) {
			return true
		}
	}
}

// Interval is a confidence sequence's interval for the newer side's
// difference at one look: Lo and Hi bound it (either may be infinite:
// the data do not bound that side yet), Delta is the point estimate.
type Interval struct {
	Delta, Lo, Hi float64
}

// QuantileInterval is the anytime-valid interval of the relative
// difference of the q-quantiles, canary/baseline - 1, at level 1-alpha:
// at every look of a run, ever, it misses the true difference with
// probability at most alpha.
//
// Method (Howard & Ramdas 2022, the two-sample quantile test of §4,
// inverted): for a point x, the count of a side's requests at or below
// x is Binomial(n, F(x)), and at x = Q(q) F(x) = q, so the beta-binomial
// mixture M(K) above is a test martingale for that side. If the canary's
// quantile is (1+δ) times the baseline's, then at x = Q_b(q) both sides'
// martingales, the canary's read at (1+δ)x, are test martingales of
// independent data, and so is their product; the least of the product
// over every x is at most its value there. So δ is excluded only when
// min over x of M_b(x)·M_c((1+δ)x) ≥ 1/α, and the interval is every δ
// not excluded. Ties and buckets leave a count uncertain between the
// requests below x and those at or below it; taking the least over that
// range keeps the product a bound (a coupling with the uniform variables
// underneath), so the same code judges exact values and buckets. The
// lower end reads only the canary's "too few below" branch and the upper
// end its "too many", which makes each end's test monotone in δ and the
// interval an interval (found by bisection on log(1+δ) to 1e-4).
func QuantileInterval(base, canary Counts, q, alpha float64) (Interval, bool) {
	qb, _, okB := base.Quantile(q)
	qc, _, okC := canary.Quantile(q)
	if !okB || !okC || qb <= 0 {
		return Interval{}, false
	}
	b, c := newQArm(base, q, alpha), newQArm(canary, q, alpha)
	limit := math.Log(1 / alpha)
	b.window(limit - c.gMin)
	c.window(limit - b.gMin)
	iv := Interval{Delta: qc/qb - 1, Lo: math.Inf(-1), Hi: math.Inf(1)}
	uHat := math.Log(max(qc, tiny) / qb)
	// The search's reach: past it the sides' windows no longer meet, and
	// nothing changes further out.
	minB, maxB := max(b.c.lower(b.j0), tiny), max(b.c.Values[b.j1], tiny)
	minC, maxC := max(c.c.lower(c.j0), tiny), max(c.c.Values[c.j1], tiny)
	uMin, uMax := math.Log(minC/maxB)-0.01, math.Log(maxC/minB)+0.01
	in := func(u float64, how int) bool { return qBelow(b, c, u, how, limit) }
	// The lower end: the least u still in (in(below) is nonincreasing in
	// u: true from some point on).
	if !in(uMin, below) {
		out, at := uMin, max(uHat, uMin)
		for !in(at, below) && at < uMax { // the estimate in, but for ties
			out, at = at, at+0.01
		}
		if in(at, below) {
			iv.Lo = math.Expm1(bisect(out, at, 1e-4, func(u float64) bool { return in(u, below) }))
		} else {
			iv.Lo = math.Inf(1) // excluded everywhere: cannot happen with data
		}
	}
	if !in(uMax, above) {
		out, at := uMax, min(uHat, uMax)
		for !in(at, above) && at > uMin {
			out, at = at, at-0.01
		}
		iv.Hi = math.Expm1(bisect(out, at, 1e-4, func(u float64) bool { return in(u, above) }))
	}
	if iv.Lo == math.Inf(-1) {
		iv.Lo = -1 // a latency is never below zero
	}
	return iv, true
}

// quantileExcludes reports whether the confidence sequence for the
// relative difference of the q-quantiles, at level 1-alpha, lies wholly
// above d (how below: Lo > d) or wholly below it (how above: Hi < d):
// one test where QuantileInterval bisects, for a caller that needs only
// the verdict against a margin.
func quantileExcludes(base, canary Counts, q, alpha, d float64, how int) bool {
	w, b := quantileCalls(base, canary, q, alpha, d, d)
	if how == below {
		return w
	}
	return b
}

// quantileCalls is quantileExcludes both ways at once: whether the
// interval lies wholly above up (worse) and whether wholly below down
// (better).
func quantileCalls(base, canary Counts, q, alpha, up, down float64) (worse, better bool) {
	if base.Total() == 0 || canary.Total() == 0 {
		return false, false
	}
	b, c := newQArm(base, q, alpha), newQArm(canary, q, alpha)
	limit := math.Log(1 / alpha)
	b.window(limit - c.gMin)
	c.window(limit - b.gMin)
	return !qBelow(b, c, math.Log1p(up), below, limit), !qBelow(b, c, math.Log1p(down), above, limit)
}

// tiny stands for zero on a log scale.
const tiny = 1e-9

// bisect is the point between out (where ok is false) and in (where it is
// true) at which ok turns, to within tol; it returns the side that is in.
func bisect(out, in, tol float64, ok func(float64) bool) float64 {
	for math.Abs(in-out) > tol {
		mid := (in + out) / 2
		if ok(mid) {
			in = mid
		} else {
			out = mid
		}
	}
	return in
}

// RateInterval is the anytime-valid interval of the difference of two
// failure rates, canary minus baseline, from the counts of failed and all
// requests on each side, at level 1-alpha.
//
// Method: Robbins' mixture martingale for a Bernoulli rate (Robbins 1970,
// "Statistical methods related to the law of the iterated logarithm";
// the beta-binomial case of Howard et al. 2021, §3): for a rate θ, with
// f failures of n,
//
//	M(θ) = B(½+f, ½+n-f) / B(½, ½) / (θ^f (1-θ)^(n-f)),
//
// a test martingale when the true rate is θ. If the canary's rate is the
// baseline's plus d, M_b(θ)·M_c(θ+d) is one at the true θ, and the least
// over θ is at most it: d is excluded when that least reaches 1/α. Log M
// is convex in θ, so the least over θ is convex in d and the interval an
// interval (each end found by bisection to 1e-6).
func RateInterval(failedB, totalB, failedC, totalC int64, alpha float64) (Interval, bool) {
	return rateInterval([2]rateSide{{failedB, totalB, 1}, {failedC, totalC, 1}}, alpha)
}

// rateSide is one side's failed and all requests, and the weight its
// evidence is read at (see weight: 1 for independent requests).
type rateSide struct {
	failed, total int64
	w             float64
}

func (r rateSide) rate() float64 { return float64(r.failed) / float64(r.total) }

// rateInterval is RateInterval over weighted sides.
func rateInterval(s [2]rateSide, alpha float64) (Interval, bool) {
	if s[0].total <= 0 || s[1].total <= 0 {
		return Interval{}, false
	}
	t := rateT(s)
	limit := math.Log(1 / alpha)
	d := s[1].rate() - s[0].rate()
	iv := Interval{Delta: d, Lo: -1, Hi: 1}
	in := func(x float64) bool { return t(x) < limit }
	if !in(d) { // cannot happen: at the rates seen both are least
		return iv, true
	}
	if !in(-1) {
		iv.Lo = bisect(-1, d, 1e-6, in)
	}
	if !in(1) {
		iv.Hi = bisect(1, d, 1e-6, in)
	}
	return iv, true
}

// rateExcludes reports whether rateInterval's interval lies wholly above
// d (how below) or wholly below it (how above): one test where the
// interval bisects.
func rateExcludes(s [2]rateSide, alpha, d float64, how int) bool {
	if s[0].total <= 0 || s[1].total <= 0 {
		return false
	}
	hat := s[1].rate() - s[0].rate()
	if (how == below && hat <= d) || (how == above && hat >= d) {
		return false
	}
	return rateT(s)(d) >= math.Log(1/alpha)
}

// rateT is T(d) of RateInterval: the least over θ of both sides' log M
// (each at its weight) with the canary's rate θ+d.
func rateT(s [2]rateSide) func(float64) float64 {
	hb, hc := rateLogM(s[0]), rateLogM(s[1])
	// By golden section: a convex function of θ over the rates both
	// sides can have.
	return func(d float64) float64 {
		lo, hi := max(0, -d), min(1, 1-d)
		if lo > hi {
			return math.Inf(1)
		}
		f := func(th float64) float64 { return hb(th) + hc(th+d) }
		const phi = 0.6180339887498949
		x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
		f1, f2 := f(x1), f(x2)
		for hi-lo > 1e-7 {
			if f1 < f2 {
				hi, x2, f2 = x2, x1, f1
				x1 = hi - phi*(hi-lo)
				f1 = f(x1)
			} else {
				lo, x1, f1 = x1, x2, f2
				x2 = lo + phi*(hi-lo)
				f2 = f(x2)
			}
		}
		return min(f1, f2, f(lo), f(hi))
	}
}

// rateLogM is log M(θ) of a side, Robbins' Beta(½, ½) mixture at the
// side's weight, as a function of θ (+Inf where θ cannot be: 0 with a
// failure, 1 with a success).
func rateLogM(s rateSide) func(float64) float64 {
	m, f := newBetaMix(0.5, 0.5, 0, s.total), s.failed
	kf, nf := float64(f), float64(m.n)
	c := lbeta(m.a+kf, m.b+nf-kf) + m.c0
	return func(th float64) float64 {
		if th <= 0 || th >= 1 {
			if (th <= 0 && f > 0) || (th >= 1 && f < m.n) {
				return math.Inf(1)
			}
			th = min(max(th, 0), 1)
		}
		l := c
		if f > 0 {
			l -= kf * math.Log(th)
		}
		if f < m.n {
			l -= (nf - kf) * math.Log1p(-th)
		}
		return s.w * l
	}
}
