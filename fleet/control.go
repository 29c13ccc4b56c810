package fleet

import (
	"cmp"
	"slices"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
)

// The merged agents' controller: the whole load's knobs as this
// follower sets them and the agents say them, the controls it sends
// (each a share's to take), the phases it names, and the engine a
// capacity search over the agents drives.

// whole is the controller's record (behind Merging.cmu): the whole
// load's knobs (known once an agent has said them, or the follower set
// them), the split, the last control's seq and the highest any agent
// has taken, the window and the last reset.
type whole struct {
	known    bool
	knobs    load.Knobs
	of       int
	seq      uint64
	seen     uint64
	window   time.Duration
	resetSeq uint64
	resetAt  time.Time
	// phase is the highest phase id this follower named or any agent
	// was seen in: the next phase it starts is past it on every agent.
	phase int
	// finish: the follower ended the agents' runs; every later control
	// says so too (an agent that comes late ends at once).
	finish    bool
	finishWhy string // why, as the follower said it
	// named are the phases this follower named, oldest first (at most
	// maxNamed).
	named []named
}

// observe takes the whole knobs from v's agents until this follower has
// sent any, and from an agent that took a newer control than its own
// (another follower's: the last word wins).
func (s *Merging) observe(v View) {
	var best *agent.State
	for i := range v.Agents {
		a := &v.Agents[i]
		if a.HasState && a.Status != report.AgentRefused && a.State.Whole != nil && (best == nil || a.State.ControlSeq > best.ControlSeq) {
			best = &a.State
		}
	}
	s.cmu.Lock()
	defer s.cmu.Unlock()
	w := &s.ctl
	if v.Of > 0 {
		w.of = v.Of
	}
	if best == nil {
		return
	}
	w.seen = max(w.seen, best.ControlSeq)
	for i := range v.Agents {
		if a := &v.Agents[i]; a.HasState && a.Status != report.AgentRefused {
			w.phase = max(w.phase, min(a.State.Phase, agent.MaxPhase))
		}
	}
	if w.known && best.ControlSeq <= w.seq {
		return
	}
	if k, err := best.Whole.Load(); err == nil {
		if !w.known {
			close(s.known)
		}
		w.known, w.knobs, w.seq = true, k, max(w.seq, best.ControlSeq)
	}
}

// wholeKnobs are the whole load's knobs, once known.
func (s *Merging) wholeKnobs() (load.Knobs, bool) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	return s.ctl.knobs, s.ctl.known
}

// next is the next control, past every seq an agent has taken; a reset
// is its own seq. A control that starts a phase (a change of the knobs,
// a search's step) names it, past every phase an agent is in, so that
// it is one id on every agent. s.cmu is held.
func (w *whole) next(reset, phase bool, now time.Time) agent.Control {
	// An agent's seq past MaxSeq is refused (roster.foreign): the count
	// never wraps.
	w.seq = min(max(w.seq, w.seen), agent.MaxSeq-1) + 1
	if reset {
		w.resetSeq, w.resetAt = w.seq, now
	}
	c := agent.Control{Seq: w.seq, WindowMS: w.window.Milliseconds(), ResetSeq: w.resetSeq}
	if w.known {
		k := agent.KnobsOf(w.knobs)
		c.Knobs = &k
	}
	if phase && w.phase < agent.MaxPhase {
		// Past phase 1 at the least: every agent's load begins in its
		// phase 1, and one that takes the control before its start
		// begins a phase past it.
		w.phase = max(w.phase, 1) + 1
		w.named = append(w.named, named{id: w.phase, knobs: w.knobs, at: now})
		if len(w.named) > maxNamed {
			w.named = slices.Delete(w.named, 0, len(w.named)-maxNamed)
		}
	}
	if len(w.named) > 0 {
		// Every control names the newest phase once one was: an agent
		// that takes this one first (late, or started again) starts it
		// under its id, not one of its own numbering.
		c.Phase = w.named[len(w.named)-1].id
	}
	c.Finish = w.finish
	return c
}

// control is the merged agents' controller: each method changes the
// whole and hands the control to the fleet's pollers, returning at once.
type control struct{ s *Merging }

// Update changes the whole knobs by fn, within what every share can
// take (agent.ClampWhole); before any agent has said them it moves
// nothing.
func (c control) Update(fn func(*load.Knobs)) load.Knobs {
	s := c.s
	s.cmu.Lock()
	w := &s.ctl
	if !w.known {
		s.cmu.Unlock()
		return s.Latest().Knobs
	}
	k := w.knobs
	fn(&k)
	k = agent.ClampWhole(k, w.of)
	if k == w.knobs {
		s.cmu.Unlock()
		return k
	}
	w.knobs = k
	out := w.next(false, true, s.f.cfg.Now())
	at := w.resetAt
	s.cmu.Unlock()
	s.f.Send(out, at)
	return k
}

