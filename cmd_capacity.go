package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
)

// capacityFlags are `infertop run`'s flags of a capacity search
// (--find-max) and of a matrix of lengths (--matrix).
type capacityFlags struct {
	findMax                  []string
	matrix, over, resolution string
	from, to                 float64
	warmup, minTime, maxTime time.Duration
	minRequests              int64
}

func (c *capacityFlags) add(fs *pflag.FlagSet) {
	d := capacity.DefaultHold()
	fs.StringArrayVar(&c.findMax, "find-max", nil, "search for the highest load at which every objective holds, repeatable: e.g. 'ttft_p99<=500ms', 'error_rate<1%'")
	fs.StringVar(&c.matrix, "matrix", "", "a search (or, without --find-max, a measurement at the load given) per cell of 'prompt=64,256,1024;output=128,256,512'")
	fs.StringVar(&c.over, "over", "", "the knob searched: concurrency or rate (default: rate with --rate, else concurrency)")
	fs.Float64Var(&c.from, "from", 0, "the search's first load (default 1)")
	fs.Float64Var(&c.to, "to", 0, "the search's highest load (default concurrency 1024, rate 10000)")
	fs.StringVar(&c.resolution, "resolution", "5%", "the search stops once the first load that broke is within this of the last that held")
	fs.DurationVar(&c.warmup, "step-warmup", d.Warmup, "each step's least warm-up (it also lasts one turnover of the requests in flight), kept out of its figures")
	fs.Int64Var(&c.minRequests, "step-min-requests", d.MinRequests, "the least requests a step's measured phase holds for")
	fs.DurationVar(&c.minTime, "step-min-time", d.MinTime, "the least time a step's measured phase holds for")
	fs.DurationVar(&c.maxTime, "step-max-time", d.MaxTime, "the most time a step's measured phase holds for (then judged on what it has)")
}

// plan checks the capacity flags against the rest and prepares cfg for
// a search: the engine starts paused (the first step starts the load),
// with no limit of its own (the search ends the run). nil: no capacity
// run asked for.
func (c *capacityFlags) plan(fs *pflag.FlagSet, f *loadFlags, rf *runFlags, cfg *runner.Config) (*session.Plan, error) {
	if len(c.findMax) == 0 && c.matrix == "" {
		for _, name := range []string{"over", "from", "to", "resolution", "step-warmup", "step-min-requests", "step-min-time", "step-max-time"} {
			if fs.Changed(name) {
				return nil, usagef("--%s belongs to a capacity search: give --find-max or --matrix", name)
			}
		}
		return nil, nil
	}
	l := &cfg.Load
	switch {
	case len(f.slos) > 0 && len(c.findMax) > 0:
		return nil, usagef("give --find-max or --slo, not both: a search breaks its objectives on purpose, past the knee")
	case rf.failFast:
		return nil, usagef("--fail-fast does not go with --find-max or --matrix: the search ends each step itself")
	case f.stages != "" || f.ramp != "":
		return nil, usagef("--stages and --ramp do not go with --find-max or --matrix: the search walks the load itself")
	case l.Duration > 0 || l.MaxRequests > 0:
		return nil, usagef("--duration and --requests do not go with --find-max or --matrix: the search ends the run")
	case f.warmup != "":
		return nil, usagef("--warmup does not go with --find-max or --matrix: each step has its own (--step-warmup)")
	case l.Trace != nil || l.Sessions.Turns > 0:
		return nil, usagef("--trace and --sessions do not go with --find-max or --matrix: the search walks the knobs of a synthetic load")
	}
	objs, err := slo.ParseAll(c.findMax)
	if err != nil {
		return nil, usagef("--find-max: %v", err)
	}
	for _, o := range objs {
		switch {
		case o.NeedsStream() && cfg.Probe.NoStream:
			return nil, usagef("--find-max %s: with --no-stream there are no stream messages to time; drop one of them", o.Expr)
		case o.NeedsEnergy():
			return nil, usagef("--find-max %s: the energy per token is not searched (a step is too short for the GPUs' counters)", o.Expr)
		}
	}
	search, err := c.search(objs, l.Knobs)
	if err != nil {
		return nil, err
	}
	var m *capacity.Matrix
	if c.matrix != "" {
		mx, err := capacity.ParseMatrix(c.matrix, l.Knobs)
		if err != nil {
			return nil, usagef("--matrix: %v", err)
		}
		m = &mx
	}
	p, err := session.NewPlan(search, m, &l.Knobs)
	if errors.Is(err, session.ErrNoRate) {
		return nil, usagef("--matrix over the rate without --find-max measures at --rate: give one")
	}
	return p, nil
}

// search is the search the flags describe, for objs, starting from the
// knobs k (an open loop searches the rate unless --over says otherwise).
func (c *capacityFlags) search(objs []slo.Objective, k load.Knobs) (capacity.Search, error) {
	if c.minRequests < 1 || c.minTime <= 0 || c.maxTime < c.minTime || c.warmup < 0 {
		return capacity.Search{}, usagef("--step-min-requests and --step-min-time must be positive, --step-max-time at least --step-min-time")
	}
	over := capacity.Concurrency
	if k.Rate > 0 {
		over = capacity.Rate
	}
	if c.over != "" {
		var err error
		if over, err = capacity.ParseOver(c.over); err != nil {
			return capacity.Search{}, usagef("--over: %v", err)
		}
	}
	res, err := capacity.ParseResolution(c.resolution)
	if err != nil {
		return capacity.Search{}, usagef("--resolution: %v", err)
	}
	s := capacity.Search{Objectives: objs, Over: over, From: c.from, To: c.to, Resolution: res,
		Hold: capacity.Hold{Warmup: c.warmup, MinRequests: c.minRequests, MinTime: c.minTime, MaxTime: c.maxTime, ClearMargin: capacity.DefaultHold().ClearMargin}}
	if c.from < 0 || c.to < 0 {
		return capacity.Search{}, usagef("--from and --to must not be negative")
	}
	if err := s.Check(); err != nil {
		return capacity.Search{}, usagef("--find-max: %v", err)
	}
	return s, nil
}

// dashboardSearch is the dashboard's search: the settings of every search
// its f key starts and, with --find-max, the objectives of the one it
// starts at once. The checks are the headless run's, on a copy of cfg:
// the dashboard's load starts as today, not paused, and the search takes
// the knobs from its first step.
func (c *capacityFlags) dashboardSearch(fs *pflag.FlagSet, f *loadFlags, cfg *runner.Config) (capacity.Search, error) {
	if c.matrix != "" {
		return capacity.Search{}, usagef("--matrix is headless: infertop run --matrix")
	}
	if len(c.findMax) > 0 {
		headless := *cfg
		p, err := c.plan(fs, f, &runFlags{}, &headless)
		if err != nil {
			return capacity.Search{}, err
		}
		return p.Search, nil
	}
	return c.search(nil, cfg.Load.Knobs)
}
