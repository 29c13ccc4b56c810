package fleet

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
)

// Flags are the follower's flags (run --agents, the dashboard's, ssh's).
type Flags struct {
	Agents, TokenFile, CACert, ServerName string
	PlainLoopback, Compare                bool
	PollEvery, ResultEvery, LostAfter     time.Duration
}

// AddFlags binds the follower's flags to fs.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{}
	f.Add(fs)
	return f
}

// Follow starts following the agents the flags name, their merge checked
// against objs; logf hears of refusals (nil: nothing is said).
func (f *Flags) Follow(objs []slo.Objective, version string, logf func(string, ...any)) (*Session, error) {
	cfg, err := f.Config(version, logf)
	if err != nil {
		return nil, err
	}
	fl, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	return NewSession(fl, objs), nil
}

// Session starts following the agents the flags name, as the session
// they make: with --agents-compare both sides' merges compared with o
// (FollowPair), else their merge (Follow), searched by plan where one is
// given (each step split between the agents; nil: none).
func (f *Flags) Session(objs []slo.Objective, o compare.Options, plan *session.Plan, version string, logf func(string, ...any)) (session.Session, error) {
	if f.Compare {
		p, err := f.FollowPair(objs, o, version, logf)
		if err != nil {
			return nil, err // not a nil *PairSession in a Session
		}
		return p, nil
	}
	s, err := f.Follow(objs, version, logf)
	if err != nil {
		return nil, err
	}
	if plan != nil {
		return session.NewSearchOver(s.Searched(), *plan), nil
	}
	return s, nil
}

// FollowPair starts following agents that compare a canary with their
// baseline (--agents-compare): two fleets of the same agents, their
// baselines and their canaries, compared with o (PairSession).
func (f *Flags) FollowPair(objs []slo.Objective, o compare.Options, version string, logf func(string, ...any)) (*PairSession, error) {
	cfg, err := f.Config(version, logf)
	if err != nil {
		return nil, err
	}
	cfg.Compare = true
	base, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	ccfg := cfg
	ccfg.Canary = true
	if logf != nil {
		ccfg.Logf = func(format string, args ...any) { logf("canary: "+format, args...) }
	}
	canary, err := Start(ccfg)
	if err != nil {
		base.Stop()
		return nil, err
	}
	return NewPairSession(base, canary, objs, o), nil
}

// Add adds the flags to fs.
func (f *Flags) Add(fs *pflag.FlagSet) {
	fs.StringVar(&f.Agents, "agents", "", "follow infertop agents instead of loading: host:port,host:port, a DNS name with a port (a headless Service's: re-resolved), or an SRV name _agent._tcp.NAME")
	fs.StringVar(&f.TokenFile, "agents-token-file", "", "with --agents: the token the agents share (their --token-file)")
	fs.StringVar(&f.CACert, "agents-cacert", "", "with --agents: the CA certificate (PEM) the agents' certificates are checked against (default: the system's)")
	fs.StringVar(&f.ServerName, "agents-server-name", "", "with --agents: the name every agent's certificate must hold (default: the name each was found under)")
	fs.BoolVar(&f.PlainLoopback, "agents-plain-loopback", false, "with --agents: poll agents on a loopback address over plain HTTP (their --plain-http-loopback)")
	fs.BoolVar(&f.Compare, "agents-compare", false, "with --agents: the agents compare a canary (their --compare): follow both sides, and the live verdict over their merges")
	fs.DurationVar(&f.PollEvery, "agents-poll", DefaultPollEvery, "with --agents: read each agent's state this often")
	fs.DurationVar(&f.ResultEvery, "agents-result-every", DefaultResultEvery, "with --agents: merge the agents' results (the exact figures) this often")
	fs.DurationVar(&f.LostAfter, "agents-lost-after", DefaultLostAfter, "with --agents: an agent silent this long is lost (one that never answered, unreachable)")
}

