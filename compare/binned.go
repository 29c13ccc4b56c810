package compare

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/infertop/infertop/load"
)

// Binned is a comparison's data given as counts by second, not request
// by request: what a follower of agents has of each side (their sealed
// seconds' histograms, merged), not their requests. A latency is a
// histogram bucket's value and its count in a second, the error rate a
// second's completed and failed counts; each becomes that many samples
// of the second, so Compare is the same paired block bootstrap as
// Samples.Compare, over values within the histograms' precision.
//
// A side holds at most limit samples of a metric (the bootstrap's cost
// is its samples'), and a second at most limit/seconds of them, so that
// a full side spans seconds seconds at the least whatever the fleet's
// rate (the newest limit requests of a fleet at 400 requests a second
// are 10 s, too few to judge). A second past its share is thinned by
// systematic sampling over its values in order: every bucket keeps its
// share rounded up or down, a bucket of one value (a tail's) kept with
// the chance of its share, and the shares add up to the room exactly.
// Add the newest seconds first; a full side takes no more. The
// confidence sequences (SetAnytime) count every second added, unthinned
// (counts per value cost the values' spread, not their number), so a
// side is never full for them. A Binned is one goroutine's.
type Binned struct {
	stats   []Stat
	limit   int
	perSec  int
	anytime bool
	sides   [2]binnedSide
	cum     *Cumulative // see SetCumulative
}

type binnedSide struct {
	lat  [load.NumMetrics][]sample
	errs []sample
	// Every second's counts, unthinned, for the confidence sequences:
	// kept by second until Compare, which counts only the seconds both
	// sides have (from the later first), as the bootstrap pairs them.
	raw  [load.NumMetrics][]binnedCount
	outs []binnedCount // v: 0 completed, 1 failed
}

// binnedCount is n values of v in second sec.
type binnedCount struct {
	sec int32
	v   float64
	n   int64
}

// NewBinned collects the data of a comparison of stats, at most limit
// samples (0: DefaultSamples) per side and metric, a second's at most a
// seconds'th of them (0: 2×MinSeconds).
func NewBinned(stats []Stat, limit, seconds int) *Binned {
	if limit <= 0 {
		limit = DefaultSamples
	}
	if seconds <= 0 {
		seconds = 2 * MinSeconds
	}
	return &Binned{stats: stats, limit: limit, perSec: max(limit/seconds, 1)}
}

// Latency adds the values of metric m that side saw in second sec (any
// clock both sides share, in seconds): counts[i] requests of ms[i]
// milliseconds each (histograms' buckets, any order), thinned
// past the second's share (see Binned).
func (b *Binned) Latency(side Side, m load.Metric, sec int32, ms []float64, counts []int64) {
	sd := &b.sides[side]
	for i, n := range counts {
		if i < len(ms) && n > 0 {
			sd.raw[m] = append(sd.raw[m], binnedCount{sec, ms[i], n})
		}
	}
	r := &sd.lat[m]
	for i, n := range b.thin(len(*r), counts, sec, side, int(m)) {
		for range n {
			*r = append(*r, sample{sec, ms[i]})
		}
	}
}

// Outcomes adds a second's requests of side: completed ones and failed
// ones (the error rate's samples, 0 and 1), thinned as Latency's.
func (b *Binned) Outcomes(side Side, sec int32, completed, failed int64) {
	sd := &b.sides[side]
	if completed > 0 {
		sd.outs = append(sd.outs, binnedCount{sec, 0, completed})
	}
	if failed > 0 {
		sd.outs = append(sd.outs, binnedCount{sec, 1, failed})
	}
	r := &sd.errs
	for i, n := range b.thin(len(*r), []int64{completed, failed}, sec, side, int(load.NumMetrics)) {
		for range n {
			*r = append(*r, sample{sec, float64(i)})
		}
	}
}

