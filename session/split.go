package session

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// SplitConfig is a split: one load on one URL, its requests grouped by the
// backend that answered (a rolling update's old and new pods).
type SplitConfig struct {
	// Run is the load; Run.Probe.SplitBy says what groups the requests.
	Run runner.Config
	// Options configure the live comparison (Regressions, Confidence).
	Options compare.Options
	// Samples is how many of the newest requests a group keeps per metric
	// (0: DefaultSamples); Groups how many groups are named (0, or past
	// probe.MaxGroups: probe.MaxGroups).
	Samples, Groups int
	// BaselineGroup names the baseline group (a value as
	// probe.Result.Group holds it): that group is the baseline whenever it
	// appears, instead of the first seen. Empty: the first seen.
	BaselineGroup string
	// Every is how often the live comparison is computed (default 1 s).
	Every time.Duration
}

// Split is one load whose requests are compared group by group: the
// group seen first (or the one named) against each newer one. Like a Pair it is a
// controller (the dashboard's keys move its one engine), and its newest
// comparison is read live with Comparison. Its methods are safe from any
// goroutine.
type Split struct {
	cfg    SplitConfig
	run    *runner.Runner
	groups *compare.Groups
	evals  atomic.Uint64
	// settings keeps each knob setting's last live verdict.
	settings settings
	live     live[compare.Grouping]

	stopOnce sync.Once
	stopErr  error
}

// errNoSplit is a SplitConfig without a SplitBy.
var errNoSplit = errors.New("a split needs Run.Probe.SplitBy")

// startSplit starts the load with every result counted in its group, and
// the live comparison.
func startSplit(ctx context.Context, cfg SplitConfig) (*Split, error) {
	if cfg.Run.Probe.SplitBy.IsZero() {
		return nil, errNoSplit
	}
	s := &Split{cfg: cfg, groups: compare.NewGroupsWithBaseline(statsOf(cfg.Options.Regressions, cfg.Run), cfg.Samples, cfg.Groups, time.Now(), cfg.BaselineGroup)}
	s.groups.SetAnytime(cfg.Options.Anytime) // counts per value only for the sequences
	s.settings.knobs = s.groups.Knobs
	next := cfg.Run.Load.OnResult
	cfg.Run.Load.OnResult = func(rec load.Record) {
		s.groups.Observe(rec, time.Now())
		if next != nil {
			next(rec)
		}
	}
	r, err := runner.Start(ctx, cfg.Run)
	if err != nil {
		return nil, err
	}
	s.run = r
	s.live.start(cfg.Every, &s.settings, func() compare.Grouping { return s.Compare(0) })
	return s, nil
}

// Compare compares the groups now with resamples bootstrap replicates (0:
// the configured number); each call draws afresh (a seed of its own).
func (s *Split) Compare(resamples int) compare.Grouping {
	o := s.cfg.Options
	if resamples > 0 {
		o.Resamples = resamples
	}
	o.Seed += s.evals.Add(1)
	g := s.groups.Compare(o)
	g.By = s.cfg.Run.Probe.SplitBy.String()
	return g
}

// Comparison is the newest live comparison (computed every
// SplitConfig.Every); ok is false before the first.
func (s *Split) Comparison() (g compare.Grouping, ok bool) { return s.live.get() }

// Runner is the split's one runner.
func (s *Split) Runner() *runner.Runner { return s.run }

// Update changes the knobs (the ui.Controller's Update); a new setting
// starts the comparison over.
func (s *Split) Update(f func(*load.Knobs)) load.Knobs {
	k := s.run.Engine().Update(f)
	s.groups.SetKnobs(k)
	return k
}

// SetWindow selects the rolling window.
func (s *Split) SetWindow(w time.Duration) { s.run.Engine().SetWindow(w) }

// Reset forgets the statistics and the comparison's samples (the groups
// keep their names and numbers).
func (s *Split) Reset() {
	s.run.Engine().Reset()
	s.groups.Reset(time.Now())
	s.settings.v.Reset()
}

// Finish ends the run for why (see load.Engine.Finish).
func (s *Split) Finish(why string) { s.run.Engine().Finish(why) }

// Stop stops the live comparison and the runner (see runner.Stop); the
// samples stay for a last Compare. The runner's error is returned, every
// time.
func (s *Split) Stop() error {
	s.stopOnce.Do(func() {
		s.live.stop()
		s.stopErr = s.run.Stop()
	})
	return s.stopErr
}

// Release stops serving the runner's metrics (see runner.Release).
func (s *Split) Release() { s.run.Release() }

// What names the load and what splits it.
func (s *Split) What() string {
	return sanitize.Text(s.run.Target().URL) + ", its answers split by " + s.cfg.Run.Probe.SplitBy.String()
}

// Sides is the one runner.
func (s *Split) Sides() []Side { return []Side{s.run} }

// Controller is the split: a new setting starts its groups' comparison
// over.
func (s *Split) Controller() load.Controller { return s }

// Live is the newest live comparison of the groups.
func (s *Split) Live() (Look, bool) {
	g, ok := s.Comparison()
	if !ok {
		return Look{}, false
	}
	return Look{Line: g.Line(), Breaches: g.Breaches(), Regressed: "a newer group regressed", Anytime: g.Anytime}, true
}

// Conclude is the load's report holding the groups' comparison (the last
// word: more resamples than the live line's), and the gates that did not
// pass in any newer group.
func (s *Split) Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion {
	grp := s.Compare(2 * compare.DefaultResamples)
	rep := s.run.Report(ctx, last[0])
	rep.Verdicts = append(rep.Verdicts, breaches[0]...)
	rep.Compare = splitCompare(grp)
	return Conclusion{Reports: []*report.Report{rep}, Table: s.settings.table(grp.WriteTable),
		Failures: grp.Failures(s.cfg.Options.Regressions), Breached: grp.Breached(),
		Headline: "a newer group regressed, a regression went unjudged or an SLO broke"}
}

// Save is the s key's save in a split: what `run --split-by` writes, for
// the run so far: the load's reports, its JSON holding the groups'
// comparison as infertop.compare, and the groups' tables beside them
// (infertop-START.compare.txt). The comparison is the live one, the
// verdict on screen (a fresh one before the first).
func (s *Split) Save(ctx context.Context, snap load.Snapshot, dir string) (string, error) {
	grp, ok := s.Comparison()
	if !ok {
		grp = s.Compare(0)
	}
	rep := s.run.Report(ctx, snap)
	rep.Compare = splitCompare(grp)
	base := s.run.SaveBase(dir)
	if err := saveWithTable(rep, base, s.settings.table(grp.WriteTable)); err != nil {
		return "", err
	}
	return base + ".{json,csv,txt,html} and " + filepath.Base(base) + ".compare.txt", nil
}

// View: the groups' live comparison; a capacity search may drive the one
// engine.
func (s *Split) View() View { return View{Groups: s.Comparison, Search: s.run.Engine()} }

// LastWord is the groups' table, the last word.
func (s *Split) LastWord(w io.Writer) error {
	return s.settings.table(s.Compare(2 * compare.DefaultResamples).WriteTable)(w)
}

// splitCompare is the groups' comparison as the report's infertop.compare.
func splitCompare(grp compare.Grouping) *report.Compare {
	j := grp.JSON()
	return &report.Compare{Split: &j}
}
