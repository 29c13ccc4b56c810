package watch

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// The verdict's states, as the JSON, /verdict and the exit code say them.
const (
	// Held: every regression is within its margin with confidence, and
	// every objective holds (or is not yet resolvable).
	Held = "held"
	// Regressed: a regression is worse beyond its margin with
	// confidence, or an objective is breached.
	Regressed = "regressed"
	// Undecided: nothing breached; some regression still holds its
	// margin inside its interval.
	Undecided = "undecided"
	// Unusable: no verdict can be given: no servers, no metrics, one
	// group only.
	Unusable = "unusable"
)

// Verdict is the canary group judged against the baseline group, over
// the whole watch, on the servers' own buckets and counts, with
// anytime-valid confidence sequences: its error is bounded at every
// look at once, so it may be read every second.
type Verdict struct {
	Baseline string `json:"baseline"`
	Canary   string `json:"canary"`
	// State is held, regressed, undecided or unusable; Why says why it is
	// unusable.
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// Line is the verdict for a person.
	Line string `json:"line"`
	// Confidence is the family-wise level (0.95), split between the
	// regressions (Bonferroni); Method names the statistics.
	Confidence  float64      `json:"confidence"`
	Method      string       `json:"method"`
	Regressions []Judged     `json:"regressions"`
	Objectives  []Objectived `json:"objectives,omitempty"`
}

// Judged is one regression judged.
type Judged struct {
	Expr string `json:"expr"`
	// Verdict is the margin verdict: "within the margin", "worse beyond
	// the margin", "undecided", "not resolvable with these buckets".
	Verdict string `json:"verdict"`
	// Baseline and Canary are each group's quantile bucket (seconds), or
	// its error rate; Delta the point estimate of the difference, Lo and
	// Hi its interval (relative for a latency, points for the error
	// rate; null when unbounded).
	Baseline Bound     `json:"baseline"`
	Canary   Bound     `json:"canary"`
	Rate     []float64 `json:"error_rates,omitempty"`
	Delta    float64   `json:"delta"`
	Lo       *float64  `json:"lo"`
	Hi       *float64  `json:"hi"`
	NBase    int64     `json:"n_baseline"`
	NCanary  int64     `json:"n_canary"`
	// DesignEffect is each group's, the baseline's then the canary's:
	// how many requests count as one independent draw (1: independent),
	// from the reads over the window.
	DesignEffect [2]float64 `json:"design_effect,omitempty"`
	// Needs is the fewest requests a group needs before the statistic
	// is judged (two beyond a tail percentile); Judged says both have.
	Needs  int64 `json:"needs"`
	Judged bool  `json:"judged"`
	// DecidedAfter is the seconds into the watch when the verdict was
	// first reached (0: not decided).
	DecidedAfter float64 `json:"decided_after_s,omitempty"`
	margin       compare.MarginVerdict
}

// Objectived is one objective checked on one group's window.
type Objectived struct {
	Expr  string `json:"expr"`
	Group string `json:"group"`
	// State is held, breached, or unresolvable (the bucket holding the
	// figure straddles the threshold) or unknown (nothing measured).
	State  string `json:"state"`
	Actual Bound  `json:"actual"`
}

// MethodName names the statistics of the verdict.
const MethodName = "anytime-valid confidence sequences over the servers' histogram buckets (quantiles: Howard & Ramdas 2022; error rate: Robbins' mixture martingale), each group's evidence read at its design effect over the reads, Bonferroni over the regressions"

// histOf is the server histogram that gives a statistic's metric.
func histOf(st compare.Stat) (func(engines.Reading) *engines.Histogram, bool) {
	switch st.Metric {
	case load.TTFT:
		return func(r engines.Reading) *engines.Histogram { return r.TTFT }, st.Q > 0
	case load.ITL, load.TPOT:
		return func(r engines.Reading) *engines.Histogram { return r.ITL }, st.Q > 0
	case load.E2E:
		return func(r engines.Reading) *engines.Histogram { return r.E2E }, st.Q > 0
	}
	return nil, false
}

// objectiveKnown says the servers' metrics give o's figure.
func objectiveKnown(o slo.Objective) bool {
	switch o.Metric {
	case "error_rate", "request_throughput", "output_throughput", "input_throughput":
		return true
	case "ttft", "itl", "tpot", "e2el", "e2e":
		return strings.HasPrefix(o.Stat, "p")
	}
	return false
}

