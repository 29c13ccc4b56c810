package fleet

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
)

// PairSession is agents that compare a canary with their baseline (each
// agent's --compare: it loads both sides, its share of the one load on
// each, the knobs moving both) followed as one comparison: the
// baselines' merge and the canaries' merge, each a Session of its own
// Fleet (the canaries' polled under agent.CanaryPrefix), and a live
// verdict computed every second over both merges' sealed seconds
// (compare.Binned: each second's histograms added bucket for bucket over
// the agents, the newest compare.DefaultSamples values a side and
// metric), the paired block bootstrap that a comparison from one machine
// runs over its requests. The comparison counts the seconds of the
// current knob setting: from a poll after the newest phase this follower
// named (a knob turned, a reset) or saw an agent begin (a walk's stage),
// before any from the start (the agents' warm-up is in no second). Its controller is the baselines' (each agent
// moves both of its sides).
type PairSession struct {
	base, canary *Session
	opts         compare.Options
	stats        []compare.Stat
	live         atomic.Pointer[compare.Comparison]
	evals        atomic.Uint64
	cancel       context.CancelFunc
	done         chan struct{}
	once         sync.Once

	// The newest phase any agent said it is in, and when this follower
	// first saw it (behind mu): a phase the agents begin on their own (a
	// walk's stage, the warm-up's end) starts the comparison over too.
	mu      sync.Mutex
	phase   int
	phaseAt time.Time
}

var _ session.Session = (*PairSession)(nil)

// NewPairSession follows base's agents (their baselines) and canary's
// (the same agents' canaries: a Fleet with Config.Canary), their merge
// checked against objs, and compares them with o every second.
func NewPairSession(base, canary *Fleet, objs []slo.Objective, o compare.Options) *PairSession {
	ctx, cancel := context.WithCancel(context.Background())
	p := &PairSession{base: NewSession(base, objs), canary: NewSession(canary, objs), opts: o, stats: compare.Stats(o.Regressions),
		cancel: cancel, done: make(chan struct{})}
	go p.follow(ctx)
	return p
}

// follow computes the live comparison every second until ctx ends.
func (p *PairSession) follow(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c := p.Compare(0)
			p.live.Store(&c)
		}
	}
}

// Compare compares the sides' merged seconds now with resamples bootstrap
// replicates (0: the options'); each call draws afresh.
func (p *PairSession) Compare(resamples int) compare.Comparison {
	o := p.opts
	if resamples > 0 {
		o.Resamples = resamples
	}
	o.Seed += p.evals.Add(1)
	vb := p.base.f.Latest()
	since := p.base.settingSince()
	if at := p.phaseSeen(vb); at.After(since) {
		since = at
	}
	if !since.IsZero() {
		since = since.Add(p.base.f.cfg.PollEvery) // the control reaches every agent within a poll
	}
	minSecs := o.MinSeconds
	if minSecs <= 0 {
		minSecs = compare.MinSeconds
	}
	return binned(p.stats, vb, p.canary.f.Latest(), since, 2*minSecs).Compare(o)
}

// phaseSeen is when this follower first saw the newest phase any agent
// of v is in, past the first it saw (zero: none since).
func (p *PairSession) phaseSeen(v View) time.Time {
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
// seconds at the least. The canaries' seconds are
// put on the baselines' clock (their common starts are one agent's two
// engines', started together).
func binned(stats []compare.Stat, vb, vc View, since time.Time, span int) *compare.Binned {
	out := compare.NewBinned(stats, 0, span)
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
			}
		}
	}
	return out
}

// Comparison is the newest live comparison; ok is false before the
// first.
func (p *PairSession) Comparison() (compare.Comparison, bool) {
	if c := p.live.Load(); c != nil {
		return *c, true
	}
	return compare.Comparison{}, false
}

// AgentsView is the agents as their baselines' last snapshot saw them:
// the agents' table (each agent is one row, its two sides one process).
func (p *PairSession) AgentsView() View { return p.base.AgentsView() }

