// Package sessionflag binds the kind of a followed load to command-line
// flags (pflag): a canary beside the endpoint (--compare), or the
// endpoint's answers split by the backend that gave them (--split-by),
// with the regressions a live comparison judges. Spec turns them, over
// the load's runner.Config, into the session.Spec that session.Start
// starts; session itself knows nothing of flags.
package sessionflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
)

// Flags put a canary beside the endpoint: the same load on both; or,
// with --split-by, compare the backends behind the one endpoint.
type Flags struct {
	url, model  string
	regressions []string
	splitBy     string
	// baselineGroup names the split's baseline group (--baseline-group).
	baselineGroup string
	// minSeconds lowers the seconds a statistic needs (hidden: for tests
	// that cannot wait the default's 20 s; fewer make intervals too narrow).
	minSeconds int
	// verdict is how the comparison is judged (--verdict).
	verdict verdict
}

// The verdicts --verdict takes: the confidence sequences
// (compare.Options.Anytime: the default, valid at every look, which a
// person watching and a --fail-fast gate need), or the paired block
// bootstrap over whole seconds (one look's interval: quicker on a tail,
// but read every second it calls identical endpoints different in about
// 1 run of 10).
const (
	bootstrap = "bootstrap"
	anytime   = "anytime"
)

// verdict is --verdict's value, bootstrap or anytime, and whether it was
// given.
type verdict struct {
	name string
	set  bool
}

func (v *verdict) String() string {
	if v.name == "" {
		return anytime
	}
	return v.name
}

func (v *verdict) Set(s string) error {
	if s != bootstrap && s != anytime {
		return fmt.Errorf("want %s or %s", bootstrap, anytime)
	}
	v.name, v.set = s, true
	return nil
}

func (v *verdict) Type() string { return "string" }

// Add binds the comparison's flags to fs; --regression only for a
// headless run, the one that sets an exit code.
func Add(fs *pflag.FlagSet, headless bool) *Flags {
	defer flaghelp.Group(fs, "A canary against a baseline; backends behind one URL")()
	f := &Flags{}
	fs.StringVar(&f.url, "compare", "", "canary endpoint: the same load (knobs, prompts, seed) on it at once, each endpoint its own engine, and a live verdict: is the canary slower, are its errors up")
	fs.StringVar(&f.model, "compare-model", "", "the canary's model name, when it serves another (default: --model, else its first)")
	fs.StringVar(&f.splitBy, "split-by", "", "group every request by the backend that answered, header:NAME or field:system_fingerprint (or field:model), and compare the group seen first with each newer one (a rolling update's old and new pods behind one --url)")
	fs.StringVar(&f.baselineGroup, "baseline-group", "", "with --split-by: the group of this value is the baseline whenever it appears, instead of the first seen (the old version's, in a rollout where the new one may answer first)")
	if headless {
		fs.StringArrayVar(&f.regressions, "regression", nil, "with --compare or --split-by: the canary's (each newer group's) allowed worsening, repeatable, e.g. 'ttft_p99<+10%', 'error_rate<+0.5pp', 'invalid_rate<+1pp' (with --response-format or --tools); exit 1 when it is worse with confidence")
	}
	fs.Var(&f.verdict, "verdict", "with --compare or --split-by: how the verdict is judged, anytime (confidence sequences: valid at every look, however often it is read; slower on a tail) or bootstrap (whole seconds resampled: valid for one look at the end)")
	fs.IntVar(&f.minSeconds, "compare-min-seconds", 0, "seconds of requests a statistic needs before it is judged (default 20)")
	_ = fs.MarkHidden("compare-min-seconds")
	// The judging of a comparison is a follower's, of the agents' merges.
	flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Judging}, "compare-min-seconds")
	flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Judging}, "verdict")
	if headless {
		flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Judging}, "regression")
	}
	return f
}

// Used says whether any of the comparison's flags was given.
func (f *Flags) Used() bool {
	return f.url != "" || f.model != "" || len(f.regressions) > 0 || f.splitBy != "" || f.baselineGroup != ""
}

// Regressions says whether a --regression was given.
func (f *Flags) Regressions() bool { return len(f.regressions) > 0 }

