package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Verdict is what a comparison says of one statistic.
type Verdict int

// The verdicts.
const (
	// NotEnough: a side has too few requests (Stat.minSamples) or the
	// comparison spans fewer than MinSeconds seconds.
	NotEnough Verdict = iota
	// NoDifference: the interval holds zero.
	NoDifference
	// Worse: the whole interval is above zero (slower, or more errors).
	Worse
	// Better: the whole interval is below zero.
	Better
	// Unresolvable: no difference shown, and both sides' quantiles lie in
	// one server bucket wider than the least difference that matters: no
	// number of requests can show one (Result.Resolution).
	Unresolvable
)

func (v Verdict) String() string { return v.text("canary") }

// text is the verdict with who for its subject: a Pair's canary, a
// split's newer group ("group worse").
func (v Verdict) text(who string) string {
	if who != "" {
		who += " "
	}
	switch v {
	case Worse:
		return who + "worse"
	case Better:
		return who + "better"
	case NoDifference:
		return "no difference"
	case Unresolvable:
		return "not resolvable with these buckets"
	}
	return "not enough data"
}

// Defaults of a comparison.
const (
	// DefaultConfidence is the family-wise confidence: the chance that no
	// interval of the comparison misses its true difference. Each of K
	// statistics gets 1-(1-DefaultConfidence)/K (Bonferroni): 99 % for
	// the five defaults.
	DefaultConfidence = 0.95
	// DefaultResamples is the bootstrap's replicates.
	DefaultResamples = 1000
	// MinSeconds is the fewest seconds with requests before a statistic is
	// judged: the bootstrap resamples blocks of seconds and needs several,
	// and a server's state (a closed loop locked in step with its batches)
	// lasts seconds: with 10, two identical sims were called different in
	// 16 of 100 runs (see blockSeconds).
	MinSeconds = 20
)

// Options configure a comparison.
type Options struct {
	// Regressions are the allowed worsenings the canary is judged against.
	Regressions []Regression
	// Confidence is family-wise (0: DefaultConfidence).
	Confidence float64
	// Resamples is the bootstrap's replicates (0: DefaultResamples).
	Resamples int
	// Seed makes the resampling repeatable.
	Seed uint64
	// MinEffect is the least difference called a difference: a latency's
	// relative (0: DefaultMinEffect), an error rate's in points (0:
	// DefaultMinErrorEffect); negative: none. Two endpoints are never
	// quite alike (two identical sims on one busy machine differed by
	// 2 % at TPOT p50, with an interval of +0.2 %…+3.0 %): a rollout asks
	// whether the canary is worse by enough to matter.
	MinEffect, MinErrorEffect float64
	// MinSeconds is the fewest seconds with requests before a statistic is
	// judged (0: MinSeconds). Fewer make the interval rest on a handful of
	// blocks, narrower than the truth; tests that cannot wait lower it.
	MinSeconds int
	// Anytime judges with confidence sequences (QuantileInterval,
	// RateInterval) instead of the paired block bootstrap: intervals valid
	// at every look at once, over every request of the setting, each
	// side's evidence read at its design effect (dependence.go). The
	// commands make it the default (--verdict); the zero Options are the
	// bootstrap's, whose interval holds for one look: quicker on a tail
	// (TTFT p99 +20 % at 20 requests a second: a median 47 s against
	// 265 s), but read every second it calls identical sides different in
	// about 1 run of 10. A mean (e2el_mean) is always the bootstrap's: a
	// mean of unbounded latencies has no confidence sequence without a
	// bound on them.
	Anytime bool
}

// minSeconds is o's MinSeconds or the default.
func (o Options) minSeconds() int {
	if o.MinSeconds > 0 {
		return o.MinSeconds
	}
	return MinSeconds
}

// The least differences a verdict calls.
const (
	DefaultMinEffect      = 0.05
	DefaultMinErrorEffect = 0.001
)

// Stats are the statistics a comparison with regs judges: the defaults,
// then extra (the invalid rate where the load judges answers), then
// every statistic a regression names, each once.
func Stats(regs []Regression, extra ...Stat) []Stat {
	out := DefaultStats()
	add := func(st Stat) {
		if !slices.ContainsFunc(out, func(s Stat) bool { return s.Name == st.Name }) {
			out = append(out, st)
		}
	}
	for _, st := range extra {
		add(st)
	}
	for _, r := range regs {
		add(r.Stat)
	}
	return out
}