// countsOf is a histogram's increments as compare's counts: each bucket
// a value with its lower edge, so the sequences treat each count as
// somewhere in the bucket. past says the histogram has counts past its
// last finite bound, which no interval can place.
func countsOf(h *engines.Histogram) (c compare.Counts, past int64) {
	if h == nil {
		return c, 0
	}
	prev, lower := 0.0, 0.0
	for i, cum := range h.Counts {
		n := int64(math.Round(cum - prev))
		prev = math.Max(prev, cum)
		hi := h.Bounds[i]
		if n <= 0 {
			lower = hi
			continue
		}
		if math.IsInf(hi, 1) {
			past += n
			continue
		}
		c.Values, c.N, c.Lower = append(c.Values, hi), append(c.N, n), append(c.Lower, lower)
		lower = hi
	}
	return c, past
}

// judge is the verdict over the whole watch.
func (f *fleetState) judge(base, canary string, groups map[string]*Group) Verdict {
	v := Verdict{Baseline: base, Canary: canary, Confidence: 1 - f.cfg.Alpha, Method: MethodName}
	for _, name := range groupOrder(groups, base, canary) {
		for _, o := range f.cfg.Objectives {
			v.Objectives = append(v.Objectives, checkObjective(o, groups[name]))
		}
	}
	breachedSLO := false
	for _, o := range v.Objectives {
		breachedSLO = breachedSLO || o.State == "breached"
	}
	tb, tc := f.totals[base], f.totals[canary]
	switch {
	case len(f.servers) == 0:
		v.State, v.Why = Unusable, "no servers found"
	case len(groups) < 2 || base == "" || canary == "":
		what := fmt.Sprintf("%d groups", len(groups))
		if len(groups) == 1 {
			what = "one group"
		}
		v.State, v.Why = Unusable, what+" of servers: a verdict needs a baseline and a canary (--by, --canary)"
	case groups[base] == nil || groups[canary] == nil:
		missing := base
		if groups[base] != nil {
			missing = canary
		}
		v.State, v.Why = Unusable, fmt.Sprintf("no server in group %q", missing)
	case tb == nil || tc == nil:
		v.State, v.Why = Undecided, "no metrics read yet from both groups"
	}
	if v.State == Unusable || tb == nil || tc == nil {
		if breachedSLO {
			v.State = Regressed
		} else if v.State == "" {
			v.State = Undecided
		}
		v.Line = line(v)
		return v
	}
	regs := f.cfg.Regressions
	if f.cfg.defaulted {
		regs = nil
		for _, r := range f.cfg.Regressions {
			if get, ok := histOf(r.Stat); r.Stat.ErrorRate || ok && get(*tb) != nil && get(*tc) != nil {
				regs = append(regs, r)
			}
		}
	}
	// Split over every configured regression, judged or not yet: a split
	// that changed with the histograms seen would not bound the family.
	alpha := f.cfg.Alpha / float64(len(f.cfg.Regressions))
	decided, beyond := true, false
	for _, r := range regs {
		i := slices.IndexFunc(f.cfg.Regressions, func(x compare.Regression) bool { return x.Expr == r.Expr })
		j := judgeOne(r, *tb, *tc, [2][]groupRead{f.perRead[base], f.perRead[canary]}, alpha)
		if f.decided == nil {
			f.decided = make([]float64, len(f.cfg.Regressions))
		}
		if j.margin == compare.WithinMargin || j.margin == compare.BeyondMargin {
			if f.decided[i] == 0 {
				f.decided[i] = f.elapsed.Seconds()
			}
			j.DecidedAfter = f.decided[i]
		} else {
			f.decided[i] = 0
		}
		decided = decided && j.margin == compare.WithinMargin
		beyond = beyond || j.margin == compare.BeyondMargin
		v.Regressions = append(v.Regressions, j)
	}
	switch {
	case beyond || breachedSLO:
		v.State = Regressed
	case decided:
		v.State = Held
	default:
		v.State = Undecided
	}
	v.Line = line(v)
	return v
}

