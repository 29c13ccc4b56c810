package compare

// held is the running intersection of each statistic's confidence
// sequence over the looks of one setting. A confidence sequence's
// intervals hold the truth at every look at once, so their intersection
// over the looks so far does too (Howard, Ramdas, McAuliffe and Sekhon
// 2021, "Time-uniform, nonparametric, nonasymptotic confidence
// sequences", Annals of Statistics 49(2), §6: the running intersection).
// Kept, a breach a live look called, and a --fail-fast gate acted on,
// stays called at the later looks that only read wider, the run's
// conclusion included: without it the conclusion was a fresh look that
// could undo it (a short run's last look read the design effect higher,
// and TPOT's interval (−100 %, +∞), after the gate had failed the run on
// it).
//
// Not safe for concurrent use: its owner's lock guards it.
type held struct {
	by map[string]Interval
}

// narrow is [lo, hi] intersected with the statistic's intervals before
// it, kept for the next look. An interval disjoint from the ones before
// means the sequence has missed at some look: the chance its level
// allows, or a load that changed under it (a canary fast while it warmed
// up, then slower). The intersection starts over from the newest then:
// kept, an early "better" would hide every later breach.
func (h *held) narrow(name string, lo, hi float64) (float64, float64) {
	if h.by == nil {
		h.by = map[string]Interval{}
	}
	if iv, ok := h.by[name]; ok && max(lo, iv.Lo) <= min(hi, iv.Hi) {
		lo, hi = max(lo, iv.Lo), min(hi, iv.Hi)
	}
	h.by[name] = Interval{Lo: lo, Hi: hi}
	return lo, hi
}

// reset forgets every interval: a new setting, or a reset.
func (h *held) reset() { h.by = nil }

// narrowing is how a comparison intersects a statistic's interval with
// the looks before (held.narrow under its owner's lock, for the
// setting the comparison's data are of); nil: each look stands alone.
type narrowing func(st Stat, lo, hi float64) (float64, float64)