// Result is the comparison of one statistic.
type Result struct {
	Stat Stat
	// Baseline and Canary are the statistic on each side: milliseconds for
	// a latency, a fraction for the error rate. NBaseline and NCanary are
	// the samples behind them; Seconds the seconds the comparison spans.
	Baseline, Canary   float64
	NBaseline, NCanary int
	Seconds            int
	// Delta is the canary's difference: relative for a latency (0.38 is
	// 38 % slower), in rate for the error rate (0.005 is +0.5pp). Lo and Hi
	// bound it at the comparison's per-statistic confidence.
	// Lo or Hi is infinite when the data do not bound that side yet (a
	// p99 over a few hundred requests: the anytime statistics' upper end).
	Delta, Lo, Hi float64
	Verdict       Verdict
	// Resolution is the relative width of the server bucket both sides'
	// quantiles lie in, when they lie in one (0: exact values, or
	// different buckets): a difference smaller is not resolvable.
	Resolution float64
}

// Gate is one regression judged: Breached when the canary's difference is
// above the tolerance with confidence (the interval's lower bound is).
type Gate struct {
	Regression Regression
	Result     Result
	Breached   bool
	// Margin is the regression's margin judged: beyond it (Breached),
	// within it, undecided, or not resolvable with the buckets.
	Margin MarginVerdict
	// How the comparison named its sides and the seconds it needed, for
	// String (zero: a Pair's, and MinSeconds).
	sides      [2]string
	minSeconds int
	anytime    bool
}

// Comparison is both sides compared at one moment.
type Comparison struct {
	Results []Result
	Gates   []Gate
	// Confidence is each interval's; Family the comparison's as a whole.
	Confidence, Family float64
	Resamples          int
	// MinSeconds is the seconds a statistic needed to be judged.
	MinSeconds int
	// Sides name what was compared, for Line and WriteTable: empty for a
	// Pair's ("baseline", "canary"); a split's groups, "group 1 (fp_a)"
	// and "group 2 (fp_b)".
	Sides [2]string
	// Method says how it was judged (AnytimeMethod or Method); Anytime
	// is true for the confidence sequences, whose intervals hold at every
	// look at once.
	Method  string
	Anytime bool
}

// Worse reports whether any statistic came out worse on the canary with
// confidence (whatever the regressions allow).
func (c Comparison) Worse() bool {
	for _, r := range c.Results {
		if r.Verdict == Worse {
			return true
		}
	}
	return false
}

// side is the name of side i in lines ("baseline", "canary" by default).
func (c Comparison) side(i int) string { return sideName(c.Sides, i) }

func sideName(sides [2]string, i int) string {
	if sides[i] != "" {
		return sides[i]
	}
	return Side(i).String()
}

// Breached reports whether a regression is breached with confidence.
func (c Comparison) Breached() bool {
	for _, g := range c.Gates {
		if g.Breached {
			return true
		}
	}
	return false
}

// Compare judges every statistic over the requests held now: with the
// confidence sequences over every request of the setting (see
// judgeAnytime) with Options.Anytime, else a paired block bootstrap
// over the newest (see judge).
func (s *Samples) Compare(o Options) Comparison {
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	narrow := func(st Stat, lo, hi float64) (float64, float64) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.epoch != epoch { // started over while judged: not this setting's
			return lo, hi
		}
		return s.held.narrow(st.Name, lo, hi)
	}
	return compareStats(s.stats, o, false, [2]string{}, s.snapshot, s.tallies, narrow)
}

