package main

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
)

// compareFlags put a canary beside the endpoint: the same load on both;
// or, with --split-by, compare the backends behind the one endpoint.
type compareFlags struct {
	url, model  string
	regressions []string
	splitBy     string
	// baselineGroup names the split's baseline group (--baseline-group).
	baselineGroup string
	// minSeconds lowers the seconds a statistic needs (hidden: for tests
	// that cannot wait the default's 20 s; fewer make intervals too narrow).
	minSeconds int
}

// addCompareFlags binds the comparison's flags; --regression only for the
// headless run, the one that sets an exit code.
func addCompareFlags(fs *pflag.FlagSet, headless bool) *compareFlags {
	cf := &compareFlags{}
	fs.StringVar(&cf.url, "compare", "", "canary endpoint: the same load (knobs, prompts, seed) on it at once, each endpoint its own engine, and a live verdict: is the canary slower, are its errors up")
	fs.StringVar(&cf.model, "compare-model", "", "the canary's model name, when it serves another (default: --model, else its first)")
	fs.StringVar(&cf.splitBy, "split-by", "", "group every request by the backend that answered, header:NAME or field:system_fingerprint (or field:model), and compare the group seen first with each newer one (a rolling update's old and new pods behind one --url)")
	fs.StringVar(&cf.baselineGroup, "baseline-group", "", "with --split-by: the group of this value is the baseline whenever it appears, instead of the first seen (the old version's, in a rollout where the new one may answer first)")
	if headless {
		fs.StringArrayVar(&cf.regressions, "regression", nil, "with --compare or --split-by: the canary's (each newer group's) allowed worsening, repeatable, e.g. 'ttft_p99<+10%', 'error_rate<+0.5pp'; exit 1 when it is worse with confidence")
	}
	fs.IntVar(&cf.minSeconds, "compare-min-seconds", 0, "seconds of requests a statistic needs before it is judged (default 20)")
	_ = fs.MarkHidden("compare-min-seconds")
	return cf
}

func (cf *compareFlags) used() bool {
	return cf.url != "" || cf.model != "" || len(cf.regressions) > 0 || cf.splitBy != "" || cf.baselineGroup != ""
}

// options are the comparison's options from the flags.
func (cf *compareFlags) options() (compare.Options, error) {
	regs, err := compare.ParseRegressions(cf.regressions)
	if err != nil {
		return compare.Options{}, usagef("--regression: %v", err)
	}
	if cf.minSeconds < 0 {
		return compare.Options{}, usagef("--compare-min-seconds must not be negative")
	}
	return compare.Options{Regressions: regs, MinSeconds: cf.minSeconds}, nil
}

// splitConfig checks the split's flags and builds its configuration over
// cfg, the load's.
func (cf *compareFlags) splitConfig(cfg runner.Config) (session.SplitConfig, error) {
	if cf.url != "" || cf.model != "" {
		return session.SplitConfig{}, usagef("--split-by does not work with --compare: split one endpoint's answers, or compare two endpoints")
	}
	by, err := probe.ParseSplitBy(cf.splitBy)
	if err != nil {
		return session.SplitConfig{}, usagef("--split-by: %v", err)
	}
	o, err := cf.options()
	if err != nil {
		return session.SplitConfig{}, err
	}
	// The value as the probe keeps a group's (trimmed), so the name given
	// is the name matched; a longer one could never match a cut value.
	base := strings.TrimSpace(cf.baselineGroup)
	if len(base) > probe.MaxGroupBytes {
		return session.SplitConfig{}, usagef("--baseline-group: at most %d bytes, the longest group value a split keeps", probe.MaxGroupBytes)
	}
	cfg.Probe.SplitBy = by
	return session.SplitConfig{Run: cfg, Options: o, BaselineGroup: base}, nil
}

// pairConfig checks the comparison's flags and builds the pair's
// configuration over cfg, the baseline's.
func (cf *compareFlags) pairConfig(cfg runner.Config) (session.PairConfig, error) {
	if cf.baselineGroup != "" {
		return session.PairConfig{}, usagef("--baseline-group needs --split-by: it names one of the groups a split makes")
	}
	if cf.url == "" {
		return session.PairConfig{}, usagef("--compare-model and --regression need --compare URL (or --split-by)")
	}
	o, err := cf.options()
	if err != nil {
		return session.PairConfig{}, err
	}
	if cfg.Settings != nil { // the manifest stores the canary's URL without credentials
		cfg.Settings["compare"] = probe.RedactURL(cf.url)
	}
	return session.PairConfig{Baseline: cfg, CanaryURL: cf.url, CanaryModel: cf.model, Options: o}, nil
}

// loadPlan is the load the flags describe, of whichever kind, checked
// and not yet started: one runner, a pair (--compare), a split
// (--split-by), or a capacity search over one runner (--find-max,
// --matrix).
type loadPlan struct {
	run    runner.Config
	pair   *session.PairConfig
	split  *session.SplitConfig
	search *session.Plan
}

// holdsMetrics reports whether the plan's load keeps its metrics served
// past its stop (runner.Config.HoldMetrics).
func (lp loadPlan) holdsMetrics() bool { return lp.base().HoldMetrics }

// metricsAddr is where the plan's load serves infertop's own metrics.
func (lp loadPlan) metricsAddr() string { return lp.base().MetricsAddr }

// base is the configuration of the plan's load, or of its baseline.
func (lp loadPlan) base() runner.Config {
	switch {
	case lp.pair != nil:
		return lp.pair.Baseline
	case lp.split != nil:
		return lp.split.Run
	}
	return lp.run
}

// loadPlan checks the comparison's flags and builds the load's plan over
// cfg, with search (nil: none); it starts nothing.
func (cf *compareFlags) loadPlan(cfg runner.Config, search *session.Plan) (loadPlan, error) {
	switch {
	case cf.used() && search != nil:
		return loadPlan{}, usagef("--find-max and --matrix do not work with --compare yet")
	case cf.splitBy != "":
		sc, err := cf.splitConfig(cfg)
		return loadPlan{split: &sc}, err
	case cf.used():
		pc, err := cf.pairConfig(cfg)
		return loadPlan{pair: &pc}, err
	}
	return loadPlan{run: cfg, search: search}, nil
}

// start starts the load lp describes with the app's hooks and notes on
// stderr, its errors in the command line's words; ctx bounds only the
// start (detection, model discovery). It is the one place that tells the
// kinds of load apart.
func (a *app) start(ctx context.Context, lp loadPlan) (session.Session, error) {
	switch {
	case lp.pair != nil:
		pc := *lp.pair
		pc.Baseline.Notes, pc.Baseline.WrapDo = a.stderr, a.wrapDo
		p, err := session.StartPair(ctx, pc)
		var se *session.StartError
		switch {
		case err == nil:
			return p, nil
		case errors.As(err, &se) && se.Side == compare.Canary:
			return nil, usagef("--compare: %v", startError(se.Err))
		case errors.As(err, &se):
			err = se.Err
		}
		return nil, startError(err)
	case lp.split != nil:
		sc := *lp.split
		sc.Run.Notes, sc.Run.WrapDo = a.stderr, a.wrapDo
		sp, err := session.StartSplit(ctx, sc)
		if err != nil {
			return nil, startError(err)
		}
		return sp, nil
	}
	cfg := lp.run
	cfg.Notes, cfg.WrapDo = a.stderr, a.wrapDo
	s, err := session.StartSingle(ctx, cfg)
	if err != nil {
		return nil, startError(err)
	}
	if lp.search != nil {
		return session.NewSearch(s, *lp.search), nil
	}
	return s, nil
}
