package watch

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/sanitize"
)

// The watch's own errors, for the command layer to map to flags.
var (
	// ErrNoTargets: the source names no server.
	ErrNoTargets = errors.New("no targets to watch")
	// ErrStatistic: a regression names a statistic no server's metrics
	// give (the servers give TTFT, ITL, E2E and errors).
	ErrStatistic = errors.New("no server metric gives this statistic: want ttft, itl or tpot, e2el with _pNN, or error_rate")
	// ErrObjective: an objective names a figure the servers do not give.
	ErrObjective = errors.New("no server metric gives this figure: want a ttft, itl, tpot or e2el percentile, error_rate, request_throughput or output_throughput")
)

// Server states, as the table shows them.
const (
	StateStarting  = "starting"  // one reading: no rate yet
	StateUp        = "up"        // answering
	StateRestarted = "restarted" // its counters fell since the last reading
	StateStalled   = "stalled"   // requests running, no token for StallAfter
	StateDown      = "down"      // not answering (Err says why)
	StateGone      = "gone"      // no longer listed by the source
	StateUnknown   = "no engine" // answers, but not an engine's metrics
	// StateImplausible: its counters rose faster than any server serves
	// (maxRequestsPerSec, maxTokensPerSec); the read is set aside.
	StateImplausible = "implausible"
)

// The fastest a server's counters are believed to rise. A server past
// them lies or is broken (counters that fall and rise back at every
// read added their whole value each time: 4.7*10^13 requests a second
// in one group, the honest servers' figures lost in it); its read is
// set aside, the others' kept.
const (
	// maxRequestsPerSec bounds requests and the requests' histograms
	// (TTFT, E2E, queue): an LLM server answers thousands a second at
	// most.
	maxRequestsPerSec = 1e5
	// maxTokensPerSec bounds tokens and the ITL histogram: a node
	// generates some 10^5 a second, prefills some 10^6.
	maxTokensPerSec = 1e8
)

// maxErrLen bounds a server's error as shown, maxNameLen its name and
// group.
const (
	maxErrLen  = 160
	maxNameLen = 64
)

// tick is one slot's increments of a server: the reads from from to at
// (one read, unless the fleet is large: see slot).
type tick struct {
	from, at time.Time
	d        engines.Reading
}

// maxSlots bounds the ticks the fleet holds over the window, 1 to 2 KB
// each: 6,000 servers (a DNS name may name 10,000) held one tick per
// read for a minute, 860 MB; 100 servers over --window 30m would hold
// 324 MB. Past it each server's reads share slots longer than a read
// (slot).
const maxSlots = 20_000

// server is one server's state: its last reading and the window of its
// increments.
type server struct {
	t        Target
	engine   string
	last     engines.Reading
	has      bool
	lastAt   time.Time
	seenAt   time.Time // last listed by the source
	state    string
	err      string
	restarts int
	failures int // reads that failed
	// implausible counts reads set aside for counters that rose too
	// fast.
	implausible int
	ticks       []tick
	// read is the last read's increments, taken at readAt.
	read   engines.Reading
	readAt time.Time
	// lastToken is when its generated tokens last rose (or requests last
	// stopped running): the stall clock.
	lastToken time.Time
}

// fleetState is every server's state and every group's counts since the
// watch began, for the verdict. One goroutine's (Run's).
type fleetState struct {
	cfg     Config
	servers map[string]*server
	// totals are each group's increments since the start, summed over
	// its servers: the verdict's counts.
	totals map[string]*engines.Reading
	// mismatched counts histogram increments left out because their
	// buckets differ from the group's first (servers of two builds).
	mismatched int
	sourceErr  string
	reads      int
	// elapsed is the watch's age at the newest read; decided the age at
	// which each regression's verdict was first reached (0: not yet).
	elapsed time.Duration
	decided []float64
	// history is each group's figures at every read, the last
	// maxHistory of them, for --html's charts.
	history map[string][]Point
	// perRead is each group's increments at each read over the window,
	// read by read: the verdict's design effect (requests of one read
	// share their servers' batches, and are not independent draws).
	perRead map[string][]groupRead
}

// groupRead is one read's increments of a group, summed over its
// servers.
type groupRead struct {
	read int32
	at   time.Time
	d    engines.Reading
}

// Point is a group's figures at one read: the seconds into the watch,
// the requests per second and the TTFT p99's upper bound (NaN when not
// known) over the window.
type Point struct {
	At, ReqPerSec, TTFTP99 float64
}

// maxHistory and maxHistoryGroups bound the history: an hour at 1 Hz,
// of the first 16 groups (a fleet's labels are anyone's to set).
const (
	maxHistory       = 3600
	maxHistoryGroups = 16
)

