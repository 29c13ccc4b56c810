package main

import (
	"context"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
)

const agentSynopsis = `Usage: infertop agent --index I --of N --token-file FILE (--tls-cert F --tls-key F | --plain-http-loopback) [flags]

One share of a load spread over N machines (an Indexed Job's pods, see
deploy/kubernetes), of the flags of infertop run: the rate split N ways, the
concurrency, --requests and each stage's load split with the remainder spread,
a dataset's prompts and a trace's arrivals partitioned, a seed of its own.
It starts at --start-at on its own clock, serves its live state on --listen
to whoever holds the token (GET /state, Authorization: Bearer TOKEN; GET
/healthz to anyone), takes their knob changes (POST /control, its share of
the whole), and writes its result (--json) for infertop merge. With --compare URL it loads
the canary too (the same share on each side), served under /canary/.`

// agentFlagSet is the agent's flags: the load's, the run's and its own.
func (a *app) agentFlagSet() (*pflag.FlagSet, *loadFlags, *sessionflag.Run, *sessionflag.Flags, *agent.Flags) {
	fs := newFlagSet("agent", agentSynopsis, a.stdout)
	f := addLoadFlags(fs)
	return fs, f, sessionflag.AddRun(fs), sessionflag.Add(fs, true), agent.AddFlags(fs)
}

// runAgent is `infertop agent`: a headless run of this agent's share,
// its live state served behind the token.
func (a *app) runAgent(args []string) error {
	if err := agent.Unsplit(args); err != nil { // flags it has not: their own word, not "unknown"
		return usageError{err}
	}
	fs, f, rf, cf, af := a.agentFlagSet()
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	b, err := af.Board(versionString())
	if err != nil {
		return usageError{err}
	}
	if err := rf.Check(len(f.slos) > 0 || cf.Regressions()); err != nil {
		return usageError{err}
	}
	ln, token, err := af.Open()
	if err != nil {
		return usageError{err}
	}
	defer ln.Close()
	// The plan is made of the whole load (its manifest's settings are
	// the flags as given, which the merge holds the agents to), then cut
	// to this agent's share.
	lp, err := a.headlessPlan(fs, f, rf, cf, nil)
	if err != nil {
		return err
	}
	if err := lp.CutFor(b, fs.Changed("requests")); err != nil {
		return usageError{err}
	}
	return a.serveAgent(b, ln, token, lp, rf, af.Linger)
}

// serveAgent serves the agent's state from the first moment (the wait
// included, so a dashboard sees every agent that is up), waits for the
// start, and runs the share to its end.
func (a *app) serveAgent(b *agent.Board, ln net.Listener, token []byte, lp session.Spec, rf *sessionflag.Run, linger time.Duration) error {
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	h := b.Handler(token, a.logf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- agent.Serve(ctx, ln, h) }()
	defer func() { cancel(); <-served }()
	l := lp.Base().Load
	a.logf("agent: %d of %d serving on %s (concurrency %d, rate %g, seed %d)", b.Share.Index, b.Share.Of, ln.Addr(), l.Knobs.Concurrency, l.Knobs.Rate, l.Seed)
	if err := b.WaitStart(ctx, sigs); err != nil {
		return err
	}
	s, err := a.startUnder(sigs, lp)
	if err != nil {
		return err
	}
	defer s.Stop()
	defer session.Release(s)
	session.Serve(b, s)
	fo := rf.Follower(a.stderr, false, sigs).Follow(s)
	o := session.End(s, fo, a.reportTimeout)
	b.Finish(o.Reports...) // the last word, for the followers (run --agents)
	err = a.conclude(o, rf.Outputs())
	if fo.Signals < 2 {
		b.Linger(linger, sigs)
	}
	return err
}
