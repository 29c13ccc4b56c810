package fleet

import (
	"cmp"

	"fmt"

	"slices"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/latest"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"

	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

// Merging is the agents followed as one load, merged: a source of
// snapshots (session follows it as one side), a controller, the agents'
// table and the final merged report. Each snapshot's run
// counters are the sum of the agents' last states (every PollEvery); its
// run figures and phases the exact merge of their last results (every
// ResultEvery), as is the final report. Its rolling window (latencies,
// counts, rates) and its series are the exact merge of the agents'
// sealed seconds (/seconds, every PollEvery): counters summed,
// histograms added bucket for bucket, seconds aligned on the common
// start (see place), a second merged once every live agent has sent it
// or once it is mergeGrace seconds behind the newest (see mergeGrace);
// the window is the last W seconds merged, W the window set (the
// default's before any). Agents that serve no seconds leave the window
// at the run so far. Its controller moves every agent: it keeps the
// whole load's knobs and sends them to the agents, each taking its
// share.
type Merging struct {
	f     *Fleet
	objs  []slo.Objective
	what  string // the agents' name, set once: What is read from any goroutine
	done  chan struct{}
	once  sync.Once
	known chan struct{} // closed once the whole knobs are known (behind cmu)

	cmu sync.Mutex
	ctl whole

	hub latest.Hub[load.Snapshot]

	mu    sync.Mutex
	final *report.MergedResult
	err   error // the final merge's
	view  View
}

// NewMerging follows f's agents; objs are the follower's own objectives
// (--slo), checked over the merge with the agents' own.
func NewMerging(f *Fleet, objs []slo.Objective) *Merging {
	what := "agents " + sanitize.Text(f.cfg.Source.String())
	if f.cfg.Canary {
		what += ", their canary"
	}
	s := &Merging{f: f, objs: objs, done: make(chan struct{}), known: make(chan struct{}), what: what}
	s.hub.Publish(load.Snapshot{Target: load.Target{URL: s.what}})
	go s.run()
	return s
}

// Fleet is the agents followed.
func (s *Merging) Fleet() *Fleet { return s.f }

// run turns the fleet's views into snapshots: a merge whenever a result
// came, the counters on every view; at the fleet's end the final merge.
func (s *Merging) run() {
	defer close(s.done)
	views, unsubscribe := s.f.Subscribe()
	defer unsubscribe()
	var base load.Snapshot
	front := noFrontier // the phase every running agent's merged result has reached
	var merged, firstResult time.Time
	results := map[string]any{}
	changed := false
	lv := live{every: s.f.cfg.PollEvery} // the window's merge, this goroutine's alone
	for v := range views {
		s.observe(v)
		for _, a := range v.Agents {
			// An address's load started again is another run there.
			if key := a.Addr + " " + a.State.Started.String(); a.Result != nil && results[key] != any(a.Result) {
				results[key], changed = a.Result, true
			}
		}
		// At most one merge every ResultEvery (the agents' results come
		// at their own moments): a merge decodes every histogram. The
		// first waits for every running agent's result, for the
		// configured ResultEvery at most (an agent's poller asks again
		// within it): one agent's alone would show its share as the
		// whole (its phases' knobs and counts).
		now := s.f.cfg.Now()
		if changed && firstResult.IsZero() {
			firstResult = now
		}
		waitAll := merged.IsZero() && !v.Done && !everyResult(v) && now.Sub(firstResult) < s.f.cfg.ResultEvery
		if !waitAll && changed && now.Sub(merged) >= s.f.resultEvery() || v.Done {
			merged, changed = now, false
			if m, err := mergeView(v, !v.Done); err == nil {
				base = report.SnapshotOf(m.Result, m.MaxConcurrency)
				front = phaseFrontier(v) // of the results merged, not of a later view's
				// The agents' model and protocol, as their results name
				// them (untrusted: sanitised).
				base.Target.Model, base.Target.API = sanitize.Text(m.Result.Manifest.Model), sanitize.Text(m.Result.Manifest.API)
				if v.Done {
					s.setFinal(m, nil)
				}
			} else if v.Done {
				s.setFinal(nil, err)
			}
		}
		snap := s.snapshot(base, front, v)
		lv.apply(&snap, v, s.window(), s.f.cfg.Now())
		s.publish(snap, v)
		if v.Done {
			return
		}
	}
	// The fleet stopped before its end (Stop): the last view is final.
	v := s.f.Latest()
	m, err := Merge(v)
	s.setFinal(m, err)
	snap := s.snapshot(base, noFrontier, v)
	lv.apply(&snap, v, s.window(), s.f.cfg.Now())
	snap.Done = true
	s.publish(snap, v)
}

// everyResult says every agent found has sent a result, but those done
// with none, lost, unreachable, refused or replaced (one yet to answer,
// or whose load is yet to start, has not).
func everyResult(v View) bool {
	for i := range v.Agents {
		if a := &v.Agents[i]; (a.Status == report.AgentRunning || a.Status == report.AgentWaiting) && a.Result == nil {
			return false
		}
	}
	return true
}

// window is the rolling window the agents were set to (the default's
// before any).
func (s *Merging) window() time.Duration {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.ctl.window > 0 {
		return s.ctl.window
	}
	return load.DefaultWindow
}

func (s *Merging) setFinal(m *report.MergedResult, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.final, s.err = m, err
}

// snapshot is base (the last merge) with v's counters: each agent's
// last state summed, its requests in flight counted incomplete once it
// is over and was not seen to finish them. Its phases' times are put on
// the follower's clock (View.Started), as its elapsed time and series
// are: the agents' phases start on their common start's. Its phases are
// those up to front, the newest every running agent's merged result has
// reached (see phaseFrontier), and every phase this follower named up to
// it that sent nothing yet (in no result: a search's drain, a phase just
// begun), empty.
func (s *Merging) snapshot(base load.Snapshot, front int, v View) load.Snapshot {
	out := base
	out.Seq = v.Seq
	out.Target = load.Target{URL: s.what, Model: base.Target.Model, API: base.Target.API}
	out.Phases = slices.Clone(base.Phases)
	if at, ok := commonStart(v); ok {
		shift := at.Sub(v.Started)
		for i := range out.Phases {
			out.Phases[i].Start += shift
			out.Phases[i].End += shift
		}
	}
	if front != noFrontier && !v.Done {
		// A phase is shown once every running agent's result has it: one
		// that some have not reached yet would be judged (a search's step)
		// on the agents that have, and the phase before it would look
		// over while one of them still sends in it.
		out.Phases = slices.DeleteFunc(out.Phases, func(p load.Phase) bool { return p.ID > front })
		for _, n := range s.namedUpTo(front) {
			if !slices.ContainsFunc(out.Phases, func(p load.Phase) bool { return p.ID == n.id }) {
				out.Phases = append(out.Phases, load.Phase{ID: n.id, Knobs: n.knobs, Start: n.at.Sub(v.Started)})
			}
		}
		slices.SortFunc(out.Phases, func(a, b load.Phase) int { return cmp.Compare(a.ID, b.ID) })
	}
	if n := len(out.Phases); n > 0 {
		out.Phases[n-1].Current = !v.Done
	}
	if k, ok := s.wholeKnobs(); ok { // what the keys move: the whole
		out.Knobs = k
	}
	if base.Run.Sent() > 0 || len(v.Agents) > 0 {
		var c, f, inc, pend, sched int64
		var backlog int
		var streams load.Streams
		for _, a := range v.Agents {
			if a.Status == report.AgentRefused || !a.HasState {
				continue
			}
			row := AgentRow(a)
			c, f, inc, pend = c+row.Completed, f+row.Failed, inc+row.Incomplete, pend+row.InFlight
			if a.Status == report.AgentRunning {
				streams = addStreams(streams, a.State.Streams.Load())
				backlog += max(a.State.Backlog, 0)
			}
			sched += max(a.State.Scheduled, 0)
		}
		out.Backlog = backlog
		if !v.Done || base.Run.Sent() == 0 {
			out.Scheduled = sched
		}
		out.Streams, out.OldestInFlight = streams, max(streams.OldestWaiting, streams.OldestGenerating)
		if !v.Done || base.Run.Sent() == 0 { // the final merge's counts are the agents' final results'
			out.Run.Completed, out.Run.Failed, out.Run.Incomplete, out.Run.Pending = c, f, inc, pend
			out.TotalCompleted, out.TotalFailed, out.InFlight, out.Incomplete = c, f, int(pend), inc
		}
	}
	// The follower's clock, live and at the end: its series and phases
	// are on it (a follower that came late shows the seconds the agents
	// ran before it, at negative times); the merged run's own length is
	// the report's.
	out.Elapsed = s.f.cfg.Now().Sub(v.Started)
	why := s.finishing()
	if !v.Done {
		out.Done, out.DoneWhy = false, why // the runs end: a second signal stops at once
	} else {
		out.Done, out.DoneWhy = true, v.DoneWhy
		if why != "" { // why they ended, not that they did
			out.DoneWhy = why
		}
	}
	if v.Done && base.Run.Sent() == 0 && out.LastError == "" {
		// Nothing merged at the end: it says which agents gave nothing.
		out.LastError = noResultsWhy(v.Agents)
	}
	return out
}

// noResultsWhy names the agents, their states and why when none gave a
// result, in a line: "no agent's result came: 127.0.0.1:7070
// unreachable (never answered: ...), ..."; "" when one did.
func noResultsWhy(as []Agent) string {
	var parts []string
	for _, a := range as {
		if a.Result != nil && a.Status != report.AgentRefused {
			return ""
		}
		part := sanitize.Text(a.Addr) + " " + a.Status
		if a.Why != "" { // why it gave nothing (a certificate, a redirect, a refusal): one line, cut
			part += " (" + sanitize.Short(a.Why, maxWhyBytes) + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
	}
	if len(parts) == 0 {
		return ""
	}
	return ErrNoResults.Error() + ": " + strings.Join(parts, ", ")
}

// maxWhyBytes bounds an agent's reason quoted in a line of several.
const maxWhyBytes = 160

// Knobs are the whole load's knobs (zero before any agent said them).
func (s *Merging) Knobs() load.Knobs {
	k, _ := s.wholeKnobs()
	return k
}

// publish makes snap the latest and offers it to every subscriber; the
// last (Done) closes them.
func (s *Merging) publish(snap load.Snapshot, v View) {
	s.mu.Lock()
	s.view = v
	s.mu.Unlock()
	s.hub.Publish(snap)
	if snap.Done {
		s.hub.Close()
	}
}

// AgentsView is the fleet as the last snapshot saw it.
func (s *Merging) AgentsView() View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view
}

// Table is the agents' table as the last snapshot saw it (infertop.agents'
// rows): what a dashboard's panel shows.
func (s *Merging) Table() *report.AgentsJSON { return agentsJSON(s.AgentsView()) }

// What names the agents.
func (s *Merging) What() string { return s.what }

// Subscribe is a subscription to the merged snapshots (latest wins); the
// channel closes after the last (Done).
func (s *Merging) Subscribe() (<-chan load.Snapshot, func()) { return s.hub.Subscribe() }

// Latest is the newest merged snapshot.
func (s *Merging) Latest() load.Snapshot {
	snap, _ := s.hub.Latest()
	return snap
}

// Check checks the follower's objectives over snap's window.
func (s *Merging) Check(snap load.Snapshot, scope string) []slo.Verdict {
	return slo.CheckAll(s.objs, s.Figures(snap).Window, scope)
}

// Objectives are the follower's objectives (--slo).
func (s *Merging) Objectives() []slo.Objective { return s.objs }

// Figures are snap's figures: the follower scrapes no server of its own.
func (s *Merging) Figures(snap load.Snapshot) telemetry.Figures { return telemetry.Join(snap, nil) }

// Controller moves every agent: the whole load's knobs, the window, a
// reset, sent to each agent (its share of the knobs its own to take).
func (s *Merging) Controller() load.Controller { return control{s} }

// Finish ends the follow for why: an interruption (a signal) stops
// waiting for the agents, which run on; any other end (a gate's
// --fail-fast) ends their runs too (FinishAgents), as it ends one
// machine's, the follower waiting for their last words.
func (s *Merging) Finish(why string) {
	if why != load.EndInterrupted {
		s.FinishAgents(why)
		return
	}
	s.f.Finish("the follower stopped: " + why)
}

// Stop stops following; it may be called more than once.
func (s *Merging) Stop() {
	s.once.Do(func() {
		s.f.Stop()
		<-s.done
	})
}

// Final is the merged report of the run, once it is over: the exact
// merge of the agents' final (or last) results, the agents' table
// inside, checked against the follower's objectives and the agents'
// own. ErrNoResults: no agent's result came.
func (s *Merging) Final() (*report.Report, error) {
	s.mu.Lock()
	m, err := s.final, s.err
	s.mu.Unlock()
	if m == nil {
		if err == nil {
			err = fmt.Errorf("fleet: %w", ErrNoResults)
		}
		return nil, err
	}
	return s.report(m), nil
}

// Now is the merge of the agents' last results, as a report: what the s
// key saves.
func (s *Merging) Now() (*report.Report, error) {
	m, err := Merge(s.f.Latest())
	if err != nil {
		return nil, err
	}
	return s.report(m), nil
}

// report is m as a report: its snapshot and its verdicts.
func (s *Merging) report(m *report.MergedResult) *report.Report {
	snap := report.SnapshotOf(m.Result, m.MaxConcurrency)
	objs := slices.Clone(s.objs)
	var exprs []string
	for _, v := range m.Result.SLO {
		if !slices.ContainsFunc(objs, func(o slo.Objective) bool { return o.Expr == v.Expr }) && !slices.Contains(exprs, v.Expr) {
			exprs = append(exprs, v.Expr)
		}
	}
	if theirs, err := slo.ParseAll(exprs); err == nil {
		objs = append(objs, theirs...)
	}
	return &report.Report{Manifest: m.Result.Manifest, Final: snap, Merged: m, Verdicts: report.Verdicts(objs, snap, nil)}
}

// noFrontier: no running agent has sent a result (every phase merged is
// shown).
const noFrontier = -1

// phaseFrontier is the newest phase every running agent's last result
// has reached: the phase its state named as the result was asked for
// (Agent.ResultPhase), or its result's newest; noFrontier when no
// running agent has sent a result.
func phaseFrontier(v View) int {
	front := noFrontier
	for i := range v.Agents {
		a := &v.Agents[i]
		if a.Status != report.AgentRunning || a.Result == nil || a.Final {
			continue
		}
		last := a.ResultPhase
		if ps := a.Result.Result.Phases; len(ps) > 0 {
			last = max(last, ps[len(ps)-1].ID)
		}
		if front == noFrontier || last < front {
			front = last
		}
	}
	return front
}

// commonStart is the agents' run time 0 on this machine's clock: the
// earliest agent's load start, by its clock's offset (with --start-at,
// the common start, each agent within its own offset of it); ok is false
// before any agent's load has started.
func commonStart(v View) (at time.Time, ok bool) {
	for i := range v.Agents {
		a := &v.Agents[i]
		if !a.HasState || a.Status == report.AgentRefused || a.State.Started.IsZero() {
			continue
		}
		if t := a.State.Started.Add(-a.ClockOffset); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// addStreams is what the agents' requests in flight are doing, together:
// the counts summed, the oldest and the longest of any.
func addStreams(a, b load.Streams) load.Streams {
	return load.Streams{Waiting: a.Waiting + b.Waiting, Generating: a.Generating + b.Generating, Stalled: a.Stalled + b.Stalled,
		OldestWaiting: max(a.OldestWaiting, b.OldestWaiting), OldestGenerating: max(a.OldestGenerating, b.OldestGenerating),
		LongestStall: max(a.LongestStall, b.LongestStall)}
}
