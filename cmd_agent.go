package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/session"
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
	linger                             time.Duration
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
	fs.DurationVar(&f.linger, "linger", time.Minute, "after the run, serve the final result this long, or until a follower (run --agents) has fetched it")
}

// agentFlagSet is the agent's flags: the load's, the run's and its own.
func (a *app) agentFlagSet() (*pflag.FlagSet, *loadFlags, *runFlags, *agentFlags) {
	fs := newFlagSet("agent", agentSynopsis, a.stdout)
	f := addLoadFlags(fs)
	rf, af := &runFlags{}, &agentFlags{}
	rf.add(fs)
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
	b := &agentBoard{share: share}
	if af.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, af.startAt)
		if err != nil {
			return usagef("agent: --start-at %q: want an RFC 3339 instant such as 2026-12-02T00:00:00Z", af.startAt)
		}
		b.startAt = &t
	}
	if err := rf.check(f, &compareFlags{}); err != nil {
		return err
	}
	token, err := agent.ReadToken(af.tokenFile)
	if err != nil {
		return usageError{err}
	}
	tc, err := af.tls()
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
	lp, err := a.headlessPlan(fs, f, rf, &compareFlags{}, &capacityFlags{})
	if err != nil {
		return err
	}
	if err := b.cut(&lp.run.Load, fs.Changed("requests")); err != nil {
		return err
	}
	b.linger = af.linger
	return a.serveAgent(b, ln, token, lp, rf)
}

// serveAgent serves the agent's state from the first moment (the wait
// included, so a dashboard sees every agent that is up), waits for the
// start, and runs the share to its end.
func (a *app) serveAgent(b *agentBoard, ln net.Listener, token []byte, lp loadPlan, rf *runFlags) error {
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(a.stderr, "infertop "+format+"\n", args...)
	}
	h := agent.NewHandler(token, b.state, b.result, logf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- agent.Serve(ctx, ln, h) }()
	defer func() { cancel(); <-served }()
	l := lp.run.Load
	logf("agent: %d of %d serving on %s (concurrency %d, rate %g, seed %d)", b.share.Index, b.share.Of, ln.Addr(), l.Knobs.Concurrency, l.Knobs.Rate, l.Seed)
	if b.startAt != nil {
		wctx, wcancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-sigs:
				wcancel()
			case <-wctx.Done():
			}
		}()
		err := agent.WaitUntil(wctx, *b.startAt)
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
	b.started(s.Sides()[0])
	fl := session.Follower{Stderr: a.stderr, Live: false, ProgressEvery: rf.progressEvery,
		Gate: session.Gate{On: rf.failFast, Window: rf.sloWindow}, Signals: sigs}
	fo := fl.Follow(s)
	o := session.End(s, fo, a.reportTimeout)
	b.finish(o)
	err = a.conclude(o, rf.outputs())
	if fo.Signals < 2 {
		b.wait(sigs)
	}
	return err
}

// agentBoard is what the agent serves: its share, and its load once it
// has started (behind mu: the handler reads it from its own goroutines).
type agentBoard struct {
	share   agent.Share
	startAt *time.Time
	seed    uint64

	linger time.Duration

	mu      sync.Mutex
	side    session.Side
	since   time.Time
	final   []byte        // the last word's result JSON (nil: not yet)
	fetched chan struct{} // closed once a follower has fetched final
}

// finish keeps the outcome's result as the final one /result serves.
func (b *agentBoard) finish(o session.Outcome) {
	var buf bytes.Buffer
	if len(o.Reports) == 0 || o.Reports[0].WriteJSON(&buf) != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.final, b.fetched = buf.Bytes(), make(chan struct{})
}

// wait serves the final result until a follower has fetched it, the
// linger is over or a signal comes.
func (b *agentBoard) wait(sigs <-chan os.Signal) {
	b.mu.Lock()
	fetched := b.fetched
	b.mu.Unlock()
	if fetched == nil || b.linger <= 0 {
		return
	}
	t := time.NewTimer(b.linger)
	defer t.Stop()
	select {
	case <-fetched:
	case <-t.C:
	case <-sigs:
	}
}

// cut makes l this agent's share of the whole load it describes.
func (b *agentBoard) cut(l *load.Config, requestsGiven bool) error {
	share := b.share
	whole := l.Knobs.Concurrency
	l.Knobs.Concurrency = int(share.Count(int64(whole)))
	if l.Knobs.Concurrency == 0 && l.Knobs.Rate == 0 {
		return usagef("agent: a concurrency of %d split %d ways leaves agent %d none", whole, share.Of, share.Index)
	}
	l.Knobs.Rate = share.Rate(l.Knobs.Rate)
	l.MaxRequests = share.Count(l.MaxRequests)
	if requestsGiven && l.MaxRequests == 0 {
		return usagef("agent: --requests split %d ways leaves agent %d none", share.Of, share.Index)
	}
	l.Seed = share.Seed(l.Seed)
	b.seed = l.Seed
	return nil
}

// started records the load's side, once it runs.
func (b *agentBoard) started(side session.Side) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.side, b.since = side, time.Now()
}

// state is the agent's state now (agent.Handler's GET /state).
func (b *agentBoard) state() agent.State {
	b.mu.Lock()
	sd, at, final := b.side, b.since, b.final != nil
	b.mu.Unlock()
	st := agent.State{Version: versionString(), Index: b.share.Index, Of: b.share.Of, StartAt: b.startAt, Started: at, Seed: b.seed,
		Now: time.Now(), Final: final}
	if b.startAt != nil && !at.IsZero() {
		st.OffsetMS = float64(at.Sub(*b.startAt)) / 1e6
	}
	if sd != nil {
		fillState(&st, sd.Latest())
	}
	return st
}

// result writes the result so far, as the run's JSON will be at its end:
// what a dashboard merges (report/merge) while the agents run.
func (b *agentBoard) result(ctx context.Context, w io.Writer) (bool, error) {
	b.mu.Lock()
	sd, final, fetched := b.side, b.final, b.fetched
	if final != nil {
		select {
		case <-fetched:
		default:
			close(fetched)
		}
	}
	b.mu.Unlock()
	if final != nil {
		_, err := w.Write(final)
		return true, err
	}
	r, ok := sd.(interface {
		Report(context.Context, load.Snapshot) *report.Report
	})
	if !ok {
		return false, errors.New("the load has not started")
	}
	return false, r.Report(ctx, sd.Latest()).WriteJSON(w)
}

// fillState takes the counters and knobs of snapshot s.
func fillState(st *agent.State, s load.Snapshot) {
	r := s.Run
	st.Mode, st.Concurrency, st.Rate = s.Knobs.Mode.String(), s.Knobs.Concurrency, s.Knobs.Rate
	st.PromptTokens, st.OutputTokens = s.Knobs.PromptTokens, s.Knobs.OutputTokens
	st.Sent, st.Completed, st.Failed, st.Incomplete, st.InFlight = r.Sent(), r.Completed, r.Failed, r.Incomplete, r.Pending
	st.TTFTP99MS = float64(r.Latency[load.TTFT].P99) / 1e6
	st.Done = s.Done
}

// tls is the agent's TLS configuration, nil without a certificate.
func (f *agentFlags) tls() (*tls.Config, error) {
	if f.tlsCert == "" && f.tlsKey == "" {
		return nil, nil
	}
	if f.tlsCert == "" || f.tlsKey == "" {
		return nil, fmt.Errorf("agent: give --tls-cert and --tls-key together")
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("agent: the certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
