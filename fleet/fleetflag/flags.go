// Package fleetflag binds the follower's flags (run --agents, the
// dashboard's, ssh's) and owns the rule that joins them to every other
// binder's: with --agents the load is the agents', so a flag of the load
// is refused, and only the flags their binders mark as a follower's
// (flaghelp.Follower, flaghelp.Roles) are taken. The marks are pflag
// annotations set where each flag is defined, not a list of names kept
// here.
package fleetflag

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/fleet"
	"github.com/infertop/infertop/readlimit"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
)

// Flags are the follower's flags (run --agents, the dashboard's, ssh's).
type Flags struct {
	Agents, TokenFile, CACert, ServerName string
	PlainLoopback, Compare                bool
	PollEvery, ResultEvery, LostAfter     time.Duration
}

// Add binds the follower's flags to fs, marked as the follower's own.
func Add(fs *pflag.FlagSet) *Flags {
	defer flaghelp.Group(fs, "Following agents (infertop agent)")()
	f := &Flags{}
	fs.StringVar(&f.Agents, "agents", "", "follow infertop agents instead of loading: host:port,host:port, a DNS name with a port (a headless Service's: re-resolved), or an SRV name _agent._tcp.NAME")
	fs.StringVar(&f.TokenFile, "agents-token-file", "", "with --agents: the token the agents share (their --token-file)")
	fs.StringVar(&f.CACert, "agents-cacert", "", "with --agents: the CA certificate (PEM) the agents' certificates are checked against (default: the system's)")
	fs.StringVar(&f.ServerName, "agents-server-name", "", "with --agents: the name every agent's certificate must hold (default: the name each was found under)")
	fs.BoolVar(&f.PlainLoopback, "agents-plain-loopback", false, "with --agents: poll agents on a loopback address over plain HTTP (their --plain-http-loopback)")
	fs.BoolVar(&f.Compare, "agents-compare", false, "with --agents: the agents compare a canary (their --compare): follow both sides, and the live verdict over their merges")
	fs.DurationVar(&f.PollEvery, "agents-poll", fleet.DefaultPollEvery, "with --agents: read each agent's state this often")
	fs.DurationVar(&f.ResultEvery, "agents-result-every", fleet.DefaultResultEvery, "with --agents: merge the agents' results (the exact figures) this often")
	fs.DurationVar(&f.LostAfter, "agents-lost-after", fleet.DefaultLostAfter, "with --agents: an agent silent this long is lost (one that never answered, unreachable)")
	flaghelp.Roles(fs, []string{flaghelp.Taken, flaghelp.Only}, "agents", "agents-token-file", "agents-cacert", "agents-server-name", "agents-plain-loopback",
		"agents-compare", "agents-poll", "agents-result-every", "agents-lost-after")
	return f
}

// On says --agents was given.
func (f *Flags) On() bool { return f.Agents != "" }

// Check refuses, with --agents, a flag of the load: the agents were
// given the load, and run it. own are the command's flags that are no
// load's (infertop ssh's server's), taken beside --agents.
func (f *Flags) Check(fs *pflag.FlagSet, own ...string) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err == nil {
			err = f.check(fl, own)
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

// check is Check's rule for one flag given.
func (f *Flags) check(fl *pflag.Flag, own []string) error {
	switch {
	case !f.On() && fl.Name != "agents" && flaghelp.HasRole(fl, flaghelp.Only):
		return fmt.Errorf("--%s needs --agents", fl.Name)
	case !f.On():
		return nil
	case !flaghelp.HasRole(fl, flaghelp.Taken) && !slices.Contains(own, fl.Name):
		if w := agent.Whole(fl.Name); w != nil { // nor the agents'
			return fmt.Errorf("--agents: %w", w)
		}
		return fmt.Errorf("--agents: --%s is the load's, which the agents run: give it to infertop agent", fl.Name)
	case !f.Compare && flaghelp.HasRole(fl, flaghelp.Judging):
		return fmt.Errorf("--agents: --%s judges a comparison: give --agents-compare (the agents' --compare)", fl.Name)
	case f.Compare && flaghelp.HasRole(fl, flaghelp.Searching):
		return fmt.Errorf("--agents-compare: --%s does not work with a comparison yet (as with --compare from one machine)", fl.Name)
	}
	return nil
}

// Spec is the agents the flags name as a followed load's spec, their
// merge checked against objs; with --agents-compare both sides' merges
// compared with o. version is the follower's; logf hears of refusals
// (nil: nothing is said). It starts nothing: session.Start calls its
// Follow.
func (f *Flags) Spec(objs []slo.Objective, o compare.Options, version string, logf func(string, ...any)) (*session.AgentsConfig, error) {
	cfg, err := f.Config(version, logf)
	if err != nil {
		return nil, err
	}
	if !f.Compare {
		return &session.AgentsConfig{Follow: func() ([]session.Merge, session.MergePair, error) {
			fl, err := fleet.Start(cfg)
			if err != nil {
				return nil, nil, err
			}
			return []session.Merge{fleet.NewMerging(fl, objs)}, nil, nil
		}}, nil
	}
	return &session.AgentsConfig{Compare: &o, Follow: func() ([]session.Merge, session.MergePair, error) { return followPair(cfg, objs, o) }}, nil
}

// followPair follows agents that compare a canary with their baseline
// (--agents-compare): two fleets of the same agents, their baselines and
// their canaries, and the comparison of their merges.
func followPair(cfg fleet.Config, objs []slo.Objective, o compare.Options) ([]session.Merge, session.MergePair, error) {
	cfg.Compare = true
	base, err := fleet.Start(cfg)
	if err != nil {
		return nil, nil, err
	}
	ccfg := cfg
	ccfg.Canary = true
	if logf := cfg.Logf; logf != nil {
		ccfg.Logf = func(format string, args ...any) { logf("canary: "+format, args...) }
	}
	canary, err := fleet.Start(ccfg)
	if err != nil {
		base.Stop()
		return nil, nil, err
	}
	b, c := fleet.NewMerging(base, objs), fleet.NewMerging(canary, objs)
	return []session.Merge{b, c}, fleet.NewPair(b, c, o.Regressions), nil
}

// fleet's types are what session follows.
var (
	_ session.Merge     = (*fleet.Merging)(nil)
	_ session.MergePair = (*fleet.Pair)(nil)
)

// Config is the fleet the flags describe; version is the follower's.
func (f *Flags) Config(version string, logf func(string, ...any)) (fleet.Config, error) {
	src, err := discover.ParseSource(f.Agents)
	if se := (*discover.SourceError)(nil); errors.As(err, &se) {
		return fleet.Config{}, fmt.Errorf("--agents %q: %w", se.Item, se.Why)
	} else if err != nil {
		return fleet.Config{}, err
	}
	token, err := agent.ReadToken(f.TokenFile)
	if err != nil {
		return fleet.Config{}, fmt.Errorf("--agents-token-file: %w", err)
	}
	cfg := fleet.Config{Source: src, Token: token, ServerName: f.ServerName, PlainLoopback: f.PlainLoopback, Version: version,
		PollEvery: f.PollEvery, ResultEvery: f.ResultEvery, LostAfter: f.LostAfter, Timeout: min(fleet.DefaultTimeout, f.LostAfter/2), Logf: logf}
	if f.CACert != "" {
		b, err := readlimit.File(f.CACert, readlimit.Certs)
		if err != nil {
			return fleet.Config{}, fmt.Errorf("--agents-cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fleet.Config{}, fmt.Errorf("--agents-cacert %s: no PEM certificate in it", f.CACert)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