// thin is counts within the room a second has: the side's limit less
// held, and the second's share. Past it, a systematic sample of the
// second's values as given: room points evenly spaced over them from an
// offset drawn by the second, side and metric (so a comparison is
// repeatable), each bucket keeping the points that fall in it.
func (b *Binned) thin(held int, counts []int64, sec int32, side Side, m int) []int64 {
	room := int64(min(max(b.limit-held, 0), b.perSec))
	var total int64
	for _, n := range counts {
		total += max(n, 0)
	}
	out := make([]int64, len(counts))
	if total == 0 || room == 0 {
		return out
	}
	if total <= room {
		for i, n := range counts {
			out[i] = max(n, 0)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(uint64(uint32(sec)), uint64(side)<<8|uint64(m)))
	step := float64(total) / float64(room)
	at := rng.Float64() * step // the first point
	var from int64             // the values before bucket i
	for i, n := range counts {
		to := from + max(n, 0)
		for at < float64(to) && room > 0 {
			out[i]++
			room--
			at += step
		}
		from = to
	}
	return out
}

// SetAnytime says whether b will be compared with Options.Anytime: the
// confidence sequences count every second, so a side is then never
// Full.
func (b *Binned) SetAnytime(on bool) { b.anytime = on }

// Full says older seconds would add nothing: side holds its limit of
// every metric's samples and of its outcomes (never with SetAnytime:
// the confidence sequences count every second).
func (b *Binned) Full(side Side) bool {
	return !b.anytime && b.fullSamples(side)
}

// fullSamples says side holds its limit of every metric's samples and of
// its outcomes: the bootstrap's would take no more.
func (b *Binned) fullSamples(side Side) bool {
	sd := &b.sides[side]
	if len(sd.errs) < b.limit {
		return false
	}
	for _, st := range b.stats {
		if !st.ErrorRate && len(sd.lat[st.Metric]) < b.limit {
			return false
		}
	}
	return true
}

// Compare judges every statistic over the data added, as Samples.Compare
// does over its samples.
func (b *Binned) Compare(o Options) Comparison {
	return compareStats(b.stats, o, false, [2]string{}, func(st Stat) [2][]sample {
		var out [2][]sample
		for i := range b.sides {
			sd := &b.sides[i]
			var src []sample // none for the invalid rate: agents' bins carry no answers' verdicts
			switch {
			case !st.ErrorRate:
				src = sd.lat[st.Metric]
			case !st.Invalid:
				src = sd.errs
			}
			out[i] = append([]sample(nil), src...) // judge sorts and trims its copy
		}
		return out
	}, b.tallies, b.narrowing())
}

// narrowing is the Cumulative's running intersection (held): it lives
// as long as the setting's counts do. None without one.
func (b *Binned) narrowing() narrowing {
	if b.cum == nil {
		return nil
	}
	return func(st Stat, lo, hi float64) (float64, float64) { return b.cum.held.narrow(st.Name, lo, hi) }
}

// tallies are both sides' counts of st over the seconds from the later
// of the sides' first on (with SetCumulative, its counts).
func (b *Binned) tallies(st Stat) [2]tally {
	out := b.ownTallies(st)
	if b.cum != nil {
		return b.cumTallies(st, out)
	}
	return out
}

// src is side sd's seconds of st: none of the invalid rate (an agent's
// seconds count no judged answers), which stays unjudged.
func (st Stat) src(sd *binnedSide) []binnedCount {
	if st.Invalid {
		return nil
	}
	if st.ErrorRate {
		return sd.outs
	}
	return sd.raw[st.Metric]
}

// from is the later of the sides' first seconds of st.
func (b *Binned) from(st Stat) int32 {
	var from int32 = math.MinInt32
	for i := range b.sides {
		if s := st.src(&b.sides[i]); len(s) > 0 {
			from = max(from, slices.MinFunc(s, func(x, y binnedCount) int { return cmp.Compare(x.sec, y.sec) }).sec)
		}
	}
	return from
}

// deffAt is side i's design effect of st at x over its seconds from the
// later first on (see dependence.go).
func (b *Binned) deffAt(st Stat, i int, x float64) float64 {
	from := b.from(st)
	return designEffect(func(yield func(int32, float64, int64)) {
		for _, c := range st.src(&b.sides[i]) {
			if c.sec >= from {
				yield(c.sec, c.v, c.n)
			}
		}
	}, x)
}

// ownTallies are tallies over b's own seconds.
func (b *Binned) ownTallies(st Stat) [2]tally {
	src, from := st.src, b.from(st)
	var out [2]tally
	for i := range b.sides {
		t, secs, vc := &out[i], newSpan(), valueCounts{}
		for _, c := range src(&b.sides[i]) {
			if c.sec < from {
				continue
			}
			secs.see(c.sec)
			switch {
			case !st.ErrorRate:
				vc.add(c.v, c.n)
			case c.v == 1:
				t.failed, t.total = t.failed+c.n, t.total+c.n
			default:
				t.total += c.n
			}
		}
		t.first, t.last = secs.first, secs.last
		// The design effect over the same seconds (see dependence.go).
		if st.ErrorRate {
			t.deff = b.deffAt(st, i, 0.5)
			continue
		}
		t.c = vc.counts()
		if x, _, ok := t.c.Quantile(st.Q); ok {
			t.c.DesignEffect = b.deffAt(st, i, x)
		}
	}
	return out
}
