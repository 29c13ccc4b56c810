// Package session owns a followed load of any kind behind one narrow
// interface: one runner (Single), a canary beside a baseline (Pair), one
// load whose answers are split by the backend that gave them (Split), and
// a capacity search driving one of them (Search). The dashboard, the SSH
// watchers and a headless run reach every kind the same way: the sides'
// snapshots and the controller the keys act on, the live verdict, a
// fail-fast gate (Gate), one follower (Follow) and one epilogue (End),
// which returns a typed Outcome: the reports, the failures, the exit code.
//
// Imports point one way: session uses runner, compare and capacity; the
// command layer uses session; ui and sshserver never see a runner.
package session

import (
	"context"
	"io"
	"time"

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
	// canary, a split's grouping.
	What() string
	// Sides are the loads followed, each with its own snapshots: one, or
	// a pair's baseline then its canary. The first is the one a dashboard
	// shows.
	Sides() []Side
	// Controller is what the dashboard's keys act on.
	Controller() Controller
	// Live is the newest live comparison, if the session compares; ok is
	// false before the first, and always for a load that compares nothing.
	Live() (l Look, ok bool)
	// Finish ends the run for why: what is in flight drains.
	Finish(why string)
	// Stop ends the load at once; it may be called more than once.
	Stop() error
	// Release stops serving infertop's own metrics where Stop left them
	// served for a last scrape (runner.Config.HoldMetrics); it may be
	// called more than once.
	Release()
	// Conclude is the end of the run: the sides' reports as last shows
	// them (a snapshot per side), each with its breaches (the fail-fast
	// windows' verdicts), and the last comparison. Called once, after Stop.
	Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion
	// Save writes the reports of the run as s (the first side's snapshot)
	// shows it into dir, the s key's, and says where.
	Save(ctx context.Context, s load.Snapshot, dir string) (string, error)
	// View is what a dashboard shows beside the snapshots.
	View() View
	// LastWord writes what is left of a dashboard's live verdict once the
	// load has stopped: a comparison's table (more resamples than the
	// live line's); nothing for a load that compares nothing.
	LastWord(w io.Writer) error
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

// Controller is what the keys act on: the knobs, the window, a reset.
// *load.Engine is one; a Pair moves both of its loads.
type Controller interface {
	Update(func(*load.Knobs)) load.Knobs
	SetWindow(time.Duration)
	Reset()
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

// Every kind of load is a Session.
var (
	_ Session = (*Single)(nil)
	_ Session = (*Pair)(nil)
	_ Session = (*Split)(nil)
	_ Session = (*Search)(nil)
	_ Driver  = (*Search)(nil)
)