// compareStats judges every statistic of stats: with the confidence
// sequences over the tallies (o.Anytime, but never for a mean), else
// with the bootstrap over the samples data gives; shared pairs
// only the seconds both sides have samples in (see judge), sides name
// them. The sequences' intervals are narrowed by the looks before
// (narrow; nil: none).
func compareStats(stats []Stat, o Options, shared bool, sides [2]string, data func(Stat) [2][]sample, tallies func(Stat) [2]tally, narrow narrowing) Comparison {
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = DefaultConfidence
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	k := len(stats)
	alpha := (1 - o.Confidence) / float64(k)
	c := Comparison{Confidence: 1 - alpha, Family: o.Confidence, Resamples: o.Resamples, MinSeconds: o.minSeconds(), Sides: sides,
		Method: Method, Anytime: o.Anytime}
	if o.Anytime {
		c.Method = AnytimeMethod
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x636f6d70617265))
	byName := map[string]Result{}
	for _, st := range stats {
		var r Result
		if !o.Anytime || (!st.ErrorRate && st.Q == 0) {
			r = judge(st, data(st), judging{o.Resamples, alpha, o.minSeconds(), shared}, rng)
		} else {
			r = judgeAnytime(st, tallies(st), alpha, o.minSeconds())
			if r.Verdict != NotEnough && narrow != nil {
				r.Lo, r.Hi = narrow(st, r.Lo, r.Hi)
				r.Verdict = verdictOf(r.Lo, r.Hi)
			}
		}
		min := effect(o.MinEffect, DefaultMinEffect)
		if st.ErrorRate {
			min = effect(o.MinErrorEffect, DefaultMinErrorEffect)
		}
		switch {
		case r.Verdict == Worse && r.Lo <= min, r.Verdict == Better && r.Hi >= -min:
			r.Verdict = NoDifference // significant, but too small to matter
		}
		if r.Verdict == NoDifference && r.Resolution > min {
			r.Verdict = Unresolvable
		}
		c.Results = append(c.Results, r)
		byName[st.Name] = r
	}
	for _, reg := range o.Regressions {
		r := byName[reg.Stat.Name]
		c.Gates = append(c.Gates, Gate{Regression: reg, Result: r, Breached: r.Verdict != NotEnough && r.Lo > reg.Tolerance,
			Margin: margin(r, reg.Tolerance), sides: sides, minSeconds: c.MinSeconds, anytime: c.Anytime})
	}
	return c
}

// effect is a minimum effect given (v), or its default.
func effect(v, def float64) float64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}

// sideData is one side's samples of a statistic, sorted by value, with the
// block (the second) of each and the count per block.
type sideData struct {
	v     []float64
	blk   []int32
	count []int
}

// judge compares one statistic with a paired block bootstrap. The blocks
// are runs of blockSeconds seconds both sides ran through (from the later
// of their oldest samples on): requests of one second share the server's
// state (a batch, a queue), so they are resampled together, never one by
// one, and a block drawn counts for both sides at once, so what both
// sides went through at the same time (a knob change, the client's own
// hiccup) is not mistaken for a difference. Each replicate draws as many
// blocks as there are, with replacement, weighs every sample by its second's draws,
// and computes the statistic on each side; the interval is the
// replicates' percentiles at alpha/2 and 1-alpha/2.
//
// With shared (a split: the groups of one load), only the seconds in which
// both sides have samples are blocks: the sides are not two loads running
// side by side from one start, but one load's requests that a balancer
// handed to either group, and a group may come (a new pod ready) or go
// (the last old pod drained) at any second. A second in which both had
// requests is a moment both served the same offered load; the seconds
// only one had cannot be set against anything of the other's.
func judge(st Stat, data [2][]sample, j judging, rng *rand.Rand) Result {
	resamples, alpha := j.resamples, j.alpha
	r := Result{Stat: st}
	if len(data[0]) == 0 || len(data[1]) == 0 {
		r.NBaseline, r.NCanary = len(data[0]), len(data[1])
		return r
	}
	start := max(minSec(data[0]), minSec(data[1]))
	keep := func(s sample) bool { return s.sec >= start }
	if j.shared {
		var secs [2]map[int32]bool
		for i, d := range data {
			secs[i] = make(map[int32]bool)
			for _, s := range d {
				secs[i][s.sec] = true
			}
		}
		keep = func(s sample) bool { return secs[0][s.sec] && secs[1][s.sec] }
	}
	// The seconds kept, and from their number the block's length.
	// The length comes from the seconds' extent, not their number: a
	// split's shared seconds can be sparse (a canary answering one request
	// in twenty), and a block must still span the stretch a state lasts.
	secs := map[int32]bool{}
	last := start
	for i := range data {
		data[i] = slices.DeleteFunc(data[i], func(s sample) bool { return !keep(s) })
		for _, s := range data[i] {
			secs[s.sec] = true
			last = max(last, s.sec)
		}
	}
	span := blockSeconds(int(last-start) + 1)
	blocks := map[int32]int32{}
	var sides [2]sideData
	for i, d := range data {
		slices.SortFunc(d, func(a, b sample) int {
			switch {
			case a.v < b.v:
				return -1
			case a.v > b.v:
				return 1
			}
			return 0
		})
		sd := &sides[i]
		for _, s := range d {
			key := (s.sec - start) / span
			b, ok := blocks[key]
			if !ok {
				b = int32(len(blocks))
				blocks[key] = b
			}
			sd.v, sd.blk = append(sd.v, s.v), append(sd.blk, b)
		}
	}
	m := len(blocks)
	ones := make([]int, m)
	for i := range ones {
		ones[i] = 1
	}
	for i := range sides {
		sides[i].count = make([]int, m)
		for _, b := range sides[i].blk {
			sides[i].count[b]++
		}
	}
	r.NBaseline, r.NCanary, r.Seconds = len(sides[0].v), len(sides[1].v), len(secs)
	if r.NBaseline == 0 || r.NCanary == 0 {
		return r
	}
	var ok bool
	r.Baseline, _ = statOf(st, &sides[0], ones)
	r.Canary, _ = statOf(st, &sides[1], ones)
	if r.Delta, ok = delta(st, r.Baseline, r.Canary); !ok {
		return r
	}
	if r.NBaseline < st.minSamples() || r.NCanary < st.minSamples() || len(secs) < j.minSeconds {
		return r
	}
	w := make([]int, m)
	deltas := make([]float64, 0, resamples)
	for range resamples {
		clear(w)
		for range m {
			w[rng.IntN(m)]++
		}
		b, okB := statOf(st, &sides[0], w)
		c, okC := statOf(st, &sides[1], w)
		if d, ok := delta(st, b, c); okB && okC && ok {
			deltas = append(deltas, d)
		}
	}
	if len(deltas) < resamples/2 { // most replicates left a side empty
		return r
	}
	slices.Sort(deltas)
	n := float64(len(deltas))
	r.Lo = deltas[int(math.Floor(alpha/2*n))]
	r.Hi = deltas[min(int(math.Ceil((1-alpha/2)*n))-1, len(deltas)-1)]
	r.Verdict = verdictOf(r.Lo, r.Hi)
	return r
}