// ErrSearch is a capacity search asked for beside a comparison.
var ErrSearch = errors.New("--find-max and --matrix do not work with --compare yet")

// Spec checks the comparison's flags and builds the load's spec over
// cfg, with search (nil: none); it starts nothing.
func (f *Flags) Spec(cfg runner.Config, search *session.Plan) (session.Spec, error) {
	switch {
	case f.Used() && search != nil:
		return session.Spec{}, ErrSearch
	case f.verdict.set && !f.Used():
		return session.Spec{}, errors.New("--verdict needs --compare or --split-by (with --agents, --agents-compare)")
	case f.splitBy != "":
		sc, err := f.split(cfg)
		return session.Spec{Split: &sc}, err
	case f.Used():
		pc, err := f.pair(cfg)
		return session.Spec{Pair: &pc}, err
	}
	return session.Spec{Run: cfg, Search: search}, nil
}

// Options are the comparison's options from the flags (the regressions
// judged, the seconds a statistic needs, the verdict's method).
func (f *Flags) Options() (compare.Options, error) {
	regs, err := compare.ParseRegressions(f.regressions)
	if err != nil {
		return compare.Options{}, fmt.Errorf("--regression: %w", err)
	}
	if f.minSeconds < 0 {
		return compare.Options{}, errors.New("--compare-min-seconds must not be negative")
	}
	return compare.Options{Regressions: regs, MinSeconds: f.minSeconds, Anytime: f.verdict.String() == anytime}, nil
}

// split checks the split's flags and builds its configuration over cfg,
// the load's.
func (f *Flags) split(cfg runner.Config) (session.SplitConfig, error) {
	if f.url != "" || f.model != "" {
		return session.SplitConfig{}, errors.New("--split-by does not work with --compare: split one endpoint's answers, or compare two endpoints")
	}
	by, err := probe.ParseSplitBy(f.splitBy)
	if err != nil {
		return session.SplitConfig{}, fmt.Errorf("--split-by: %w", err)
	}
	o, err := f.Options()
	if err != nil {
		return session.SplitConfig{}, err
	}
	// The value as the probe keeps a group's (trimmed), so the name given
	// is the name matched; a longer one could never match a cut value.
	base := strings.TrimSpace(f.baselineGroup)
	if len(base) > probe.MaxGroupBytes {
		return session.SplitConfig{}, fmt.Errorf("--baseline-group: at most %d bytes, the longest group value a split keeps", probe.MaxGroupBytes)
	}
	if err := judged(o, cfg); err != nil {
		return session.SplitConfig{}, err
	}
	cfg.Probe.SplitBy = by
	return session.SplitConfig{Run: cfg, Options: o, BaselineGroup: base}, nil
}

// pair checks the comparison's flags and builds the pair's configuration
// over cfg, the baseline's.
func (f *Flags) pair(cfg runner.Config) (session.PairConfig, error) {
	if f.baselineGroup != "" {
		return session.PairConfig{}, errors.New("--baseline-group needs --split-by: it names one of the groups a split makes")
	}
	if f.url == "" {
		return session.PairConfig{}, errors.New("--compare-model and --regression need --compare URL (or --split-by)")
	}
	o, err := f.Options()
	if err != nil {
		return session.PairConfig{}, err
	}
	if err := judged(o, cfg); err != nil {
		return session.PairConfig{}, err
	}
	if cfg.Settings != nil { // the manifest stores the canary's URL without credentials
		cfg.Settings["compare"] = probe.RedactURL(f.url)
	}
	return session.PairConfig{Baseline: cfg, CanaryURL: f.url, CanaryModel: f.model, Options: o}, nil
}

// judged refuses a regression on the invalid rate where no answer is
// judged: it could never be judged, and the gate would fail at the end.
func judged(o compare.Options, cfg runner.Config) error {
	for _, r := range o.Regressions {
		if r.Stat.Invalid && cfg.Probe.Body.Output.IsZero() {
			return fmt.Errorf("--regression %s: %w; pass --response-format or --tools", r.Expr, runner.ErrNotJudged)
		}
	}
	return nil
}
