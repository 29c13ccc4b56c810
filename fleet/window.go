package fleet

import (
	"math"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
)

// The live window: the agents' sealed seconds (seconds.go), placed on
// one clock and summed bucket for bucket into the window's exact
// figures, as Session's run goroutine merges them.

// mergeGrace is how far (in seconds) an agent's seconds may lag the
// newest agent's and still be waited for: a second is merged once every
// live agent has sent it, or once it is mergeGrace behind the newest, so
// an agent that is slow or lost stops holding the others back: it simply
// stops contributing (its seconds that come later still enter the
// window's sums).
const mergeGrace = 2

// live is the merge of the agents' seconds, kept by Session's run
// goroutine alone: the histograms it sums into, and the points already
// computed (a point is computed again only when what went into it did
// change).
type live struct {
	sum     [load.NumMetrics]*hdr.Histogram
	scratch *hdr.Histogram // a point's sum
	points  map[int64]livePoint
	// last is the figures of the last merge, at the time at, and key
	// what they were merged from: a view whose seconds did not change
	// (most: a view comes every PollEvery and on every poll) is not
	// merged again, and one whose did is merged at most once every
	// PollEvery (every, so that n agents' polls cost one merge, not n).
	last  liveFigures
	key   []liveKey
	at    time.Time
	every time.Duration
}

// liveKey is what one agent brings to a merge: its seconds (a view's are
// never written: a new slice is a change), where they are placed and
// whether it is waited for.
type liveKey struct {
	first   *Second
	n       int
	off     int64
	running bool
	w       time.Duration
	shift   int64
}

// liveFigures are the snapshot's figures a merge sets.
type liveFigures struct {
	series              []load.Point
	latency             [load.NumMetrics]load.Dist
	window, covered     time.Duration
	completed, failed   int64
	byClass             [probe.NumClasses]int64
	outTok, inTok, good int64
}

// set writes the figures into out.
func (f *liveFigures) set(out *load.Snapshot) {
	out.Series, out.Latency, out.Window, out.Covered = slices.Clone(f.series), f.latency, f.window, f.covered
	out.Completed, out.Failed, out.ByClass = f.completed, f.failed, f.byClass
	out.SetWindowRates(f.outTok, f.inTok, f.good)
}

type livePoint struct {
	key [4]int64 // what went into it: contributors, completions, TTFTs, E2Es
	p   load.Point
}

// placed is one agent's seconds on the common clock: its second k is
// common second k+off.
type placed struct {
	a   *Agent
	off int64
}

// place puts v's agents' seconds on one clock: second k of an agent
// whose load started at Started is common second round((Started -
// commonStart)/1s) + k, the common start being --start-at where the
// agents were given one (each agent's own offset from it, on its own
// clock), else the earliest agent's start on this machine's clock (by
// its ClockOffset). shift is the common second 0 in the follower's
// elapsed seconds (View.Started), where the snapshot's series count.
func place(v View) (ps []placed, shift int64) {
	ps, origin := placeAt(v)
	if len(ps) == 0 {
		return nil, 0
	}
	return ps, seconds(origin.Sub(v.Started))
}

// seconds is d in whole seconds, rounded.
func seconds(d time.Duration) int64 { return int64(math.Round(d.Seconds())) }

// placeAt is place's agents and the instant of common second 0 on this
// machine's clock (zero: no agent's seconds).
func placeAt(v View) (ps []placed, origin time.Time) {
	for i := range v.Agents {
		a := &v.Agents[i]
		if !a.HasState || a.Status == report.AgentRefused || len(a.Seconds) == 0 {
			continue
		}
		var at time.Time
		if a.State.StartAt != nil {
			at = a.State.StartAt.Add(-a.ClockOffset)
		} else {
			at = a.SecondsStart.Add(-a.ClockOffset)
		}
		if origin.IsZero() || at.Before(origin) {
			origin = at
		}
		ps = append(ps, placed{a: a})
	}
	if origin.IsZero() {
		return nil, origin
	}
	secs := seconds
	for i := range ps {
		a := ps[i].a
		if a.State.StartAt != nil {
			ps[i].off = secs(a.SecondsStart.Sub(*a.State.StartAt)) + secs(a.State.StartAt.Add(-a.ClockOffset).Sub(origin))
		} else {
			ps[i].off = secs(a.SecondsStart.Add(-a.ClockOffset).Sub(origin))
		}
	}
	return ps, origin
}

// apply makes out's window figures and series the exact merge of v's
// agents' seconds: counters summed, histograms added bucket for bucket,
// seconds aligned on the common start; the window is the last w seconds
// merged. Without any agent's seconds out is left as it is (the run so
// far, from the results). now is the follower's clock.
func (l *live) apply(out *load.Snapshot, v View, w time.Duration, now time.Time) {
	ps, shift := place(v)
	if len(ps) == 0 {
		return
	}
	key := make([]liveKey, len(ps))
	for i, p := range ps {
		key[i] = liveKey{first: &p.a.Seconds[0], n: len(p.a.Seconds), off: p.off, running: p.a.Status == report.AgentRunning, w: w, shift: shift}
	}
	if !slices.Equal(key, l.key) && (now.Sub(l.at) >= l.every || v.Done || len(key) != len(l.key)) {
		l.key, l.last, l.at = key, l.merge(ps, shift, w), now
	}
	l.last.set(out)
}