// NewPhase is capacity.Engine's: the whole knobs changed by fn (within
// what every share takes), and a phase of the whole started on every
// agent, changed or not, its id the one returned (every agent's result
// then has that phase under that id; the merged snapshot's phases are
// theirs, merged). Before any agent has said the knobs it starts none,
// and says so with the id 0 (a search waits for Ready first), as it
// does when no id is left to name (an agent that says it is in the
// last, agent.MaxPhase: a search then stops as taken over).
func (s *Merging) NewPhase(fn func(*load.Knobs)) (load.Knobs, int) {
	s.cmu.Lock()
	w := &s.ctl
	if !w.known {
		s.cmu.Unlock()
		return s.Latest().Knobs, 0
	}
	if w.phase >= agent.MaxPhase { // no id left to name: nothing changes (a search then stops as taken over)
		k := w.knobs
		s.cmu.Unlock()
		return k, 0
	}
	k := w.knobs
	fn(&k)
	w.knobs = agent.ClampWhole(k, w.of)
	before := w.phase
	out := w.next(false, true, s.f.cfg.Now())
	// The phase is judged on the agents' results: fetched at every
	// poll for a while (HurryFor), not every ResultEvery.
	s.f.Hurry()
	at := w.resetAt
	k = w.knobs
	s.cmu.Unlock()
	s.f.Send(out, at)
	if out.Phase <= before { // no id left to name (an agent said it is at the last): none started
		return k, 0
	}
	return k, out.Phase
}

// Ending is closed once the agents' run is over (every agent done or
// lost) or the follower stopped: capacity.Engine's.
func (s *Merging) Ending() <-chan struct{} { return s.done }

// Ready is closed once the whole load's knobs are known (an agent said
// them): a search over the agents (capacity.Shared) starts its first
// step then.
func (s *Merging) Ready() <-chan struct{} { return s.known }

// Least is the lowest whole load over o every agent takes a share of: a
// request in flight each, or the open loop's slowest rate each
// (capacity.Shared).
func (s *Merging) Least(o capacity.Over) float64 {
	s.cmu.Lock()
	n := max(s.ctl.of, 1)
	s.cmu.Unlock()
	if o == capacity.Rate {
		return float64(n) * load.MinRate
	}
	return float64(n)
}

// FinishAgents ends every agent's run (agent.Control's Finish: each
// drains and its result becomes its last word), and the follower waits
// for their last words: the end of a capacity search over the agents.
func (s *Merging) FinishAgents(why string) {
	s.cmu.Lock()
	if !s.ctl.finish {
		s.ctl.finishWhy = sanitize.Text(why)
	}
	s.ctl.finish = true
	out, at := s.ctl.next(false, false, s.f.cfg.Now()), s.ctl.resetAt
	s.cmu.Unlock()
	s.f.Send(out, at)
}

// SetWindow sets every agent's rolling window, and the merged window's
// (the last d seconds of the agents' seconds merged); one that is none
// of load.Windows is no control.
func (c control) SetWindow(d time.Duration) {
	s := c.s
	s.cmu.Lock()
	if d == s.ctl.window || !slices.Contains(load.Windows(), d) {
		s.cmu.Unlock()
		return
	}
	s.ctl.window = d
	out, at := s.ctl.next(false, false, s.f.cfg.Now()), s.ctl.resetAt
	s.cmu.Unlock()
	s.f.Send(out, at)
}

// Reset resets every agent's statistics (those whose load started later
// have none to forget).
func (c control) Reset() {
	s := c.s
	s.cmu.Lock()
	out := s.ctl.next(true, true, s.f.cfg.Now()) // the engine's reset begins a phase: one id on every agent
	at := s.ctl.resetAt
	s.cmu.Unlock()
	s.f.Send(out, at)
}

// named is a phase this follower named: its id, the whole knobs it set,
// when it was named on this machine's clock.
type named struct {
	id    int
	knobs load.Knobs
	at    time.Time
}

// maxNamed bounds the phases remembered as named: a search names a few
// dozen, a person's keys some hundreds.
const maxNamed = 1024

// namedUpTo are the phases named, up to id front.
func (s *Merging) namedUpTo(front int) []named {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	var out []named
	for _, n := range s.ctl.named {
		if n.id <= front {
			out = append(out, n)
		}
	}
	return out
}

// settingSince is when the agents' knob setting began, on this
// machine's clock: the newest phase this follower named, or its last
// reset, whichever is later (zero: neither, the run's own).
func (s *Merging) settingSince() time.Time {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	at := s.ctl.resetAt
	if n := len(s.ctl.named); n > 0 && s.ctl.named[n-1].at.After(at) {
		at = s.ctl.named[n-1].at
	}
	return at
}

// finishing says why the follower ended the agents' runs
// (FinishAgents; "": it did not).
func (s *Merging) finishing() string {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if !s.ctl.finish {
		return ""
	}
	return cmp.Or(s.ctl.finishWhy, agent.FinishWhy)
}
