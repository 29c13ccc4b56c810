package load

import "time"

// Controller is what a person's keys, a follower's controls and an
// agent's board act on: the knobs, the rolling window, a reset. *Engine
// is one; a comparison's pair and the agents' merge are others. It is the
// one declaration of it: ui, session and agent all take this one.
type Controller interface {
	Update(func(*Knobs)) Knobs
	SetWindow(time.Duration)
	Reset()
}

// The optional capabilities of a Controller, named beside it (as k6
// names PausableExecutor beside Executor). A caller that needs one asks
// for it by name; none is found through an unnamed interface.

// KnobReader is a Controller that tells its knobs as they are now, not
// as the last snapshot's tick saw them (*Engine).
type KnobReader interface {
	Knobs() Knobs
}

// Phaser is a Controller that starts a phase on demand (*Engine, a
// comparison's pair): every agent starts one at every change of the
// whole, its own share changed or not, so their phases line up in the
// merge; NewPhaseFrom takes an id at least least (one a follower named).
type Phaser interface {
	NewPhase(func(*Knobs)) (Knobs, int)
	NewPhaseFrom(least int, f func(*Knobs)) (Knobs, int)
}

// Finisher is a Controller that ends its run, what is in flight
// draining (*Engine, a comparison's pair).
type Finisher interface {
	Finish(why string)
}

// Every capability *Engine has.
var (
	_ Controller = (*Engine)(nil)
	_ KnobReader = (*Engine)(nil)
	_ Phaser     = (*Engine)(nil)
	_ Finisher   = (*Engine)(nil)
)
