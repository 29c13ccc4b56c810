package load

// NewPhase changes the knobs through f, as Update does, and starts a new
// phase even when nothing changed; it returns the knobs and the new
// phase's id. A driver of the knobs (a capacity search) needs both: a
// phase boundary after a step's warm-up, where no knob turns, and the id
// of the phase it is about to judge, known for certain even when a person
// turns a knob at the same moment (the id is read under the engine's lock,
// in the same change).
func (e *Engine) NewPhase(f func(*Knobs)) (k Knobs, phase int) {
	k = e.update(func(k *Knobs) {
		f(k)
		phase = e.phaseSeq + 1 // update holds e.mu and, asked for a new phase, starts one (unless the run is ending: then nothing is judged)
	}, true)
	return k, phase
}

// NewPhaseFrom is NewPhase with the new phase's id at least least: the
// agents of one load, each its own engine, number the phases a follower
// starts on all of them alike (the follower names the id), so that one
// phase of the whole is one id in every agent's result, whatever phases
// each began on its own before (a late start, a restart).
func (e *Engine) NewPhaseFrom(least int, f func(*Knobs)) (k Knobs, phase int) {
	k = e.update(func(k *Knobs) {
		f(k)
		e.phaseSeq = max(e.phaseSeq, least-1) // update holds e.mu
		phase = e.phaseSeq + 1
	}, true)
	return k, phase
}
