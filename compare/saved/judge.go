// Package saved judges two saved results (infertop run --json): a
// baseline and a newer run, such as a CI run against the baseline kept
// from the last release. Each statistic is judged from the results'
// latency histograms with compare's anytime-valid confidence sequences
// (compare.QuantileInterval, compare.RateInterval): the same method the
// live comparison offers, from counts per value, so two files that hold
// no requests but their histograms are judged as two live sides are.
// The gates are the live comparison's: --regression margins judged
// against the intervals, and SLO objectives checked on the newer result.
//
// Results that are not two runs of one load (another API, another load
// shape, a capacity search) are refused by name unless forced, and
// every file is someone else's: read bounded, its text sanitised before
// a line quotes it.
package saved

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// ErrNotComparable is two results that are not runs of one load on one
// kind of endpoint: judged only with Options.Force.
var ErrNotComparable = errors.New("cannot be compared")

// Options say what to judge.
type Options struct {
	// Regressions are the newer result's allowed worsenings
	// ('ttft_p99<+10%'), judged against each statistic's interval.
	Regressions []compare.Regression
	// Objectives are SLO expressions checked on the newer result, over
	// its run and each phase (as run --slo checks them).
	Objectives []string
	// Confidence is family-wise, over every statistic and phase judged
	// (0: compare.DefaultConfidence).
	Confidence float64
	// Force judges results that differ (API, load, phases, kind), each
	// difference named in Judgement.Forced.
	Force bool
}

// Judgement is two results judged.
type Judgement struct {
	// Base and New are the results' names; Heading a line on each.
	Base, New  string
	BaseAbout  string
	NewAbout   string
	Forced     []string
	PhasesNote string
	// Open says TTFT and E2E were judged from the intended send time
	// (open loop), as the live comparison and the objectives judge them.
	Open bool
	// Confidence is each interval's, Family over all of them.
	Confidence, Family float64
	Scopes             []Scope
	Gates              []Gate
	SLO                []report.VerdictJSON
}

// Scope is what one stretch of both runs compares: a phase of each (the
// same knobs), or the whole runs.
type Scope struct {
	// Label names it ("" when there is one scope).
	Label string
	Rows  []Row
}

// Row is one statistic judged in a scope.
type Row struct {
	Stat compare.Stat
	// Base and New are the statistic (ms, or a fraction for the error
	// rate) over NBase and NNew requests.
	Base, New   float64
	NBase, NNew int64
	// Judged says the interval was computed: both sides had the
	// statistic's fewest requests.
	Judged   bool
	Interval compare.Interval
	Verdict  compare.Verdict
}

// Gate is one regression judged in one scope.
type Gate struct {
	Regression compare.Regression
	Scope      string
	Row        Row
	Margin     compare.MarginVerdict
}

// Breached says the regression's margin is exceeded with confidence.
func (g Gate) Breached() bool { return g.Margin == compare.BeyondMargin }