// remember adds a snapshot's groups to the history.
func (f *fleetState) remember(s Snapshot) {
	if f.history == nil {
		f.history = map[string][]Point{}
	}
	for _, g := range s.Groups {
		h, ok := f.history[g.Name]
		if !ok && len(f.history) >= maxHistoryGroups {
			continue
		}
		ttft := math.NaN()
		if g.TTFT.P99.OK {
			ttft = g.TTFT.P99.Upper()
		}
		h = append(h, Point{At: s.Elapsed, ReqPerSec: g.ReqPerSec, TTFTP99: ttft})
		if len(h) > maxHistory {
			h = append(h[:0], h[len(h)-maxHistory:]...)
		}
		f.history[g.Name] = h
	}
}

func newFleetState(cfg Config) *fleetState {
	return &fleetState{cfg: cfg, servers: map[string]*server{}, totals: map[string]*engines.Reading{}}
}

// key identifies a server across reads: its URL and name.
func key(t Target) string { return t.Name + "\x00" + t.URL }

// observe takes one read of the fleet at now.
func (f *fleetState) observe(now time.Time, obs []Observation, err error) {
	f.reads++
	f.sourceErr = ""
	if err != nil {
		f.sourceErr = sanitize.Short(sanitize.Text(err.Error()), maxErrLen)
	}
	listed := map[string]bool{}
	for _, o := range obs {
		k := key(o.Target)
		listed[k] = true
		// Names and groups come from the fleet (a pod's name and labels,
		// a Prometheus series' labels): shown only once sanitised.
		t := Target{Name: sanitize.Short(sanitize.Text(o.Target.Name), maxNameLen), URL: o.Target.URL,
			Group: sanitize.Short(sanitize.Text(o.Target.Group), maxNameLen)}
		s := f.servers[k]
		if s == nil {
			s = &server{t: t, state: StateStarting, lastToken: now}
			f.servers[k] = s
		}
		s.t.Group = t.Group // a relabelled pod moves with its label
		s.seenAt = now
		f.take(s, now, o)
	}
	for k, s := range f.servers {
		if listed[k] || err != nil && len(obs) == 0 {
			continue
		}
		if s.state != StateGone {
			s.state, s.err = StateGone, "left the fleet"
		}
		if now.Sub(s.seenAt) > f.cfg.GoneAfter {
			delete(f.servers, k)
		}
	}
	for _, s := range f.servers {
		s.trim(now.Add(-f.cfg.Window))
	}
	f.keepRead(now)
}

// keepRead adds this read's increments of each group (its servers' tick
// taken at now) to perRead, and drops those past the window.
func (f *fleetState) keepRead(now time.Time) {
	if f.perRead == nil {
		f.perRead = map[string][]groupRead{}
	}
	sums := map[string]*engines.Reading{}
	for _, s := range f.servers {
		if s.readAt.Equal(now) {
			sum := sums[s.t.Group]
			if sum == nil {
				sum = &engines.Reading{}
				sums[s.t.Group] = sum
			}
			add(sum, s.read)
			s.read = engines.Reading{} // taken: its histograms are not held to the next read
		}
	}
	for g, sum := range sums {
		f.perRead[g] = append(f.perRead[g], groupRead{read: int32(f.reads), at: now, d: *sum})
	}
	from := now.Add(-f.cfg.Window)
	for g, rs := range f.perRead {
		i := 0
		for i < len(rs) && rs[i].at.Before(from) {
			i++
		}
		if i == len(rs) {
			delete(f.perRead, g)
			continue
		}
		f.perRead[g] = append(rs[:0], rs[i:]...)
	}
}

// take is one server's observation.
func (f *fleetState) take(s *server, now time.Time, o Observation) {
	if o.Err != nil {
		s.failures++
		s.state, s.err = StateDown, sanitize.Short(sanitize.Text(o.Err.Error()), maxErrLen)
		if errors.Is(o.Err, engines.ErrUnknown) {
			s.state = StateUnknown
		}
		return
	}
	r := o.Reading
	s.engine, s.err = r.Engine, ""
	if !s.has {
		s.last, s.lastAt, s.has = r, now, true
		s.state = StateStarting
		return
	}
	d, reset := engines.Since(s.last, r)
	dt := now.Sub(s.lastAt)
	s.last, s.lastAt = r, now
	if why := implausible(d, dt); why != "" {
		s.state, s.err = StateImplausible, why+": read set aside"
		s.implausible++
		return
	}
	s.state = StateUp
	if reset {
		s.restarts++
		s.state = StateRestarted
	}
	s.read, s.readAt = d, now
	s.keep(now, d, f.slot())
	if d.GenTokens.V > 0 || r.Running.V == 0 {
		s.lastToken = now
	} else if now.Sub(s.lastToken) >= f.cfg.StallAfter {
		s.state = StateStalled
	}
	t := f.totals[s.t.Group]
	if t == nil {
		t = &engines.Reading{}
		f.totals[s.t.Group] = t
	}
	f.mismatched += add(t, d)
}