// blockSeconds is the length in seconds of the bootstrap's blocks over n
// seconds: the cube root of n, the block bootstrap's usual rule, so that a
// block spans the stretches in which a side's requests stay alike. One
// second a block was too short: a closed loop at fixed lengths locks in
// step with the server's batches, its TTFT in one of two modes that last
// several seconds, and over 11 s two identical sims were called
// different at TTFT p50 in 16 of 100 runs (the differences' spread 8.7 %
// where the intervals took it for 1.5 %).
func blockSeconds(n int) int32 {
	return max(1, int32(math.Cbrt(float64(n))))
}

// judging is how judge decides: the replicates, the per-statistic error
// rate alpha, the fewest seconds, and whether only shared seconds count.
type judging struct {
	resamples  int
	alpha      float64
	minSeconds int
	shared     bool
}

func minSec(d []sample) int32 {
	m := d[0].sec
	for _, s := range d[1:] {
		m = min(m, s.sec)
	}
	return m
}

// delta is the canary's difference: relative for a latency, absolute for
// the error rate.
func delta(st Stat, b, c float64) (float64, bool) {
	if st.ErrorRate {
		return c - b, true
	}
	if b <= 0 {
		return 0, false
	}
	return c/b - 1, true
}

// statOf is the statistic of one side with each sample weighed by its
// block's weight w; ok is false when every weight is zero.
func statOf(st Stat, d *sideData, w []int) (float64, bool) {
	total := 0
	for b, n := range d.count {
		total += n * w[b]
	}
	if total == 0 {
		return 0, false
	}
	if st.ErrorRate || st.Q == 0 { // a mean (of 0/1 outcomes, for the error rate)
		sum := 0.0
		for i, v := range d.v {
			sum += v * float64(w[d.blk[i]])
		}
		return sum / float64(total), true
	}
	// The lower quantile: the smallest value whose cumulative weight
	// reaches q of the total, walked from the nearer end (a p99 reads the
	// top one per cent only).
	target := st.Q * float64(total)
	if st.Q >= 0.5 {
		above := 0
		for i := len(d.v) - 1; i >= 0; i-- {
			wi := w[d.blk[i]]
			if wi == 0 {
				continue
			}
			if float64(total-above-wi) < target {
				return d.v[i], true
			}
			above += wi
		}
		return d.v[0], true
	}
	cum := 0
	for i, v := range d.v {
		wi := w[d.blk[i]]
		if wi == 0 {
			continue
		}
		if cum += wi; float64(cum) >= target {
			return v, true
		}
	}
	return d.v[len(d.v)-1], true
}

// pct formats a difference of a statistic: a relative one as a signed
// percentage, the error rate's in percentage points.
func pct(st Stat, d float64) string {
	unit := "relative"
	if st.ErrorRate {
		unit = "rate"
	}
	return DeltaText(unit, d)
}

