package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/capacity/capflag"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
)

// capacityPlan checks the capacity flags (capflag's) against the rest and
// prepares cfg for a search: the engine starts paused (the first step
// starts the load), with no limit of its own (the search ends the run).
// nil: no capacity run asked for.
func capacityPlan(fs *pflag.FlagSet, c *capflag.Flags, f *loadFlags, rf *sessionflag.Run, cfg *runner.Config) (*session.Plan, error) {
	if !c.Searches() && !c.HasMatrix() {
		if err := c.Stray(); err != nil {
			return nil, usageError{err}
		}
		return nil, nil
	}
	l := &cfg.Load
	switch {
	case len(f.slos) > 0 && c.Searches():
		return nil, usagef("give --find-max or --slo, not both: a search breaks its objectives on purpose, past the knee")
	case rf.FailFast:
		return nil, usagef("--fail-fast does not go with --find-max or --matrix: the search ends each step itself")
	case fs.Changed("stages") || fs.Changed("ramp"):
		return nil, usagef("--stages and --ramp do not go with --find-max or --matrix: the search walks the load itself")
	case l.Duration > 0 || l.MaxRequests > 0:
		return nil, usagef("--duration and --requests do not go with --find-max or --matrix: the search ends the run")
	case fs.Changed("warmup"):
		return nil, usagef("--warmup does not go with --find-max or --matrix: each step has its own (--step-warmup)")
	case l.Trace != nil || l.Sessions.Turns > 0:
		return nil, usagef("--trace and --sessions do not go with --find-max or --matrix: the search walks the knobs of a synthetic load")
	}
	objs, err := c.Objectives(cfg.Probe.NoStream)
	if err != nil {
		return nil, usageError{err}
	}
	search, err := c.Search(objs, l.Knobs)
	if err != nil {
		return nil, usageError{err}
	}
	m, err := c.Matrix(l.Knobs)
	if err != nil {
		return nil, usageError{err}
	}
	p, err := session.NewPlan(search, m, &l.Knobs)
	if errors.Is(err, session.ErrNoRate) {
		return nil, usagef("--matrix over the rate without --find-max measures at --rate: give one")
	}
	return p, nil
}

// dashboardSearch is the dashboard's search: the settings of every search
// its f key starts and, with --find-max, the objectives of the one it
// starts at once. The checks are the headless run's, on a copy of cfg:
// the dashboard's load starts as today, not paused, and the search takes
// the knobs from its first step.
func dashboardSearch(fs *pflag.FlagSet, c *capflag.Flags, f *loadFlags, cfg *runner.Config) (capacity.Search, error) {
	if c.HasMatrix() {
		return capacity.Search{}, usagef("--matrix is headless: infertop run --matrix")
	}
	if c.Searches() {
		headless := *cfg
		p, err := capacityPlan(fs, c, f, &sessionflag.Run{}, &headless)
		if err != nil {
			return capacity.Search{}, err
		}
		return p.Search, nil
	}
	s, err := c.Search(nil, cfg.Load.Knobs)
	if err != nil {
		return capacity.Search{}, usageError{err}
	}
	return s, nil
}

// agentsPlan is the capacity run the flags ask of a follower of agents
// (nil: none; capflag's AgentsPlan), its refusals usage errors.
func agentsPlan(c *capflag.Flags, f *loadFlags, rf *sessionflag.Run) (*session.Plan, error) {
	p, err := c.AgentsPlan(len(f.slos) > 0, rf.FailFast)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}
