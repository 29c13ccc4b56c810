package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/mattn/go-isatty"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/dashboard"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/sshserver"
	"github.com/infertop/infertop/sshserver/sshflag"
	"github.com/infertop/infertop/termguard"
	"github.com/infertop/infertop/watch"
	"github.com/infertop/infertop/watch/watchflag"
)

const watchSynopsis = `Usage: infertop watch [GROUP=ADDR,ADDR ...] [flags]

Follows every server of a fleet through its own /metrics, sending
nothing to the model: per group (a revision), the requests, tokens,
errors, queue, KV cache and the servers' TTFT, ITL and E2E percentiles
as the bucket bounds they are, and the canary group judged against the
baseline with anytime-valid statistics. With no target it starts an
embedded fleet of sims (a baseline and a slower canary) to watch.
With --ssh ADDR the dashboard is served over SSH too, to every key
--authorized-keys lets in (or any, --allow-any-key); each session watches.`

// runWatch is `infertop watch`: the dashboard of a fleet, or with
// --headless its progress lines, summary and exit code.
func (a *app) runWatch(args []string) error {
	fs := newFlagSet("watch", watchSynopsis, a.stdout)
	wf := watchflag.Add(fs)
	sf := sshflag.AddWatch(fs)
	if err := parseArgs(fs, args); err != nil { // the targets may be arguments
		return err
	}
	if err := sf.CheckWatch(); err != nil {
		return usageError{err}
	}
	sigs, stopSigs := a.interrupts()
	defer stopSigs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	built, err := wf.Build(ctx, fs.Args())
	if err != nil {
		return usagef("watch: %v", err)
	}
	defer built.Close()
	stopProbe, err := a.startWatchProbe(ctx, wf, &built.Config)
	if err != nil {
		return err
	}
	defer stopProbe()
	w, err := watch.New(built.Config)
	if err != nil {
		return usageError{err}
	}
	var term *os.File
	if !wf.Headless {
		t, ok := a.stdout.(*os.File)
		if !ok || !isatty.IsTerminal(t.Fd()) || !isatty.IsTerminal(a.input().Fd()) {
			return usagef("watch: the dashboard needs a terminal on stdin and stdout (or --headless)")
		}
		term = t
	}
	if wf.Serve != "" {
		ln, err := net.Listen("tcp", wf.Serve)
		if err != nil {
			return usagef("--serve: %v", err)
		}
		defer w.Serve(ln)()
		a.logf("watch: serving /verdict on http://%s/verdict", ln.Addr())
	}
	runCtx, stopRun := context.WithCancel(ctx)
	if wf.Duration > 0 {
		runCtx, stopRun = context.WithTimeout(ctx, wf.Duration)
	}
	done := make(chan struct{})
	go func() { defer close(done); defer crash.Recover(); w.Run(runCtx) }()
	defer func() { stopRun(); <-done }()
	var notice string // the SSH address, in the dashboard's title
	if sf.Listen != "" {
		stopSSH, addr, err := a.serveWatchSSH(runCtx, w, sf, term != nil)
		if err != nil {
			return err
		}
		defer stopSSH()
		notice = "served over SSH on " + addr
	}
	if term != nil {
		guard := termguard.Install(term, a.stderr)
		defer crash.Handle(nil)
		p, unsubscribe := dashboard.WatchProgram(runCtx, w, term, dashboard.Options{NoColor: a.env("NO_COLOR") != "", Input: a.stdin, Wrap: a.wrapModel, Notice: notice})
		err := guard.Run(p)
		unsubscribe()
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("watch: dashboard: %w", err)
		}
	} else {
		w.Follow(wf.ProgressEvery, wf.FailFast, a.logf, stopRun)
	}
	stopRun()
	<-done
	stopProbe() // before the last word, which reads its final count
	return a.concludeWatch(w, wf)
}

// startWatchProbe starts the end-to-end probe --probe-url asks for (a
// followed load like any other: session.Start starts it), an open loop
// at --probe-rate of short requests, and has the watch read its figures
// at every look; stop ends it. Without --probe-url: nothing.
func (a *app) startWatchProbe(ctx context.Context, wf *watchflag.Flags, cfg *watch.Config) (stop func(), err error) {
	ps, ok, err := wf.Probe()
	if err != nil || !ok {
		return func() {}, usageErr(err)
	}
	s, err := session.Start(ctx, session.Spec{Run: ps.Run(cfg.Window, a.env)}, session.PrefixNotes(a.stderr, "infertop: probe: "), a.wrapDo)
	if err != nil {
		return nil, usageError{watchflag.ProbeError(err)}
	}
	side := s.Sides()[0]
	cfg.Probe = func() (watch.Probe, bool) { return ps.Figures(side.Latest()), true }
	var once sync.Once
	return func() { once.Do(func() { s.Stop() }) }, nil
}

// usageErr is err as a usage error (exit 2); nil stays nil.
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// serveWatchSSH serves the watch's dashboard over SSH (--ssh) until ctx
// ends or stop is called; stop waits for the server. Its connection lines
// go to --log, else stderr, but never across this terminal's dashboard.
func (a *app) serveWatchSSH(ctx context.Context, w *watch.Watch, sf *sshflag.Flags, onTerminal bool) (stop func(), addr string, err error) {
	stderr := a.stderr
	if onTerminal {
		stderr = io.Discard
	}
	logw, closeLog, err := sf.Log(stderr)
	if err != nil {
		return nil, "", usageError{err}
	}
	c := sf.Server
	c.Log = logw
	c.Model = dashboard.WatchSession(w)
	srv, err := sshserver.New(c)
	if err != nil {
		closeLog()
		return nil, "", usageError{sshflag.ServerError(err)}
	}
	ln, err := net.Listen("tcp", sf.Listen)
	if err != nil {
		closeLog()
		return nil, "", usagef("--ssh: %v", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	a.logf("watch: serving the dashboard over SSH on %s (ssh -t -p %s HOST)", ln.Addr(), port)
	srvCtx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { defer crash.Recover(); served <- srv.Serve(srvCtx, ln) }()
	return func() {
		cancel()
		if err := <-served; err != nil {
			a.logf("watch: the SSH server: %v", err)
		}
		closeLog()
	}, ln.Addr().String(), nil
}

// concludeWatch writes the last snapshot (stdout, --json, --html) and
// says the exit code: 1 regressed, 2 unusable, 0 otherwise.
func (a *app) concludeWatch(w *watch.Watch, wf *watchflag.Flags) error {
	s, err := w.Conclude(a.stdout, wf.JSON, wf.HTML)
	switch {
	case errors.Is(err, watch.ErrNeverRead):
		return exitError{2, fmt.Errorf("watch: %w", err)}
	case err != nil:
		return fmt.Errorf("watch: %w", err)
	case s.Verdict.State == watch.Regressed:
		return exitError{1, fmt.Errorf("watch: %s", s.Verdict.Line)}
	case s.Verdict.State == watch.Unusable:
		return exitError{2, fmt.Errorf("watch: %s", s.Verdict.Line)}
	}
	return nil
}