// merge merges the placed agents' seconds: the series, and the window
// of the last w seconds merged.
func (l *live) merge(ps []placed, shift int64, w time.Duration) liveFigures {
	var out liveFigures
	frontier, first := frontierOf(ps)
	lo := frontier - keepSeconds + 1
	type acc struct {
		p    load.Point
		n    int64
		byCl [probe.NumClasses]int64
		good int64
		secs []*Second
	}
	accs := make([]acc, frontier-lo+1)
	for _, p := range ps {
		for i := range p.a.Seconds {
			s := &p.a.Seconds[i]
			c := p.off + s.Sec
			if c < lo || c > frontier {
				continue
			}
			a := &accs[c-lo]
			a.n++
			a.p.Completed += s.Completed
			a.p.Failed += s.Failed
			a.p.OutTokens += s.OutTokens
			a.p.InTokens += s.InTokens
			a.p.InFlight += int(s.InFlight)
			a.good += s.Good
			for k, n := range s.ByClass {
				a.byCl[k] += n
			}
			a.secs = append(a.secs, s)
		}
	}
	for _, h := range l.sum {
		reset(h)
	}
	winLo := frontier - int64(w/time.Second) + 1
	var good, outTok, inTok int64
	points := map[int64]livePoint{}
	for i := range accs {
		a := &accs[i]
		if a.n == 0 {
			continue
		}
		c := lo + int64(i)
		pt := l.point(c, a.p, a.n, a.secs)
		points[c] = pt
		p := pt.p
		p.Sec = c + shift
		out.series = append(out.series, p)
		if c < winLo {
			continue
		}
		out.completed += a.p.Completed
		out.failed += a.p.Failed
		good, outTok, inTok = good+a.good, outTok+a.p.OutTokens, inTok+a.p.InTokens
		for k, n := range a.byCl {
			out.byClass[k] += n
		}
		for _, s := range a.secs {
			for m := range load.NumMetrics {
				if len(s.hist[m].values) == 0 {
					continue
				}
				if l.sum[m] == nil {
					l.sum[m] = load.NewHistogram()
				}
				s.addTo(m, l.sum[m])
			}
		}
	}
	l.points = points
	for m, h := range l.sum {
		if h != nil {
			out.latency[m] = load.DistOf(h)
		}
	}
	out.window = w
	out.covered = time.Duration(max(frontier-max(winLo, first)+1, 0)) * time.Second
	out.outTok, out.inTok, out.good = outTok, inTok, good
	return out
}

// frontierOf is the newest common second every live agent of ps has
// sent (those past mergeGrace behind the newest left out: an agent done
// or lost has sent all it will), and the first second of their figures
// (the earliest since its last reset).
func frontierOf(ps []placed) (frontier, first int64) {
	newest, first := int64(math.MinInt64), int64(math.MaxInt64)
	for _, p := range ps {
		newest = max(newest, p.off+p.a.Seconds[len(p.a.Seconds)-1].Sec)
		first = min(first, p.off+p.a.SecondsFrom)
	}
	frontier = newest
	for _, p := range ps {
		if p.a.Status != report.AgentRunning {
			continue // done or lost: all it will send is in
		}
		if last := p.off + p.a.Seconds[len(p.a.Seconds)-1].Sec; last >= newest-mergeGrace {
			frontier = min(frontier, last)
		}
	}
	return frontier, first
}

// point is common second c's point: counters p, its TTFT and E2E
// percentiles from the sum of its n agents' seconds secs, as the engine
// seals a second's; the one computed before when nothing in it changed.
func (l *live) point(c int64, p load.Point, n int64, secs []*Second) livePoint {
	var key [4]int64
	key[0], key[1] = n, p.Completed
	for _, s := range secs {
		key[2] += s.Count(load.TTFT)
		key[3] += s.Count(load.E2E)
	}
	if old, ok := l.points[c]; ok && old.key == key {
		old.p.Completed, old.p.Failed, old.p.OutTokens, old.p.InTokens, old.p.InFlight = p.Completed, p.Failed, p.OutTokens, p.InTokens, p.InFlight
		return old
	}
	if l.scratch == nil {
		l.scratch = load.NewHistogram()
	}
	q := func(m load.Metric, qs ...float64) []time.Duration {
		h := l.scratch
		reset(h)
		for _, s := range secs {
			s.addTo(m, h)
		}
		out := make([]time.Duration, len(qs))
		if h.TotalCount() == 0 {
			return out
		}
		for i, v := range h.ValueAtPercentilesSlice(qs) {
			out[i] = time.Duration(v) * time.Microsecond
		}
		return out
	}
	t := q(load.TTFT, 50, 99)
	e := q(load.E2E, 50, 95, 99)
	p.TTFTP50, p.TTFTP99, p.E2EP50, p.E2EP95, p.E2EP99 = t[0], t[1], e[0], e[1], e[2]
	return livePoint{key: key, p: p}
}

// reset empties h (nil: none) when it holds anything: a histogram's reset
// clears every count, 184 KiB, and most of the metrics hold none.
func reset(h *hdr.Histogram) {
	if h != nil && h.TotalCount() > 0 {
		h.Reset()
	}
}
