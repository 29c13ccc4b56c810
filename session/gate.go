package session

import (
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// SustainedBreach is how long a live bootstrap comparison must keep
// breaching a regression before the fail-fast gate ends the run: three
// of the comparisons made once a second, so one unlucky draw ends
// nothing. A confidence sequence's breach needs none: its error is
// bounded over every look of the run, and waiting only delays a call
// already as sure as it says (standing 2 s moved the bootstrap's false
// calls by nothing: it delays them).
const SustainedBreach = 2 * time.Second

// Gate is the fail-fast rule (k6's abort-on-fail with a grace period is
// the model): an SLO ends the run at its first full window that breaks
// it; a live regression ends it once its breach has stood Grace. The zero
// Gate (Off) ends nothing. A Gate is used by one goroutine, the
// follower's.
type Gate struct {
	// On arms the gate.
	On bool
	// Window is the SLOs' window: a window is judged once it is full.
	Window time.Duration
	// Grace is how long a live breach must stand (0: SustainedBreach).
	Grace time.Duration

	since time.Time // when the live comparison began breaching (zero: it does not)
}

// SLO is the objectives s's window breaks on side, once the window is
// full (the run has lasted one, and the window holds all of it but the
// second now filling); none while the run ends or with the gate off.
func (g *Gate) SLO(side Side, s load.Snapshot) []slo.Verdict {
	if !g.On || s.Ending() || s.Elapsed < g.Window || s.Covered <= g.Window-time.Second {
		return nil
	}
	var out []slo.Verdict
	for _, v := range side.Check(s, "window ending "+s.Elapsed.Round(time.Second).String()) {
		if !v.Held {
			out = append(out, v)
		}
	}
	return out
}

// Regression is the live look l's breaches at now: at once when they
// come from confidence sequences (l.Anytime: every look of the run is
// inside their error already), else once they have stood the grace
// period, nil before (and whenever l breaches nothing: the period starts
// again). The regression's tolerance, not the verdict's zero, is what a
// breach must clear: the margin the person set.
func (g *Gate) Regression(l Look, now time.Time) []compare.Failure {
	if !g.On || len(l.Breaches) == 0 {
		g.since = time.Time{}
		return nil
	}
	if l.Anytime {
		return l.Breaches
	}
	if g.since.IsZero() {
		g.since = now
	}
	grace := g.Grace
	if grace <= 0 {
		grace = SustainedBreach
	}
	if now.Sub(g.since) < grace {
		return nil
	}
	return l.Breaches
}