// DeltaText is a difference as every table writes it (the text's, the
// HTML report's), from the JSON's delta_unit: a rate's in percentage
// points, a relative one as a signed percentage.
func DeltaText(unit string, d float64) string {
	switch {
	case math.IsInf(d, 1) || d >= unbounded:
		return "+∞"
	case math.IsInf(d, -1) || d <= -unbounded:
		return "-∞"
	case unit == "rate":
		return fmt.Sprintf("%+.2fpp", d*100)
	}
	if math.Abs(d) < 0.1 {
		return fmt.Sprintf("%+.1f%%", d*100)
	}
	return fmt.Sprintf("%+.0f%%", d*100)
}

// unbounded is how the JSON writes an infinite end of an interval (JSON
// has no infinity): the largest float, which DeltaText reads back as ∞.
const unbounded = math.MaxFloat64

// Interval formats the result's interval, "+21%…+55%".
func (r Result) Interval() string {
	if r.Verdict == NotEnough {
		return "—"
	}
	return pct(r.Stat, r.Lo) + "…" + pct(r.Stat, r.Hi)
}

// DeltaText formats the result's difference.
func (r Result) DeltaText() string {
	if r.NBaseline == 0 || r.NCanary == 0 {
		return "—"
	}
	return pct(r.Stat, r.Delta)
}

// Line is the comparison in one line, for a live display: 'canary slower:
// TTFT p99 +38% (+21%…+55%, 99% confidence)', 'canary faster: …', or 'no
// difference found yet'; a split's names the group instead: 'group 2
// (fp_abc) slower: …'.
func (c Comparison) Line() string {
	conf := fmt.Sprintf("%.3g%% confidence", c.Confidence*100)
	if c.Anytime {
		conf += " at every look"
	}
	say := func(rs []Result) string {
		var parts []string
		for _, r := range rs {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", r.Stat.Label(), pct(r.Stat, r.Delta), r.Interval()))
		}
		return strings.Join(parts, ", ") + " · " + conf
	}
	var slower, errsUp, faster, errsDown []Result
	judged, n, secs := 0, [2]int{}, 0
	for _, r := range c.Results {
		if r.Verdict != NotEnough {
			judged++
		}
		if r.Stat.ErrorRate && !r.Stat.Invalid { // every request, not the judged ones
			n, secs = [2]int{r.NBaseline, r.NCanary}, r.Seconds
		}
		switch {
		case r.Verdict == Worse && r.Stat.ErrorRate:
			errsUp = append(errsUp, r)
		case r.Verdict == Worse:
			slower = append(slower, r)
		case r.Verdict == Better && r.Stat.ErrorRate:
			errsDown = append(errsDown, r)
		case r.Verdict == Better:
			faster = append(faster, r)
		}
	}
	who, base := c.side(1), c.side(0)
	minSecs := c.MinSeconds
	if minSecs <= 0 {
		minSecs = MinSeconds
	}
	// Rates that are all the invalid rate's are answers broken, not
	// requests failed.
	more, less := "failing more", "failing less"
	if len(errsUp) > 0 && !slices.ContainsFunc(errsUp, func(r Result) bool { return !r.Stat.Invalid }) {
		more = "breaking more answers"
	}
	if len(errsDown) > 0 && !slices.ContainsFunc(errsDown, func(r Result) bool { return !r.Stat.Invalid }) {
		less = "breaking fewer answers"
	}
	switch {
	case len(slower) > 0 && len(errsUp) > 0:
		return who + " slower and " + more + ": " + say(append(slower, errsUp...))
	case len(slower) > 0:
		return who + " slower: " + say(slower)
	case len(errsUp) > 0:
		return who + " " + more + ": " + say(errsUp)
	case len(faster) > 0:
		return who + " faster: " + say(append(faster, errsDown...))
	case len(errsDown) > 0:
		return who + " " + less + ": " + say(errsDown)
	}
	prefix := "" // a Pair's line needs no subject: there is one canary
	if c.Sides != ([2]string{}) {
		prefix = who + ": "
	}
	if judged == 0 {
		return fmt.Sprintf("%sno difference found yet (not enough data: %d %s, %d %s requests over %d s; judging needs %d s)", prefix, n[0], base, n[1], who, secs, minSecs)
	}
	return fmt.Sprintf("%sno difference found yet (%d %s, %d %s requests)", prefix, n[0], base, n[1], who)
}
