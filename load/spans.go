package load

import (
	"cmp"
	"slices"
	"time"
)

// span is a stretch of run time, from up to to.
type span struct{ from, to time.Duration }

// measuredSpans are the stretches of run time the run's and the window's
// rates are over: the span of every phase but the warm-up and the paused
// ones, merged where they overlap (a phase's last requests may finish
// after the next phase began). A rate is over the time it describes, so
// the warm-up, which is in none of those figures, is in none of their
// denominators either, and a pause is in them only while the requests
// it found in flight finish (they are the phase before it's).
func measuredSpans(phases []Phase) []span {
	var out []span
	for _, p := range phases {
		if p.Warmup || p.Knobs.Paused || p.Duration <= 0 {
			continue
		}
		out = append(out, span{p.Start, p.Start + p.Duration})
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && s.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// within is how much of spans lies between from and to.
func within(spans []span, from, to time.Duration) time.Duration {
	var d time.Duration
	for _, s := range spans {
		if lo, hi := max(s.from, from), min(s.to, to); hi > lo {
			d += hi - lo
		}
	}
	return d
}

// total is the length of spans (merged: none overlaps another).
func total(spans []span) time.Duration {
	var d time.Duration
	for _, s := range spans {
		d += s.to - s.from
	}
	return d
}