// Judge judges n against b. Results that cannot be compared are an
// error wrapping ErrNotComparable, naming every difference, unless
// o.Force; a histogram that does not decode, an ErrUnusable.
func Judge(b, n *Result, o Options) (*Judgement, error) {
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = compare.DefaultConfidence
	}
	for _, r := range o.Regressions {
		if !r.Stat.ErrorRate && r.Stat.Q == 0 {
			return nil, fmt.Errorf("regression %s: a mean has no anytime interval (its latencies are unbounded): name a percentile", r.Expr)
		}
	}
	j := &Judgement{Base: b.Name, New: n.Name, BaseAbout: about(b), NewAbout: about(n), Family: o.Confidence}
	diffs := differences(b, n)
	scopes, note, phaseDiff := matchScopes(b, n)
	if phaseDiff != "" {
		diffs = append(diffs, phaseDiff)
	}
	if len(diffs) > 0 && !o.Force {
		return nil, fmt.Errorf("%s and %s %w: %s (--force compares them anyway)", b.Name, n.Name, ErrNotComparable, strings.Join(diffs, "; "))
	}
	j.Forced, j.PhasesNote = diffs, note
	var extra []compare.Stat
	if b.Run.Output != nil || n.Run.Output != nil { // answers judged: as the live comparison, the invalid rate too
		extra = append(extra, compare.InvalidRate())
	}
	stats := compare.Stats(o.Regressions, extra...)
	alpha := (1 - o.Confidence) / float64(len(stats)*len(scopes))
	j.Confidence = 1 - alpha
	for _, sc := range scopes {
		open := isOpen(sc.base) && isOpen(sc.new)
		j.Open = j.Open || open
		s := Scope{Label: sc.label}
		for _, st := range stats {
			r, err := judgeStat(st, sc, open, alpha)
			if err != nil {
				return nil, err
			}
			s.Rows = append(s.Rows, r)
		}
		j.Scopes = append(j.Scopes, s)
	}
	for _, reg := range o.Regressions {
		for _, s := range j.Scopes {
			i := slices.IndexFunc(s.Rows, func(r Row) bool { return r.Stat.Name == reg.Stat.Name })
			j.Gates = append(j.Gates, Gate{Regression: reg, Scope: s.Label, Row: s.Rows[i], Margin: margin(s.Rows[i], reg.Tolerance)})
		}
	}
	if len(o.Objectives) > 0 {
		vs, err := report.CheckMerged(o.Objectives, n.Run, n.Phases)
		if err != nil {
			return nil, err
		}
		j.SLO = vs
	}
	return j, nil
}

// margin is a regression's margin judged against a row's interval.
func margin(r Row, tolerance float64) compare.MarginVerdict {
	switch {
	case !r.Judged:
		return compare.Undecided
	case r.Interval.Lo > tolerance:
		return compare.BeyondMargin
	case r.Interval.Hi <= tolerance:
		return compare.WithinMargin
	}
	return compare.Undecided
}

// about is a line on what a result measured, its text sanitised.
func about(r *Result) string {
	m := r.Manifest
	s := fmt.Sprintf("%s %s", sanitize.Short(m.Model, maxNameBytes), sanitize.Short(m.API, 20))
	if !m.Start.IsZero() {
		s += ", " + m.Start.UTC().Format("2006-01-02 15:04 UTC")
	}
	if m.Version != "" {
		s += ", infertop " + sanitize.Short(m.Version, 40)
	}
	return s
}

// loadSettings are the flags that shape a load beyond its knobs: two
// runs that differ in one put different loads on their endpoints.
var loadSettings = []string{"arrivals", "stages", "ramp", "dataset", "prefix-tokens", "prefix-groups", "trace", "trace-window",
	"trace-loop", "trace-speed", "sessions", "turns", "think", "fixed-output", "batch", "of"}

// differences name what makes n no run of b's load on b's kind of
// endpoint. The URL, the model and infertop's version may differ: a
// newer build, served elsewhere, is what a comparison is for.
func differences(b, n *Result) []string {
	var out []string
	txt := func(s string) string { return sanitize.Short(s, maxNameBytes) }
	for _, r := range []*Result{b, n} {
		if r.Kind != "" {
			out = append(out, r.Name+" is "+r.Kind)
		}
	}
	bm, nm := b.Manifest, n.Manifest
	if bm.API != nm.API {
		out = append(out, fmt.Sprintf("another endpoint API (%s, not %s)", txt(nm.API), txt(bm.API)))
	}
	if bm.Stream != nm.Stream {
		out = append(out, fmt.Sprintf("streaming differs (stream=%t, not %t)", nm.Stream, bm.Stream))
	}
	if bm.Knobs != nm.Knobs {
		out = append(out, fmt.Sprintf("another load (%s, not %s)", knobsText(nm.Knobs), knobsText(bm.Knobs)))
	}
	for _, k := range loadSettings {
		if bm.Settings[k] != nm.Settings[k] {
			out = append(out, fmt.Sprintf("another load (--%s %q, not %q)", k, txt(nm.Settings[k]), txt(bm.Settings[k])))
		}
	}
	return out
}