// What names the agents and their comparison.
func (p *PairSession) What() string { return p.base.What() + ", their baseline against their canary" }

// Sides are the baselines' merge and the canaries'.
func (p *PairSession) Sides() []session.Side {
	return []session.Side{side{p.base}, side{p.canary}}
}

// Controller moves every agent's two sides: the baselines' controls, each
// agent applying them to both; the canaries' merge takes the same window,
// phases and reset (mirror).
func (p *PairSession) Controller() session.Controller { return pairControl{p} }

// pairControl is the pair's controller: the baselines', mirrored.
type pairControl struct{ p *PairSession }

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
func (p *PairSession) mirror() {
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

// Live is the newest live comparison.
func (p *PairSession) Live() (session.Look, bool) {
	c, ok := p.Comparison()
	if !ok {
		return session.Look{}, false
	}
	return session.ComparedLook(c), true
}

// Finish ends the follow for why as Session.Finish does: a signal stops
// waiting for both sides (the agents run on); a gate ends the agents'
// runs, both sides of each (the baselines' control: each agent finishes
// its pair), and both merges wait for their last words.
func (p *PairSession) Finish(why string) {
	if why != load.EndInterrupted {
		p.base.FinishAgents(why)
		return
	}
	p.base.Finish(why)
	p.canary.Finish(why)
}

// Stop stops following both sides and the comparison; it may be called
// more than once.
func (p *PairSession) Stop() error {
	p.once.Do(func() {
		p.base.Stop()
		p.canary.Stop()
		p.cancel()
		<-p.done
	})
	return nil
}

// Release is nothing: the follower serves no metrics of its own.
func (p *PairSession) Release() {}

// Conclude is both merges' reports, the baselines' holding the
// comparison (more resamples than the live line's) and the canaries'
// whole report, as a comparison from one machine writes them.
func (p *PairSession) Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) session.Conclusion {
	var reps [2]*report.Report
	for i, s := range []*Session{p.base, p.canary} {
		var l []load.Snapshot
		var b [][]slo.Verdict
		if i < len(last) {
			l = last[i : i+1]
		}
		if i < len(breaches) {
			b = breaches[i : i+1]
		}
		c := s.Conclude(ctx, l, b)
		if c.Err != nil {
			if i == int(compare.Canary) {
				c.Err = fmt.Errorf("the canary: %w", c.Err)
			}
			return c
		}
		reps[i] = c.Reports[0]
	}
	cmp := p.Compare(2 * compare.DefaultResamples)
	return session.Compared(reps, cmp, p.table(cmp))
}

// table writes cmp's table, the sides named as the agents are.
func (p *PairSession) table(cmp compare.Comparison) func(io.Writer) error {
	return func(w io.Writer) error { return cmp.WriteTable(w, p.base.What(), p.canary.What()) }
}

// Save writes the merges of both sides' last results into dir, as a
// comparison from one machine saves (session.Pair's Save): the
// baselines' reports holding the comparison, the canaries' beside them,
// and the comparison's table.
func (p *PairSession) Save(_ context.Context, _ load.Snapshot, dir string) (string, error) {
	var reps [2]*report.Report
	for i, s := range []*Session{p.base, p.canary} {
		m, err := Merge(s.f.Latest())
		if err != nil {
			return "", err
		}
		reps[i] = s.report(m)
	}
	cmp, ok := p.Comparison()
	if !ok {
		cmp = p.Compare(0)
	}
	return session.SaveCompared(reps, cmp, saveBase(dir), p.table(cmp))
}

// View: the live comparison and the canaries' snapshots; no capacity
// search (as a comparison from one machine has none).
func (p *PairSession) View() session.View {
	return session.View{Compare: p.Comparison, Canary: side{p.canary}.Subscribe}
}

// LastWord is the comparison's table.
func (p *PairSession) LastWord(w io.Writer) error {
	return p.table(p.Compare(2 * compare.DefaultResamples))(w)
}