// On says --agents was given.
func (f *Flags) On() bool { return f.Agents != "" }

// follower are the flags a follower of agents takes; the rest are the
// load's, which are the agents' own.
var follower = []string{"agents", "agents-token-file", "agents-cacert", "agents-server-name", "agents-plain-loopback", "agents-poll",
	"agents-result-every", "agents-lost-after", "agents-compare", "slo", "slo-window", "fail-fast", "json", "csv", "html", "progress-every", "theme",
	"report-dir",
	// A capacity search's (capflag's): the follower drives it, each
	// step's load split between the agents.
	"find-max", "matrix", "over", "from", "to", "resolution", "step-warmup", "step-min-requests", "step-min-time", "step-max-time",
	// A comparison's judging (sessionflag's), with --agents-compare.
	"regression", "compare-min-seconds"}

// followerOnly are the follower's flags that mean nothing without
// --agents.
var followerOnly = follower[:9]

// Check refuses, with --agents, a flag of the load: the agents were
// given the load, and run it. own are the command's flags that are no
// load's (infertop ssh's server's), taken beside --agents.
func (f *Flags) Check(fs *pflag.FlagSet, own ...string) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err == nil && f.On() && !slices.Contains(follower, fl.Name) && !slices.Contains(own, fl.Name) {
			err = fmt.Errorf("--agents: --%s is the load's, which the agents run: give it to infertop agent", fl.Name)
			if w := agent.Whole(fl.Name); w != nil { // nor theirs
				err = fmt.Errorf("--agents: %w", w)
			}
		}
		if err == nil && !f.On() && fl.Name != "agents" && slices.Contains(followerOnly, fl.Name) {
			err = fmt.Errorf("--%s needs --agents", fl.Name)
		}
		switch {
		case err != nil || !f.On():
		case !f.Compare && (fl.Name == "regression" || fl.Name == "compare-min-seconds"):
			err = fmt.Errorf("--agents: --%s judges a comparison: give --agents-compare (the agents' --compare)", fl.Name)
		case f.Compare && (fl.Name == "find-max" || fl.Name == "matrix"):
			err = fmt.Errorf("--agents-compare: --%s does not work with a comparison yet (as with --compare from one machine)", fl.Name)
		}
	})
	switch {
	case err != nil:
		return err
	case !f.On():
		return nil
	case f.TokenFile == "":
		return errors.New("--agents needs --agents-token-file (the agents' shared token)")
	case f.PollEvery < 10*time.Millisecond || f.ResultEvery < f.PollEvery:
		return fmt.Errorf("--agents-poll must be at least 10ms and --agents-result-every no shorter, got %v and %v", f.PollEvery, f.ResultEvery)
	case f.LostAfter < 2*f.PollEvery:
		return fmt.Errorf("--agents-lost-after must be at least two polls (%v), got %v", 2*f.PollEvery, f.LostAfter)
	}
	return nil
}

// Config is the fleet the flags describe; version is the follower's.
func (f *Flags) Config(version string, logf func(string, ...any)) (Config, error) {
	src, err := ParseSource(f.Agents)
	if err != nil {
		return Config{}, err
	}
	token, err := agent.ReadToken(f.TokenFile)
	if err != nil {
		return Config{}, fmt.Errorf("--agents-token-file: %w", err)
	}
	cfg := Config{Source: src, Token: token, ServerName: f.ServerName, PlainLoopback: f.PlainLoopback, Version: version,
		PollEvery: f.PollEvery, ResultEvery: f.ResultEvery, LostAfter: f.LostAfter, Timeout: min(DefaultTimeout, f.LostAfter/2), Logf: logf}
	if f.CACert != "" {
		b, err := os.ReadFile(f.CACert)
		if err != nil {
			return Config{}, fmt.Errorf("--agents-cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return Config{}, fmt.Errorf("--agents-cacert %s: no PEM certificate in it", f.CACert)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
