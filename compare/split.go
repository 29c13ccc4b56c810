package compare

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
)

// SplitConfig is a split: one load on one URL, its requests grouped by the
// backend that answered (a rolling update's old and new pods).
type SplitConfig struct {
	// Run is the load; Run.Probe.SplitBy says what groups the requests.
	Run runner.Config
	// Options configure the live comparison (Regressions, Confidence).
	Options Options
	// Samples is how many of the newest requests a group keeps per metric
	// (0: DefaultSamples); Groups how many groups are named (0:
	// DefaultGroups).
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
	groups *Groups
	live   atomic.Pointer[Grouping]
	evals  atomic.Uint64

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

// errNoSplit is a SplitConfig without a SplitBy.
var errNoSplit = errors.New("a split needs Run.Probe.SplitBy")

// StartSplit starts the load with every result counted in its group, and
// the live comparison.
func StartSplit(ctx context.Context, cfg SplitConfig) (*Split, error) {
	if cfg.Run.Probe.SplitBy.IsZero() {
		return nil, errNoSplit
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	s := &Split{cfg: cfg, groups: NewGroupsWithBaseline(Stats(cfg.Options.Regressions), cfg.Samples, cfg.Groups, time.Now(), cfg.BaselineGroup)}
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
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer crash.Recover()
		t := time.NewTicker(cfg.Every)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				g := s.Compare(0)
				s.live.Store(&g)
			}
		}
	}()
	return s, nil
}

// Compare compares the groups now with resamples bootstrap replicates (0:
// the configured number); each call draws afresh (a seed of its own).
func (s *Split) Compare(resamples int) Grouping {
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
func (s *Split) Comparison() (g Grouping, ok bool) {
	if l := s.live.Load(); l != nil {
		return *l, true
	}
	return Grouping{}, false
}

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
}

// Finish ends the run for why (see load.Engine.Finish).
func (s *Split) Finish(why string) { s.run.Engine().Finish(why) }

// Stop stops the live comparison and the runner (see runner.Stop); the
// samples stay for a last Compare. The runner's error is returned, every
// time.
func (s *Split) Stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
		s.stopErr = s.run.Stop()
	})
	return s.stopErr
}
