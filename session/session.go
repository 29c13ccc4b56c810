// Package session owns a followed load of any kind: one runner (Single),
// a canary beside a baseline (Pair), one load whose answers are split by
// the backend that gave them (Split), a capacity search driving one of
// them (Search), and the agents' loads merged (Agents, or a Pair of their
// two merges). Start is the one place that starts any of them, from a
// Spec. The dashboard, the SSH watchers and a headless run reach every
// kind the same way: the sides' snapshots and the controller the keys act
// on, a fail-fast gate (Gate), one follower (Follow) and one epilogue
// (End), which returns a typed Outcome: the reports, the failures, the
// exit code. What only some kinds do is an optional capability named
// beside Session (Comparing, Releaser, Driver, AgentsFollowed), never a
// method some kinds leave empty.
//
// Imports point one way: session uses runner, compare and capacity; the
// agents' merges come to it as the interfaces it names (Merge,
// MergePair), which fleet's types meet, so that neither links the other
// (fleet/fleetflag joins them); the command layer uses session; ui and
// sshserver never see a runner.
package session

import (
	"context"
	"io"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

// Session is a followed load of any kind. Its methods are safe from any
// goroutine.
type Session interface {
	// What names the load in a line, sanitised: the endpoint, a pair's
	// canary, a split's grouping, the agents.
	What() string
	// Sides are the loads followed, each with its own snapshots: one, or
	// a pair's baseline then its canary. The first is the one a dashboard
	// shows.
	Sides() []Side
	// Controller is what the dashboard's keys act on.
	Controller() load.Controller
	// Finish ends the run for why: what is in flight drains.
	Finish(why string)
	// Stop ends the load at once; it may be called more than once.
	Stop() error
	// Conclude is the end of the run: the sides' reports as last shows
	// them (a snapshot per side), each with its breaches (the fail-fast
	// windows' verdicts), and the last comparison. Called once, after Stop.
	Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion
	// Save writes the reports of the run as s (the first side's snapshot)
	// shows it into dir, the s key's, and says where.
	Save(ctx context.Context, s load.Snapshot, dir string) (string, error)
	// View is what a dashboard shows beside the snapshots.
	View() View
}

// Comparing is a Session that compares (a pair, a split): its live
// verdict, and the last word once the load has stopped.
type Comparing interface {
	Session
	// Live is the newest live comparison; ok is false before the first.
	Live() (l Look, ok bool)
	// LastWord writes what is left of a dashboard's live verdict once the
	// load has stopped: the comparison's table (more resamples than the
	// live line's).
	LastWord(w io.Writer) error
}

// Releaser is a Session whose Stop may leave infertop's own metrics
// served for a last scrape (runner.Config.HoldMetrics): Release stops
// serving them; it may be called more than once.
type Releaser interface {
	Session
	Release()
}

// AgentsFollowed is a Session of agents' loads (run --agents): the
// agents' table (infertop.agents' rows), as the last snapshot saw it,
// for the dashboard's panel.
type AgentsFollowed interface {
	Session
	Agents() *report.AgentsJSON
}

// Release stops serving s's metrics where Stop left them served (a
// Releaser); nothing for any other kind.
func Release(s Session) {
	if r, ok := s.(Releaser); ok {
		r.Release()
	}
}

// LastWord writes s's last word when it compares (Comparing); nothing
// for any other kind.
func LastWord(s Session, w io.Writer) error {
	if c, ok := s.(Comparing); ok {
		return c.LastWord(w)
	}
	return nil
}

// Side is one load a session follows: its snapshots and its objectives.
// *runner.Runner is one.
type Side interface {
	// Subscribe is a subscription to the side's snapshots (latest wins);
	// the channel closes after the last.
	Subscribe() (<-chan load.Snapshot, func())
	// Latest is the newest snapshot.
	Latest() load.Snapshot
	// Check checks the side's objectives over s's window.
	Check(s load.Snapshot, scope string) []slo.Verdict
	// Objectives are the side's objectives; Figures joins the telemetry
	// over s's window to it.
	Objectives() []slo.Objective
	Figures(s load.Snapshot) telemetry.Figures
}

// Look is the live comparison at one moment, as a follower reads it.
type Look struct {
	// Line is the verdict in a line, for a person.
	Line string
	// Breaches are the regressions breached with confidence now (typed:
	// a gate is never read from its text).
	Breaches []compare.Failure
	// Regressed says who regressed, as the run's end says it when the
	// gate ends the run ("the canary regressed").
	Regressed string
	// Anytime says the breaches come from confidence sequences, valid at
	// every look: the gate acts on the first (see Gate.Regression).
	Anytime bool
}

// View is what a dashboard of a session shows beside the first side's
// snapshots. Nil fields: the session has none.
type View struct {
	// Compare is a pair's live comparison; Groups a split's.
	Compare func() (compare.Comparison, bool)
	Groups  func() (compare.Grouping, bool)
	// Search is the engine a capacity search may drive; nil where a
	// search would leave something behind (a pair's canary).
	Search capacity.Engine
	// Canary is the canary's subscription in a pair.
	Canary func() (<-chan load.Snapshot, func())
}

// Conclusion is what a session says at its end, before the epilogue
// judges it.
type Conclusion struct {
	// Reports are the sides' reports, breaches included; the first is the
	// one written to files and holds the comparison.
	Reports []*report.Report
	// Table writes the comparison's table after the reports' text; nil:
	// none.
	Table func(io.Writer) error
	// Failures are the comparison's gates that did not pass, or the
	// search's reason it found nothing; Breached whether the last
	// comparison breached a regression with confidence.
	Failures []compare.Failure
	Breached bool
	// Headline starts the exit error's line when something failed (""
	// for an SLO alone).
	Headline string
	// Err is a reason the run failed beyond the gates (a search that
	// found nothing, or was cut short): exit 1.
	Err error
}

// Every kind of load is a Session, each with its capabilities.
var (
	_ Session        = (*Single)(nil)
	_ Releaser       = (*Single)(nil)
	_ Comparing      = (*Pair)(nil)
	_ Releaser       = (*Pair)(nil)
	_ Comparing      = (*Split)(nil)
	_ Releaser       = (*Split)(nil)
	_ Releaser       = (*Search)(nil)
	_ Driver         = (*Search)(nil)
	_ AgentsFollowed = (*Agents)(nil)
)