// knobsText is a setting of the knobs in words.
func knobsText(k report.KnobsJSON) string {
	level := fmt.Sprintf("concurrency %d", k.Concurrency)
	if k.Mode == "open" {
		level = fmt.Sprintf("rate %g/s", k.Rate)
	}
	return fmt.Sprintf("%s, prompt %d, output %d", level, k.PromptTokens, k.OutputTokens)
}

// scope is one stretch of both results, before it is judged.
type scope struct {
	label             string
	base, new         report.PhaseJSON
	baseHist, newHist map[string]string
}

// matchScopes is what is compared: each phase with its counterpart when
// both results ran the same phases (the warm-up left out), else the
// whole runs. note says which; diff names phases that differ (a
// difference only --force compares past).
func matchScopes(b, n *Result) (scopes []scope, note, diff string) {
	bp, np := judgedPhases(b), judgedPhases(n)
	whole := []scope{{base: b.Run, new: n.Run, baseHist: b.Hist, newHist: n.Hist}}
	same := len(bp) == len(np) && len(bp) > 0
	for i := 0; same && i < len(bp); i++ {
		same = bp[i].Knobs == np[i].Knobs
	}
	switch {
	case !same:
		return whole, "the phases differ: the whole runs judged", fmt.Sprintf("other phases (%s, not %s)", phasesText(np), phasesText(bp))
	case len(bp) > maxPhases:
		return whole, fmt.Sprintf("%d phases each, more than %d: the whole runs judged", len(bp), maxPhases), ""
	case len(bp) == 1:
		return []scope{{base: bp[0], new: np[0], baseHist: b.PhaseHist[bp[0].ID], newHist: n.PhaseHist[np[0].ID]}},
			"one phase each (" + knobsText(bp[0].Knobs) + ")" + warmupNote(b, n), ""
	}
	for i := range bp {
		scopes = append(scopes, scope{label: fmt.Sprintf("phase %d (%s)", i+1, knobsText(bp[i].Knobs)), base: bp[i], new: np[i],
			baseHist: b.PhaseHist[bp[i].ID], newHist: n.PhaseHist[np[i].ID]})
	}
	return scopes, fmt.Sprintf("%d phases each, the same knobs: judged phase by phase", len(bp)) + warmupNote(b, n), ""
}

// warmupNote says the warm-up was left out, when either had one.
func warmupNote(b, n *Result) string {
	for _, r := range []*Result{b, n} {
		for _, p := range r.Phases {
			if p.Warmup && p.Sent > 0 {
				return ", the warm-up left out"
			}
		}
	}
	return ""
}

// judgedPhases are a result's phases with requests, but the warm-up.
func judgedPhases(r *Result) []report.PhaseJSON {
	var out []report.PhaseJSON
	for _, p := range r.Phases {
		if !p.Warmup && p.Sent > 0 {
			out = append(out, p)
		}
	}
	return out
}

// phasesText names phases' knobs, the first few.
func phasesText(ps []report.PhaseJSON) string {
	var parts []string
	for i, p := range ps {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, knobsText(p.Knobs))
	}
	return fmt.Sprintf("%d: %s", len(ps), strings.Join(parts, "; "))
}

// isOpen says every request of p timed to its end was the open loop's
// (it has a queue time): its TTFT and E2E are judged from the intended
// send time, as slo.TimingOf tells it.
func isOpen(p report.PhaseJSON) bool {
	var lat [load.NumMetrics]load.Dist
	lat[load.Queue].Count, lat[load.E2E].Count = p.Latency[report.MetricKey(load.Queue)].Count, p.Latency[report.MetricKey(load.E2E)].Count
	return slo.TimingOf(lat) == slo.OpenTiming
}