// judgeOne judges one regression from both groups' totals, each
// group's evidence read at its design effect from its reads over the
// window (reads: the baseline's, the canary's).
func judgeOne(r compare.Regression, b, c engines.Reading, reads [2][]groupRead, alpha float64) (j Judged) {
	j = Judged{Expr: r.Expr, margin: compare.Undecided}
	defer func() { j.Verdict = j.margin.String() }()
	var iv compare.Interval
	var ok bool
	if r.Stat.ErrorRate {
		fb, nb, fc, nc := int64(failed(b)), int64(total(b)), int64(failed(c)), int64(total(c))
		j.NBase, j.NCanary, j.Needs = nb, nc, minRequests(r.Stat)
		if nb < j.Needs || nc < j.Needs {
			return j
		}
		j.Judged = true
		j.Rate = []float64{float64(fb) / float64(nb), float64(fc) / float64(nc)}
		j.Delta = j.Rate[1] - j.Rate[0]
		db, dc := rateDeff(reads[0]), rateDeff(reads[1])
		j.DesignEffect = [2]float64{max(db, 1), max(dc, 1)}
		iv, ok = compare.RateIntervalDependent(fb, nb, db, fc, nc, dc, alpha)
	} else {
		get, _ := histOf(r.Stat)
		hb, hc := get(b), get(c)
		j.Baseline, j.Canary = boundOf(hb, r.Stat.Q), boundOf(hc, r.Stat.Q)
		cb, pastB := countsOf(hb)
		cc, pastC := countsOf(hc)
		j.NBase, j.NCanary, j.Needs = cb.Total()+pastB, cc.Total()+pastC, minRequests(r.Stat)
		if j.NBase < j.Needs || j.NCanary < j.Needs {
			return j
		}
		j.Judged = true
		if !j.Baseline.OK || !j.Canary.OK || j.Baseline.Hi == nil || j.Canary.Hi == nil {
			j.margin = compare.NotResolvable // past the last finite bound: no interval places it
			return j
		}
		if !resolvable(j.Baseline, j.Canary, r.Tolerance) {
			j.margin = compare.NotResolvable
		}
		if x, _, ok := cb.Quantile(r.Stat.Q); ok {
			cb.DesignEffect = quantileDeff(reads[0], get, x)
		}
		if x, _, ok := cc.Quantile(r.Stat.Q); ok {
			cc.DesignEffect = quantileDeff(reads[1], get, x)
		}
		j.DesignEffect = [2]float64{max(cb.DesignEffect, 1), max(cc.DesignEffect, 1)}
		iv, ok = compare.QuantileInterval(cb, cc, r.Stat.Q, alpha)
	}
	if !ok {
		return j
	}
	j.Delta = iv.Delta
	if !math.IsInf(iv.Lo, 0) {
		j.Lo = &iv.Lo
	}
	if !math.IsInf(iv.Hi, 0) {
		j.Hi = &iv.Hi
	}
	switch {
	case iv.Lo > r.Tolerance:
		j.margin = compare.BeyondMargin
	case iv.Hi <= r.Tolerance:
		j.margin = compare.WithinMargin
	case j.margin != compare.NotResolvable:
		j.margin = compare.Undecided
	}
	return j
}

// resolvable says whether the quantiles' buckets could ever show the
// margin exceeded or kept: with the canary's quantile in (cLo, cHi] and
// the baseline's in (bLo, bHi], the ratio's interval can reach no
// further than cLo/bHi below and cHi/bLo above. When the margin lies
// strictly inside that span (vLLM's TTFT buckets are 33-50 % wide near
// a second, so a 10 % margin does), no number of requests decides, and
// the verdict says "not resolvable with these buckets" rather than
// interpolate a point inside them.
func resolvable(b, c Bound, tolerance float64) bool {
	if b.Hi == nil || c.Hi == nil {
		return false
	}
	bestLo := c.Lo / *b.Hi - 1
	bestHi := math.Inf(1)
	if b.Lo > 0 {
		bestHi = *c.Hi/b.Lo - 1
	}
	return bestLo > tolerance || bestHi <= tolerance
}

// quantileDeff is the design effect of a group's count at or below x
// over its reads: each read a second of compare's, each bucket's own
// increment that many values at its upper bound.
func quantileDeff(reads []groupRead, get func(engines.Reading) *engines.Histogram, x float64) float64 {
	return compare.DesignEffect(func(yield func(sec int32, v float64, n int64)) {
		for _, r := range reads {
			h := get(r.d)
			if h == nil {
				continue
			}
			below := 0.0
			for i, cum := range h.Counts {
				if n := int64(math.Round(cum - below)); n > 0 {
					yield(r.read, h.Bounds[i], n)
				}
				below = max(below, cum)
			}
		}
	}, x)
}

