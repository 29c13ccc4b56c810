package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
)

const agentSynopsis = `Usage: infertop agent --index I --of N --token-file FILE (--tls-cert F --tls-key F | --plain-http-loopback) [flags]

One share of a load spread over N machines (an Indexed Job's pods, see
deploy/kubernetes): the same flags as infertop run, of which this agent takes
its part: the rate split N ways, the concurrency and --requests split with
the remainder spread over the first indexes, a seed derived from the index.
It starts at --start-at on its own clock, serves its live state on --listen
to whoever holds the token (GET /state, Authorization: Bearer TOKEN; GET
/healthz to anyone), and writes its result (--json) for infertop merge.`

// agentFlags are the agent's own flags.
type agentFlags struct {
	index, of                          int
	startAt                            string
	listen, tokenFile, tlsCert, tlsKey string
	plainLoopback                      bool
}

func (f *agentFlags) add(fs *pflag.FlagSet) {
	fs.IntVar(&f.index, "index", -1, "this agent's index, 0..N-1 (an Indexed Job's JOB_COMPLETION_INDEX)")
	fs.IntVar(&f.of, "of", 0, "the number of agents sharing the load")
	fs.StringVar(&f.startAt, "start-at", "", "start the load at this instant (RFC 3339) on this machine's clock; empty: at once")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7070", "serve the agent's live state on this address")
	fs.StringVar(&f.tokenFile, "token-file", "", "the token the dashboard and the agents share (required; kept out of ps)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "the agent's TLS certificate (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the certificate's key (PEM)")
	fs.BoolVar(&f.plainLoopback, "plain-http-loopback", false, "serve plain HTTP, allowed only on a loopback --listen (tests, one machine)")
}

// agentFlagSet is the agent's flags: the load's, the run's and its own.
func (a *app) agentFlagSet() (*pflag.FlagSet, *loadFlags, *sessionflag.Run, *agentFlags) {
	fs := newFlagSet("agent", agentSynopsis, a.stdout)
	f := addLoadFlags(fs)
	rf, af := sessionflag.AddRun(fs), &agentFlags{}
	af.add(fs)
	return fs, f, rf, af
}

// runAgent is `infertop agent`: a headless run of this agent's share,
// its live state served behind the token.
func (a *app) runAgent(args []string) error {
	fs, f, rf, af := a.agentFlagSet()
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	for _, name := range []string{"stages", "ramp", "dataset", "trace", "sessions"} {
		if fs.Lookup(name) != nil && fs.Changed(name) {
			return usagef("agent: --%s is not split between agents yet", name)
		}
	}
	share := agent.Share{Index: af.index, Of: af.of}
	if err := share.Check(); err != nil {
		return usagef("%v (give --index and --of)", err)
	}
	b := &agent.Board{Share: share, Version: versionString()}
	if af.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, af.startAt)
		if err != nil {
			return usagef("agent: --start-at %q: want an RFC 3339 instant such as 2026-12-02T00:00:00Z", af.startAt)
		}
		b.StartAt = &t
	}
	if err := rf.Check(len(f.slos) > 0); err != nil {
		return usageError{err}
	}
	token, err := agent.ReadToken(af.tokenFile)
	if err != nil {
		return usageError{err}
	}
	tc, err := agent.LoadTLS(af.tlsCert, af.tlsKey)
	if err != nil {
		return usageError{err}
	}
	ln, err := agent.Listen(af.listen, tc, af.plainLoopback)
	if err != nil {
		return usageError{err}
	}
	defer ln.Close()
	// The plan is made of the whole load (its manifest's settings are
	// the flags as given, which the merge holds the agents to), then cut
	// to this agent's share.
	lp, err := a.headlessPlan(fs, f, rf, &sessionflag.Flags{}, nil)
	if err != nil {
		return err
	}
	if err := b.Cut(&lp.Run.Load, fs.Changed("requests")); err != nil {
		return usageError{err}
	}
	return a.serveAgent(b, ln, token, lp, rf)
}

// serveAgent serves the agent's state from the first moment (the wait
// included, so a dashboard sees every agent that is up), waits for the
// start, and runs the share to its end.
func (a *app) serveAgent(b *agent.Board, ln net.Listener, token []byte, lp session.Spec, rf *sessionflag.Run) error {
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(a.stderr, "infertop "+format+"\n", args...)
	}
	h := agent.NewHandler(token, b.State, b.Result, logf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- agent.Serve(ctx, ln, h) }()
	defer func() { cancel(); <-served }()
	l := lp.Run.Load
	logf("agent: %d of %d serving on %s (concurrency %d, rate %g, seed %d)", b.Share.Index, b.Share.Of, ln.Addr(), l.Knobs.Concurrency, l.Knobs.Rate, l.Seed)
	if b.StartAt != nil {
		wctx, wcancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-sigs:
				wcancel()
			case <-wctx.Done():
			}
		}()
		err := agent.WaitUntil(wctx, *b.StartAt)
		wcancel()
		if err != nil {
			return err
		}
	}
	s, err := a.startUnder(sigs, lp)
	if err != nil {
		return err
	}
	defer s.Stop()
	defer s.Release()
	if l, ok := s.Sides()[0].(agent.Load); ok {
		b.Started(l)
	}
	fo := rf.Follower(a.stderr, false, sigs).Follow(s)
	return a.conclude(session.End(s, fo, a.reportTimeout), rf.Outputs())
}
