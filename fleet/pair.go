package fleet

import (
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// Pair is agents that compare a canary with their baseline (each
// agent's --compare: it loads both sides, its share of the one load on
// each, the knobs moving both) as a comparison's source: the baselines'
// merge and the canaries' merge, each a Merging of its own Fleet (the
// canaries' polled under agent.CanaryPrefix), compared over both merges'
// sealed seconds (compare.Binned: each second's histograms added bucket
// for bucket over the agents, the newest compare.DefaultSamples values a
// side and metric), with the confidence sequences or the paired block
// bootstrap that a comparison from one machine runs over its requests
// (the sequences count every second of the setting, those the merges'
// window of minutes has let go too: compare.Cumulative). The comparison counts the
// seconds of the current knob setting: from a poll after the newest
// phase this follower named (a knob turned, a reset) or saw an agent
// begin (a walk's stage), before any from the start (the agents' warm-up
// is in no second). Its controller is the baselines' (each agent moves
// both of its sides). Its methods are safe from any goroutine.
type Pair struct {
	base, canary *Merging
	stats        []compare.Stat

	// The newest phase any agent said it is in, and when this follower
	// first saw it (behind mu): a phase the agents begin on their own (a
	// walk's stage, the warm-up's end) starts the comparison over too.
	mu      sync.Mutex
	phase   int
	phaseAt time.Time

	// cum is every second of the setting the confidence sequences have
	// read (behind cmu): the merges hold a window of minutes, and a
	// sequence is about the whole phase.
	cmu sync.Mutex
	cum cumState
}

// cumState is a Pair's seconds counted for the confidence sequences:
// those of the setting that began at since, up to the common second
// upTo (on the baselines' clock).
type cumState struct {
	c     *compare.Cumulative
	since time.Time
	upTo  int64
}

// NewPair compares base's agents (their baselines) with canary's (the
// same agents' canaries: a Fleet with Config.Canary) over the statistics
// of regressions.
func NewPair(base, canary *Merging, regressions []compare.Regression) *Pair {
	return &Pair{base: base, canary: canary, stats: compare.Stats(regressions)}
}

// Sides are the baselines' merge and the canaries'.
func (p *Pair) Sides() [2]*Merging { return [2]*Merging{p.base, p.canary} }

// Compare compares the sides' merged seconds now with o.
func (p *Pair) Compare(o compare.Options) compare.Comparison {
	since := p.since()
	if !since.IsZero() {
		since = since.Add(p.base.f.cfg.PollEvery) // the control reaches every agent within a poll
	}
	minSecs := o.MinSeconds
	if minSecs <= 0 {
		minSecs = compare.MinSeconds
	}
	if !o.Anytime {
		return binned(p.stats, p.base.f.Latest(), p.canary.f.Latest(), since, 2*minSecs, nil).Compare(o)
	}
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.cum.c == nil || !p.cum.since.Equal(since) { // a new setting: start over
		p.cum = cumState{c: compare.NewCumulative(), since: since, upTo: math.MinInt64}
	}
	return binned(p.stats, p.base.f.Latest(), p.canary.f.Latest(), since, 2*minSecs, &p.cum).Compare(o)
}

// since is when the current knob setting began on this machine's clock
// (zero: the run's start).
func (p *Pair) since() time.Time {
	since := p.base.settingSince()
	if at := p.phaseSeen(p.base.f.Latest()); at.After(since) {
		since = at
	}
	return since
}

// Knobs are the setting the comparison is of (the whole load's knobs),
// and its epoch, which changes whenever the comparison starts over; ok
// is false before the knobs are known.
func (p *Pair) Knobs() (k load.Knobs, epoch int, ok bool) {
	k, ok = p.base.wholeKnobs()
	return k, int(p.since().UnixNano()), ok
}

// phaseSeen is when this follower first saw the newest phase any agent
// of v is in, past the first it saw (zero: none since).
func (p *Pair) phaseSeen(v View) time.Time {
	newest := 0
	for i := range v.Agents {
		if a := &v.Agents[i]; a.HasState && a.Status == report.AgentRunning {
			newest = max(newest, a.State.Phase)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if newest > p.phase {
		if p.phase > 0 {
			p.phaseAt = p.base.f.cfg.Now()
		}
		p.phase = newest
	}
	return p.phaseAt
}

// binned is the data of a comparison of stats over the baselines' view
// vb and the canaries' vc: each common second's values and outcomes,
// from the first second that starts at since or later (zero: every one)
// to the newest second both merges have (each side's frontier), newest
// first up to the limit of compare.Binned, a full side spanning span
// seconds at the least. The canaries' seconds are put on the baselines'
// clock (their common starts are one agent's two engines', started
// together). With cum (the confidence sequences) every second of the
// views is added, and those past cum.upTo are counted in cum too, which
// the sequences read: the seconds the views have let go stay counted.
func binned(stats []compare.Stat, vb, vc View, since time.Time, span int, cum *cumState) *compare.Binned {
	out := compare.NewBinned(stats, 0, span)
	out.SetAnytime(cum != nil)
	if cum != nil {
		out.SetCumulative(cum.c)
	}
	psB, originB := placeAt(vb)
	psC, originC := placeAt(vc)
	if len(psB) == 0 || len(psC) == 0 {
		return out
	}
	shift := seconds(originC.Sub(originB)) // a canary's common second k is the baselines' k+shift
	fb, _ := frontierOf(psB)
	fc, _ := frontierOf(psC)
	last, first := min(fb, fc+shift), int64(math.MinInt64)
	if !since.IsZero() {
		first = int64(math.Ceil(since.Sub(originB).Seconds()))
	}
	var metrics []load.Metric
	for _, st := range stats {
		if !st.ErrorRate && !slices.Contains(metrics, st.Metric) {
			metrics = append(metrics, st.Metric)
		}
	}
	for side, ps := range [2][]placed{psB, psC} {
		off := int64(0)
		if side == int(compare.Canary) {
			off = shift
		}
		bySec := map[int64][]*Second{}
		for _, pl := range ps {
			for i := range pl.a.Seconds {
				s := &pl.a.Seconds[i]
				if c := pl.off + s.Sec + off; c >= first && c <= last {
					bySec[c] = append(bySec[c], s)
				}
			}
		}
		secs := slices.Sorted(maps.Keys(bySec))
		sd := compare.Side(side)
		for i := len(secs) - 1; i >= 0 && !out.Full(sd); i-- { // the newest first
			c := secs[i]
			var ok, failed int64
			for _, s := range bySec[c] {
				ok, failed = ok+s.Completed, failed+s.Failed
			}
			out.Outcomes(sd, int32(c), ok, failed)
			newer := cum != nil && c > cum.upTo
			if newer {
				cum.c.Outcomes(sd, int32(c), ok, failed)
			}
			for _, m := range metrics {
				var ms []float64
				var counts []int64
				for _, s := range bySec[c] {
					b := &s.hist[m]
					for j, v := range b.values {
						ms, counts = append(ms, float64(v)/1e3), append(counts, b.counts[j]) // microseconds
					}
				}
				out.Latency(sd, m, int32(c), ms, counts)
				if newer {
					cum.c.Latency(sd, m, int32(c), ms, counts)
				}
			}
		}
	}
	if cum != nil {
		cum.upTo = max(cum.upTo, last)
	}
	return out
}

// Controller moves every agent's two sides: the baselines' controls, each
// agent applying them to both; the canaries' merge takes the same window,
// phases and reset (mirror).
func (p *Pair) Controller() load.Controller { return pairControl{p} }

// pairControl is the pair's controller: the baselines', mirrored.
type pairControl struct{ p *Pair }

func (c pairControl) Update(fn func(*load.Knobs)) load.Knobs {
	k := c.p.base.Controller().Update(fn)
	c.p.mirror()
	return k
}

func (c pairControl) SetWindow(d time.Duration) {
	c.p.base.Controller().SetWindow(d)
	c.p.mirror()
}

func (c pairControl) Reset() {
	c.p.base.Controller().Reset()
	c.p.mirror()
}

// mirror gives the canaries' merge what the baselines' controller set
// (its window, the phases it named, its last reset, the whole knobs),
// sending nothing: the agents apply every control to both sides, and
// the canaries' rolling window and phase table are then the baselines'
// (the window key set to 60 s is 60 s on both columns).
func (p *Pair) mirror() {
	p.base.cmu.Lock()
	b := p.base.ctl
	named := slices.Clone(b.named)
	p.base.cmu.Unlock()
	p.canary.cmu.Lock()
	defer p.canary.cmu.Unlock()
	c := &p.canary.ctl
	c.window, c.named, c.resetAt, c.resetSeq = b.window, named, b.resetAt, b.resetSeq
	c.phase = max(c.phase, b.phase)
	if b.known {
		c.knobs = b.knobs
	}
}

// Finish ends the follow for why as Merging.Finish does: a signal stops
// waiting for both sides (the agents run on); a gate ends the agents'
// runs, both sides of each (the baselines' control: each agent finishes
// its pair), and both merges wait for their last words.
func (p *Pair) Finish(why string) {
	if why != load.EndInterrupted {
		p.base.FinishAgents(why)
		return
	}
	p.base.Finish(why)
	p.canary.Finish(why)
}

// Stop stops following both sides; it may be called more than once.
func (p *Pair) Stop() {
	p.base.Stop()
	p.canary.Stop()
}