// rateDeff is the design effect of a group's failures over its reads.
func rateDeff(reads []groupRead) float64 {
	return compare.DesignEffect(func(yield func(sec int32, v float64, n int64)) {
		for _, r := range reads {
			n, k := int64(total(r.d)), int64(failed(r.d))
			if n-k > 0 {
				yield(r.read, 0, n-k)
			}
			if k > 0 {
				yield(r.read, 1, k)
			}
		}
	}, 0.5)
}

// minRequests is the fewest requests a group needs before a statistic
// is judged: enough that two lie beyond a tail percentile.
func minRequests(st compare.Stat) int64 {
	tail := min(st.Q, 1-st.Q)
	if tail <= 0 {
		return 30
	}
	return max(30, int64(2/tail+0.5))
}

// checkObjective checks o on g's window. A latency's figure is a bucket:
// the objective holds when the whole bucket does, is breached when none
// of it does, and is unresolvable otherwise.
func checkObjective(o slo.Objective, g *Group) Objectived {
	out := Objectived{Expr: o.Expr, Group: g.Name, State: "unknown"}
	less := o.Op == "<" || o.Op == "<="
	var b Bound
	switch o.Metric {
	case "error_rate":
		if !g.ErrorKnown {
			return out
		}
		b = point(g.ErrorRate)
	case "request_throughput":
		b = point(g.ReqPerSec)
	case "output_throughput":
		b = point(g.OutTokPerSec)
	case "input_throughput":
		b = point(g.InTokPerSec)
	default:
		var q float64
		if _, err := fmt.Sscanf(o.Stat, "p%g", &q); err != nil {
			return out
		}
		h := map[string]*engines.Histogram{"ttft": g.windowSum.TTFT, "itl": g.windowSum.ITL, "tpot": g.windowSum.ITL,
			"e2el": g.windowSum.E2E, "e2e": g.windowSum.E2E}[o.Metric]
		b = boundOf(h, q/100)
		if !b.OK {
			return out
		}
	}
	out.Actual = b
	lo, hi := b.Lo, b.Upper()
	switch {
	case less && hi <= o.Value, !less && lo >= o.Value:
		out.State = "held"
	case less && lo >= o.Value, !less && hi <= o.Value:
		out.State = "breached"
	default:
		out.State = "unresolvable"
	}
	return out
}

// point is an exact figure as a bound.
func point(v float64) Bound { return Bound{Lo: v, Hi: &v, OK: true} }

// line is the verdict in a line.
func line(v Verdict) string {
	switch v.State {
	case Unusable:
		return "no verdict: " + v.Why
	}
	var worse, undecided, coarse []string
	for _, j := range v.Regressions {
		switch j.margin {
		case compare.BeyondMargin:
			worse = append(worse, fmt.Sprintf("%s (%+.0f%%, after %s)", j.Expr, 100*j.Delta, time.Duration(j.DecidedAfter*float64(time.Second)).Round(time.Second)))
		case compare.Undecided:
			undecided = append(undecided, j.Expr)
		case compare.NotResolvable:
			coarse = append(coarse, fmt.Sprintf("%s (canary %s, baseline %s)", j.Expr, FormatBound(j.Canary), FormatBound(j.Baseline)))
		}
	}
	for _, o := range v.Objectives {
		if o.State == "breached" {
			worse = append(worse, fmt.Sprintf("%s on %s", o.Expr, o.Group))
		}
	}
	conf := fmt.Sprintf("%.0f%%", 100*v.Confidence)
	// The canary group by its role and name, once where the name is the
	// role ("canary regressed", not "canary canary regressed").
	who := "canary " + v.Canary
	if strings.EqualFold(v.Canary, "canary") {
		who = v.Canary
	}
	switch v.State {
	case Regressed:
		return fmt.Sprintf("%s regressed against %s: %s (%s confidence, anytime-valid)", who, v.Baseline, strings.Join(worse, "; "), conf)
	case Held:
		return fmt.Sprintf("%s within every margin of %s (%s confidence, anytime-valid)", who, v.Baseline, conf)
	}
	if v.Why != "" {
		return fmt.Sprintf("%s against %s: undecided: %s", who, v.Baseline, v.Why)
	}
	var parts []string
	if len(undecided) > 0 {
		parts = append(parts, "undecided on "+strings.Join(undecided, ", "))
	}
	if len(coarse) > 0 {
		parts = append(parts, "not resolvable with these buckets: "+strings.Join(coarse, ", "))
	}
	return fmt.Sprintf("%s against %s: %s", who, v.Baseline, strings.Join(parts, "; "))
}