// judgeStat judges one statistic in one scope at level 1-alpha.
func judgeStat(st compare.Stat, sc scope, open bool, alpha float64) (Row, error) {
	r := Row{Stat: st}
	var iv compare.Interval
	var ok bool
	if st.ErrorRate {
		fb, tb := outcomes(st, sc.base)
		fn, tn := outcomes(st, sc.new)
		r.NBase, r.NNew = tb, tn
		if tb == 0 || tn == 0 {
			return r, nil
		}
		r.Base, r.New = float64(fb)/float64(tb), float64(fn)/float64(tn)
		r.Interval.Delta = r.New - r.Base
		if tb < fewest(st) || tn < fewest(st) {
			return r, nil
		}
		iv, ok = compare.RateInterval(fb, tb, fn, tn, alpha)
	} else {
		m := st.Metric
		if open && m == load.TTFT {
			m = load.TTFTIntended
		} else if open && m == load.E2E {
			m = load.E2EIntended
		}
		key := report.MetricKey(m)
		cb, err := counts(sc.base, sc.baseHist, key)
		if err != nil {
			return r, err
		}
		cn, err := counts(sc.new, sc.newHist, key)
		if err != nil {
			return r, err
		}
		r.NBase, r.NNew = cb.Total(), cn.Total()
		var okB, okN bool
		r.Base, _, okB = cb.Quantile(st.Q)
		r.New, _, okN = cn.Quantile(st.Q)
		if !okB || !okN || r.Base <= 0 {
			return r, nil
		}
		r.Interval.Delta = r.New/r.Base - 1
		if r.NBase < fewest(st) || r.NNew < fewest(st) {
			return r, nil
		}
		iv, ok = compare.QuantileInterval(cb, cn, st.Q, alpha)
	}
	if !ok {
		return r, nil
	}
	r.Judged, r.Interval = true, iv
	r.Verdict = verdict(st, iv)
	return r, nil
}

// verdict is an interval's verdict on the least difference that
// matters (compare's defaults: 5 % of a latency, 0.1 points of the
// error rate), as the live comparison says it.
func verdict(st compare.Stat, iv compare.Interval) compare.Verdict {
	least := compare.DefaultMinEffect
	if st.ErrorRate {
		least = compare.DefaultMinErrorEffect
	}
	switch {
	case iv.Lo > least:
		return compare.Worse
	case iv.Hi < -least:
		return compare.Better
	}
	return compare.NoDifference
}

// fewest is the fewest requests a side needs before st is judged, as the
// live comparison asks: 30, and enough that about two lie beyond a
// tail percentile (200 for a p99).
func fewest(st compare.Stat) int64 {
	if st.ErrorRate || st.Q == 0 {
		return 30
	}
	return int64(max(30, int(2/min(st.Q, 1-st.Q)+0.5)))
}

// outcomes are a rate's bad and all outcomes in a phase: its failures,
// or for the invalid rate its invalid and all judged answers (none when
// nothing was judged: the rate stays unjudged).
func outcomes(st compare.Stat, p report.PhaseJSON) (bad, total int64) {
	if !st.Invalid {
		return failures(p)
	}
	if p.Output == nil {
		return 0, 0
	}
	return p.Output.Invalid, p.Output.Valid + p.Output.Invalid
}

// failures are a phase's failed requests and all its requests, as an
// error_rate objective counts them: the incomplete (cut off at the end)
// and the open loop's dropped arrivals are failures too.
func failures(p report.PhaseJSON) (failed, total int64) {
	failed = p.Failed + p.Incomplete + p.Dropped
	return failed, failed + p.Completed
}

// counts is the histogram of key in hists as counts per value, in
// milliseconds: each bucket's highest value (as the result's own
// percentiles read it). A phase that counts values must have the
// histogram; it must decode within report's bounds, be of the engine's
// geometry and count at most maxCount.
func counts(p report.PhaseJSON, hists map[string]string, key string) (compare.Counts, error) {
	enc, ok := hists[key]
	if !ok {
		if n := p.Latency[key].Count; n > 0 {
			return compare.Counts{}, fmt.Errorf("%s: %d values and no histogram: %w", key, n, ErrUnusable)
		}
		return compare.Counts{}, nil
	}
	h, err := report.DecodeHistogram(enc)
	if err != nil {
		return compare.Counts{}, fmt.Errorf("%s: %s: %w", key, sanitize.Short(err.Error(), maxNameBytes), ErrUnusable)
	}
	if !load.SameGeometry(h) {
		return compare.Counts{}, fmt.Errorf("%s: a histogram of %d..%d at %d digits, not infertop's: %w", key,
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), ErrUnusable)
	}
	return countsOf(h, key)
}