// implausible says which of d's increments rose faster over dt than
// any server serves ("": none). A restart's increments count from zero,
// within dt as well.
func implausible(d engines.Reading, dt time.Duration) string {
	sec := max(dt.Seconds(), 0.001)
	for _, c := range []struct {
		what string
		v    float64
		max  float64
	}{
		{"requests", d.Requests.V, maxRequestsPerSec}, {"failed requests", d.Failed.V, maxRequestsPerSec},
		{"aborted requests", d.Aborted.V, maxRequestsPerSec}, {"rejected requests", d.Rejected.V, maxRequestsPerSec},
		{"preemptions", d.Preemptions.V, maxRequestsPerSec},
		{"TTFT observations", d.TTFT.Total(), maxRequestsPerSec}, {"E2E observations", d.E2E.Total(), maxRequestsPerSec},
		{"queue observations", d.Queue.Total(), maxRequestsPerSec},
		{"prompt tokens", d.PromptTokens.V, maxTokensPerSec}, {"generated tokens", d.GenTokens.V, maxTokensPerSec},
		{"cached prompt tokens", d.CachedPromptTokens.V, maxTokensPerSec}, {"ITL observations", d.ITL.Total(), maxTokensPerSec},
	} {
		if c.v > c.max*sec {
			return fmt.Sprintf("%s rose by %.3g in %s, past %.0g a second", c.what, c.v, dt.Round(time.Millisecond), c.max)
		}
	}
	return ""
}

// slot is how long a server's tick may span: one read, or longer when
// the fleet's reads over the window would pass maxSlots.
func (f *fleetState) slot() time.Duration {
	return max(f.cfg.Every, f.cfg.Window*time.Duration(len(f.servers))/maxSlots)
}

// keep adds a read's increments d at now to the server's ticks: a tick
// of its own, or into the last one while that spans less than slot.
// A tick's histograms are its own (d may be the reading itself, after a
// restart): they are summed into.
func (s *server) keep(now time.Time, d engines.Reading, slot time.Duration) {
	// A read of other buckets (the server restarted with others) starts
	// a tick of its own.
	if n := len(s.ticks); n > 0 && now.Sub(s.ticks[n-1].from) < slot && fits(s.ticks[n-1].d, d) {
		last := &s.ticks[n-1]
		add(&last.d, d)
		last.at = now
		return
	}
	var own engines.Reading
	add(&own, d)
	s.ticks = append(s.ticks, tick{from: now, at: now, d: own})
}

// fits says whether add(&sum, d) takes all of d: each histogram of d
// has sum's bounds, or sum has none.
func fits(sum, d engines.Reading) bool {
	for _, p := range [][2]*engines.Histogram{{sum.TTFT, d.TTFT}, {sum.ITL, d.ITL}, {sum.E2E, d.E2E}, {sum.Queue, d.Queue}} {
		if p[0] != nil && p[1] != nil && len(p[1].Counts) > 0 && !sameBounds(p[0].Bounds, p[1].Bounds) {
			return false
		}
	}
	return true
}

// trim drops the ticks that began before from: what is kept spans from
// its first tick's start (span).
func (s *server) trim(from time.Time) {
	i := 0
	for i < len(s.ticks) && s.ticks[i].from.Before(from) {
		i++
	}
	if i > 0 {
		s.ticks = append(s.ticks[:0], s.ticks[i:]...)
	}
}

// add adds increments d into sum, counters and histograms; it returns
// how many of d's histograms were left out for buckets unlike sum's.
func add(sum *engines.Reading, d engines.Reading) (mismatched int) {
	if sum.Engine == "" {
		sum.Engine = d.Engine
	}
	for _, p := range []struct{ to, from *engines.Value }{
		{&sum.Requests, &d.Requests}, {&sum.Failed, &d.Failed}, {&sum.Aborted, &d.Aborted},
		{&sum.Rejected, &d.Rejected}, {&sum.PromptTokens, &d.PromptTokens}, {&sum.GenTokens, &d.GenTokens},
		{&sum.CachedPromptTokens, &d.CachedPromptTokens}, {&sum.Preemptions, &d.Preemptions},
	} {
		if p.from.Has {
			p.to.V += p.from.V
			p.to.Has = true
		}
	}
	for _, p := range []struct{ to, from **engines.Histogram }{
		{&sum.TTFT, &d.TTFT}, {&sum.ITL, &d.ITL}, {&sum.E2E, &d.E2E}, {&sum.Queue, &d.Queue},
	} {
		h := *p.from
		if h == nil || len(h.Counts) == 0 {
			continue
		}
		if *p.to == nil {
			// The bounds are shared, never written: the sums only add counts.
			*p.to = &engines.Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts))}
		}
		to := *p.to
		if !sameBounds(to.Bounds, h.Bounds) {
			mismatched++
			continue
		}
		for i, c := range h.Counts {
			to.Counts[i] += c
		}
		to.Sum += h.Sum
	}
	return mismatched
}

func sameBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true // one page's bounds, summed again in a window
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsInf(a[i], 1) && math.IsInf(b[i], 1)) {
			return false
		}
	}
	return true
}

// total and failed are a reading's requests ended and those that
// failed: finished ones (every reason) and those refused at the door;
// failed, aborted and refused ones fail.
func total(r engines.Reading) float64 { return r.Requests.V + r.Rejected.V }
func failed(r engines.Reading) float64 {
	return r.Failed.V + r.Aborted.V + r.Rejected.V
}
