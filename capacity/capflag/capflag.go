// Package capflag binds a capacity search (--find-max) and a matrix of
// lengths (--matrix) to command-line flags (pflag): the objectives, the
// knob searched and its range, the resolution, and how long each step
// holds. capacity itself knows nothing of flags; the errors here name
// the flag.
package capflag

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
)

// Flags bind a capacity search's settings.
type Flags struct {
	findMax                  []string
	matrix, over, resolution string
	from, to                 float64
	warmup, minTime, maxTime time.Duration
	minRequests              int64
	fs                       *pflag.FlagSet
}

// Add binds the search's flags to fs.
func Add(fs *pflag.FlagSet) *Flags {
	defer flaghelp.Group(fs, "Capacity search")()
	c := &Flags{fs: fs}
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
	// The follower drives a search over agents, each step's load split
	// between them; not yet over a comparison.
	flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Searching}, "find-max", "matrix")
	flaghelp.Follower(fs, "over", "from", "to", "resolution", "step-warmup", "step-min-requests", "step-min-time", "step-max-time")
	return c
}

// Searches says whether a search (--find-max) is asked for.
func (c *Flags) Searches() bool { return len(c.findMax) > 0 }

// HasMatrix says whether a matrix (--matrix) is asked for.
func (c *Flags) HasMatrix() bool { return c.matrix != "" }

// Stray is an error naming a search's setting given without a search or
// a matrix to set; nil when there is none.
func (c *Flags) Stray() error {
	for _, name := range []string{"over", "from", "to", "resolution", "step-warmup", "step-min-requests", "step-min-time", "step-max-time"} {
		if c.fs.Changed(name) {
			return fmt.Errorf("--%s belongs to a capacity search: give --find-max or --matrix", name)
		}
	}
	return nil
}

// Objectives are the search's objectives; a search over a load that
// streams nothing (noStream) cannot time stream messages.
func (c *Flags) Objectives(noStream bool) ([]slo.Objective, error) {
	objs, err := slo.ParseAll(c.findMax)
	if err != nil {
		return nil, fmt.Errorf("--find-max: %w", err)
	}
	for _, o := range objs {
		switch {
		case o.NeedsStream() && noStream:
			return nil, fmt.Errorf("--find-max %s: with --no-stream there are no stream messages to time; drop one of them", o.Expr)
		case o.NeedsEnergy():
			return nil, fmt.Errorf("--find-max %s: the energy per token is not searched (a step is too short for the GPUs' counters)", o.Expr)
		case floor(o):
			// A lower load only moves away from it: the search would
			// burn its steps down to the lowest before failing.
			return nil, fmt.Errorf("--find-max %s: a floor on a latency or the error rate is no knee (more load only raises them); give a limit to stay under, e.g. ttft_p99<=500ms", o.Expr)
		}
	}
	return objs, nil
}

// Search is the search the flags describe, for objs, starting from the
// knobs k (an open loop searches the rate unless --over says otherwise).
func (c *Flags) Search(objs []slo.Objective, k load.Knobs) (capacity.Search, error) {
	if c.minRequests < 1 || c.minTime <= 0 || c.maxTime < c.minTime || c.warmup < 0 {
		return capacity.Search{}, errors.New("--step-min-requests and --step-min-time must be positive, --step-max-time at least --step-min-time")
	}
	over := capacity.Concurrency
	if k.Rate > 0 {
		over = capacity.Rate
	}
	if c.over != "" {
		var err error
		if over, err = capacity.ParseOver(c.over); err != nil {
			return capacity.Search{}, fmt.Errorf("--over: %w", err)
		}
	}
	res, err := capacity.ParseResolution(c.resolution)
	if err != nil {
		return capacity.Search{}, fmt.Errorf("--resolution: %w", err)
	}
	s := capacity.Search{Objectives: objs, Over: over, From: c.from, To: c.to, Resolution: res,
		Hold: capacity.Hold{Warmup: c.warmup, MinRequests: c.minRequests, MinTime: c.minTime, MaxTime: c.maxTime, ClearMargin: capacity.DefaultHold().ClearMargin}}
	if c.from < 0 || c.to < 0 {
		return capacity.Search{}, errors.New("--from and --to must not be negative")
	}
	if err := s.Check(); err != nil {
		return capacity.Search{}, fmt.Errorf("--find-max: %w", err)
	}
	return s, nil
}

// Matrix is the matrix of lengths the flags describe around the knobs k;
// nil without --matrix.
func (c *Flags) Matrix(k load.Knobs) (*capacity.Matrix, error) {
	if c.matrix == "" {
		return nil, nil
	}
	m, err := capacity.ParseMatrix(c.matrix, k)
	if err != nil {
		return nil, fmt.Errorf("--matrix: %w", err)
	}
	return &m, nil
}

// AgentsPlan is the capacity run the flags ask of a follower of agents
// (nil: none), checked against its other flags as a headless run's are:
// slos says --slo was given, failFast --fail-fast. The agents' knobs are
// not known yet: the search walks the concurrency unless --over says the
// rate, and a matrix gives both of its lengths (without --find-max it
// measures each cell at the agents' concurrency, At 0: theirs, once
// known).
func (c *Flags) AgentsPlan(slos, failFast bool) (*session.Plan, error) {
	if !c.Searches() && !c.HasMatrix() {
		return nil, c.Stray()
	}
	switch {
	case slos && c.Searches():
		return nil, errors.New("give --find-max or --slo, not both: a search breaks its objectives on purpose, past the knee")
	case failFast:
		return nil, errors.New("--fail-fast does not go with --find-max or --matrix: the search ends each step itself")
	}
	objs, err := c.Objectives(false)
	if err != nil {
		return nil, err
	}
	search, err := c.Search(objs, load.Knobs{})
	if err != nil {
		return nil, err
	}
	m, err := c.Matrix(load.Knobs{})
	if err != nil {
		return nil, err
	}
	if m != nil && (slices.Contains(m.Prompts, 0) || slices.Contains(m.Outputs, 0)) {
		return nil, errors.New("--matrix with --agents: give both prompt= and output= (the agents' lengths are not known here)")
	}
	if m != nil && !c.Searches() && search.Over == capacity.Rate {
		return nil, errors.New("--matrix over the rate with --agents measures at a rate: give --find-max (the agents' rate is not known here)")
	}
	return &session.Plan{Search: search, Matrix: m}, nil
}

// AgentsDashboardSearch is the search a dashboard over agents starts at
// once (--find-max), or the template of those its f key starts, which
// take the step flags without --find-max, as on one machine; slos says
// --slo was given. A matrix is headless.
func (c *Flags) AgentsDashboardSearch(slos bool) (capacity.Search, error) {
	switch {
	case c.HasMatrix():
		return capacity.Search{}, errors.New("--matrix is headless: infertop run --agents ... --matrix")
	case c.Searches():
		p, err := c.AgentsPlan(slos, false)
		if err != nil {
			return capacity.Search{}, err
		}
		return p.Search, nil
	}
	return c.Search(nil, load.Knobs{})
}

// floor reports whether o puts a floor under a latency or the error rate
// (ttft_p99>=500ms): more load raises them, so the highest load at which
// it holds is no knee.
func floor(o slo.Objective) bool {
	_, latency := slo.LatencyMetric(o.Metric)
	return (latency || o.Metric == "error_rate") && (o.Op == ">" || o.Op == ">=")
}
