package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
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

// capacityPlan is a capacity run, checked: one search, or a matrix.
type capacityPlan struct {
	search capacity.Search
	matrix *capacity.Matrix
	at     float64 // a matrix without objectives: the load given
	knobs  load.Knobs
}

// plan checks the capacity flags against the rest and prepares cfg for
// a search: the engine starts paused (the first step starts the load),
// with no limit of its own (the search ends the run). nil: no capacity
// run asked for.
func (c *capacityFlags) plan(fs *pflag.FlagSet, f *loadFlags, rf *runFlags, cfg *runner.Config) (*capacityPlan, error) {
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
	case c.minRequests < 1 || c.minTime <= 0 || c.maxTime < c.minTime || c.warmup < 0:
		return nil, usagef("--step-min-requests and --step-min-time must be positive, --step-max-time at least --step-min-time")
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
	over := search.Over
	p := &capacityPlan{search: search}
	p.at = float64(l.Knobs.Concurrency)
	if over == capacity.Rate {
		p.at = l.Knobs.Rate
	}
	if c.matrix != "" {
		m, err := capacity.ParseMatrix(c.matrix, l.Knobs)
		if err != nil {
			return nil, usagef("--matrix: %v", err)
		}
		p.matrix = &m
	}
	if len(objs) == 0 && over == capacity.Rate && p.at <= 0 {
		return nil, usagef("--matrix over the rate without --find-max measures at --rate: give one")
	}
	// Paused until the first step: phase 1 sends nothing, so every phase
	// with requests is a step's.
	l.Knobs.Paused = true
	if over == capacity.Rate {
		l.Knobs.Mode, l.Knobs.Rate = load.OpenLoop, max(l.Knobs.Rate, 0.01)
	}
	p.knobs = l.Knobs
	return p, nil
}

// search is the search the flags describe, for objs, starting from the
// knobs k (an open loop searches the rate unless --over says otherwise).
func (c *capacityFlags) search(objs []slo.Objective, k load.Knobs) (capacity.Search, error) {
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
	res, err := parseFraction(c.resolution)
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
		return p.search, nil
	}
	if c.minRequests < 1 || c.minTime <= 0 || c.maxTime < c.minTime || c.warmup < 0 {
		return capacity.Search{}, usagef("--step-min-requests and --step-min-time must be positive, --step-max-time at least --step-min-time")
	}
	return c.search(nil, cfg.Load.Knobs)
}

// parseFraction reads '5%' or '0.05'.
func parseFraction(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || v <= 0 || v >= 1 {
		return 0, fmt.Errorf("want a fraction such as 5%% or 0.05, got %q", s)
	}
	return v, nil
}

// run runs the plan against eng: one search, or each cell of the matrix.
func (p *capacityPlan) run(ctx context.Context, eng capacity.Engine, snaps <-chan load.Snapshot) (*capacity.Outcome, error) {
	if p.matrix != nil {
		return p.matrix.Run(ctx, eng, snaps, p.search, p.at)
	}
	res, err := p.search.Run(ctx, eng, snaps)
	out := &capacity.Outcome{Over: res.Over, Objectives: p.search.Objectives,
		Cells: []capacity.Cell{{Prompt: p.knobs.PromptTokens, Output: p.knobs.OutputTokens, Result: res}}}
	if res.Over == "" { // refused before a step
		out.Over = p.search.Over
	}
	if err != nil {
		out.Stopped = err.Error()
	}
	return out, err
}

// errInterrupted is the cause a signal cancels a search with.
var errInterrupted = errors.New("interrupted")

// runCapacity follows r through a capacity run: the search (or matrix) on
// a goroutine of its own, progress on stderr, a first signal ending the
// search; then the run's end (the drain, as any run), the report with the
// capacity section, and the exit code: 0 when a load was found (in every
// cell), 1 when even the lowest broke or the search was cut short.
func (a *app) runCapacity(r *runner.Runner, p *capacityPlan, rf *runFlags, sigs <-chan os.Signal) error {
	eng := r.Engine()
	snaps, unsubscribe := r.Subscribe()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	live := isTerminal(a.stderr)
	var lastState string
	lastLine := time.Time{}
	p.search.Progress = func(pr capacity.Progress) { // on the search's goroutine, while this one only waits
		state := fmt.Sprint(pr.Step, pr.State)
		switch {
		case live:
			fmt.Fprintf(a.stderr, "\r\033[K%s", pr)
		case state != lastState || time.Since(lastLine) >= rf.progressEvery:
			fmt.Fprintf(a.stderr, "infertop: %s\n", pr)
			lastState, lastLine = state, time.Now()
		}
	}
	type ended struct {
		out *capacity.Outcome
		err error
	}
	done := make(chan ended, 1)
	started := time.Now()
	go func() {
		defer crash.Recover()
		out, err := p.run(ctx, eng, snaps)
		done <- ended{out, err}
	}()
	var e ended
	for waiting := true; waiting; {
		select {
		case <-sigs:
			cancel(errInterrupted)
		case e = <-done:
			waiting = false
		}
	}
	unsubscribe()
	if live {
		fmt.Fprint(a.stderr, "\r\033[K")
	}
	fmt.Fprintf(a.stderr, "infertop: capacity run over in %s\n", time.Since(started).Round(time.Second))
	eng.Finish("the capacity search ended")
	_, final := a.follow(r, rf, sigs)
	if err := r.Stop(); err != nil {
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
	}
	if final.Seq < eng.Latest().Seq {
		final = eng.Latest()
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	rep := r.Report(rctx, final)
	rep.Capacity = e.out
	if err := rep.WriteText(a.stdout); err != nil {
		return err
	}
	if err := runner.Write(rep, runner.Outputs{JSON: rf.jsonPath, CSV: rf.csvPath, HTML: rf.htmlPath}); err != nil {
		return err
	}
	if run := final.Run; run.Completed == 0 && run.Failed > 0 {
		why := ""
		if len(final.Errors) > 0 {
			why = ": " + final.Errors[0].Line()
		}
		return usagef("every request failed%s", why)
	}
	switch {
	case e.err != nil:
		return exitError{1, fmt.Errorf("the capacity search stopped before it was over: %w", e.err)}
	case !e.out.Found():
		return exitError{1, errors.New("no load held every objective, not even the lowest")}
	}
	return nil
}