// countsOf lists h's buckets with values.
func countsOf(h *hdr.Histogram, key string) (compare.Counts, error) {
	var c compare.Counts
	var total int64
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		if bar.Count < 0 || bar.Count > maxCount-total {
			return compare.Counts{}, fmt.Errorf("%s: a histogram past %d values: %w", key, int64(maxCount), ErrUnusable)
		}
		total += bar.Count
		c.Values = append(c.Values, float64(bar.To)/1e3)
		c.N = append(c.N, bar.Count)
	}
	return c, nil
}

// Regressed says a gate did not pass: a regression breached, or judged
// in no scope (too few requests: a gate with nothing measured never
// passes), or an objective breached on the newer result.
func (j *Judgement) Regressed() bool { return len(j.Failures()) > 0 }

// Failures are the gates that did not pass, a line each: the breaches
// first (regressions, then objectives), then the regressions judged in
// no scope.
func (j *Judgement) Failures() []string {
	var out, unjudged []string
	judged := map[string]bool{}
	for _, g := range j.Gates {
		judged[g.Regression.Expr] = judged[g.Regression.Expr] || g.Row.Judged
		if g.Breached() {
			out = append(out, "regression "+g.String())
		}
	}
	for _, v := range j.SLO {
		if !v.Held {
			out = append(out, "objective "+v.Text)
		}
	}
	seen := map[string]bool{}
	for _, g := range j.Gates {
		if !judged[g.Regression.Expr] && !seen[g.Regression.Expr] {
			seen[g.Regression.Expr] = true
			unjudged = append(unjudged, "regression "+g.String())
		}
	}
	return append(out, unjudged...)
}

// breached says a regression or an objective was breached (not only
// left unjudged).
func (j *Judgement) breached() bool {
	for _, g := range j.Gates {
		if g.Breached() {
			return true
		}
	}
	for _, v := range j.SLO {
		if !v.Held && v.Known {
			return true
		}
	}
	return false
}

// String says how the gate came out, and why.
func (g Gate) String() string {
	r := g.Row
	where := ""
	if g.Scope != "" {
		where = " in " + g.Scope
	}
	tol := deltaText(r.Stat, g.Regression.Tolerance)
	switch {
	case !r.Judged:
		return fmt.Sprintf("%s: not judged%s: too few requests (%d and %d; %s needs %d a side)", g.Regression.Expr, where,
			r.NBase, r.NNew, r.Stat.Name, fewest(r.Stat))
	case g.Breached():
		return fmt.Sprintf("%s: breached%s: %s: %s (%s), above %s with confidence", g.Regression.Expr, where, g.Margin,
			deltaText(r.Stat, r.Interval.Delta), intervalText(r), tol)
	case g.Margin == compare.WithinMargin:
		return fmt.Sprintf("%s: held%s, %s: %s (%s), at most %s with confidence", g.Regression.Expr, where, g.Margin,
			deltaText(r.Stat, r.Interval.Delta), intervalText(r), tol)
	}
	return fmt.Sprintf("%s: held%s, %s: %s (%s): the interval holds %s", g.Regression.Expr, where, g.Margin,
		deltaText(r.Stat, r.Interval.Delta), intervalText(r), tol)
}

// unit and deltaUnit are a statistic's units as compare's JSON names
// them, for compare.ValueText and compare.DeltaText.
func unit(st compare.Stat) string {
	if st.ErrorRate {
		return "fraction"
	}
	return "ms"
}

func deltaText(st compare.Stat, d float64) string {
	if st.ErrorRate {
		return compare.DeltaText("rate", d)
	}
	return compare.DeltaText("relative", d)
}

// intervalText is a row's interval, "+12%…+31%" ("—" when not judged).
func intervalText(r Row) string {
	if !r.Judged {
		return "—"
	}
	return deltaText(r.Stat, r.Interval.Lo) + "…" + deltaText(r.Stat, r.Interval.Hi)
}

// clampCount is n as an int for compare's text helpers.
func clampCount(n int64) int { return int(min(n, math.MaxInt32)) }
