package compare

import "github.com/infertop/infertop/load"

// Cumulative is what the confidence sequences read of a comparison given
// by second (Binned's data), kept across looks: each side's latencies
// counted per value and its completed and failed requests, every second
// added since the setting began. A follower of agents sees only the
// seconds its merges still hold (a window of minutes); a sequence is
// about everything since it began, so the seconds are added here as
// they come and stay when the window has let them go. Memory grows with
// the values' spread, not the seconds' number. One goroutine's.
type Cumulative struct {
	sides [2]cumSide
	held  held // the sequences' intervals over the looks so far
}

type cumSide struct {
	cnt           [load.NumMetrics]valueCounts
	failed, total int64
	secs          span
}

// NewCumulative is an empty Cumulative.
func NewCumulative() *Cumulative {
	c := &Cumulative{}
	for i := range c.sides {
		c.sides[i].secs = newSpan()
	}
	return c
}

// Latency counts the values of metric m that side saw in second sec:
// counts[i] requests of ms[i] milliseconds each.
func (c *Cumulative) Latency(side Side, m load.Metric, sec int32, ms []float64, counts []int64) {
	sd := &c.sides[side]
	for i, n := range counts {
		if i < len(ms) && n > 0 {
			sd.cnt[m].add(ms[i], n)
			sd.secs.see(sec)
		}
	}
}

// Outcomes counts a second's completed and failed requests of side.
func (c *Cumulative) Outcomes(side Side, sec int32, completed, failed int64) {
	sd := &c.sides[side]
	if completed+failed > 0 {
		sd.failed += failed
		sd.total += completed + failed
		sd.secs.see(sec)
	}
}

// SetCumulative makes b's confidence sequences read their counts from c
// (every second of the setting), its own seconds giving only the design
// effect (see dependence.go: the newest seconds, as a Samples' ring
// gives it). Nil: b's own seconds, as before.
func (b *Binned) SetCumulative(c *Cumulative) { b.cum = c }

// cumTallies are b.tallies over b.cum's counts, the design effect from
// own (b's tallies of its seconds).
func (b *Binned) cumTallies(st Stat, own [2]tally) [2]tally {
	var out [2]tally
	for i := range out {
		sd, t := &b.cum.sides[i], &out[i]
		if st.Invalid {
			continue // no judged answers (see src)
		}
		t.failed, t.total, t.first, t.last = sd.failed, sd.total, sd.secs.first, sd.secs.last
		if st.ErrorRate {
			t.deff = own[i].deff
			continue
		}
		t.c = sd.cnt[st.Metric].counts()
		if x, _, ok := t.c.Quantile(st.Q); ok {
			t.c.DesignEffect = b.deffAt(st, i, x)
		}
	}
	return out
}
