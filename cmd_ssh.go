package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/dashboard"
	"github.com/infertop/infertop/fleet/fleetflag"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
	"github.com/infertop/infertop/sshserver"
	"github.com/infertop/infertop/sshserver/sshflag"
	"github.com/infertop/infertop/termguard"
)

const sshSynopsis = `Usage: infertop ssh [flags]

Serves the dashboard over SSH: one load on the endpoint, a view of it for
every session, sized and coloured for its own terminal. Keys in
--authorized-keys may connect (no passwords); keys in --controllers turn the
knobs, every other session watches. For a room:

  infertop ssh --listen 0.0.0.0:2222 --allow-any-key --controllers ~/.ssh/id_ed25519.pub --local
  ssh -t -p 2222 demo-host            (everyone else; add theme=light after the host for a light theme)

With --compare URL every session sees the canary beside the endpoint and
the live verdict, and a controller's keys move both loads; with --split-by
the groups of the endpoint's answers. When the server stops (Ctrl+C) the
comparison's table is printed. With --agents every session sees the agents
followed (infertop agent), merged, and their panel (infertop --help's
--agents flags).`

// runSSH is `infertop ssh`: one load (or the agents', merged), served to
// every session until a signal; with --local on this terminal too.
func (a *app) runSSH(args []string) error {
	fs := newFlagSet("ssh", sshSynopsis, a.stdout)
	f := addLoadFlags(fs)
	sf := sshflag.Add(fs)
	cf := sessionflag.Add(fs, false)
	agf := fleetflag.Add(fs)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	if err := cmp.Or(sf.Check(), agf.Check(fs)); err != nil {
		return usageError{err}
	}
	lp, err := a.sshSpec(f, cf, agf, sf.Local)
	if err != nil {
		return err
	}
	if err := runner.CheckDir(sf.ReportDir); err != nil {
		return usagef("--report-dir: %v", err)
	}
	term, err := sf.Terminal(a.stdout)
	if err != nil {
		return usageError{err}
	}
	logw, closeLog, err := sf.Log(a.stderr)
	if err != nil {
		return usageError{err}
	}
	defer closeLog()
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-sigs:
			stop()
		case <-ctx.Done():
		}
	}()
	s, err := a.start(ctx, lp)
	if err != nil {
		return err
	}
	defer s.Stop()
	d := a.dashboardOptions(f.theme, sf.ReportDir, nil)
	c := sf.Server
	c.Log, c.Watch, c.Controller, c.Canary, c.View = logw, s.Sides()[0], s.Controller(), s.View().Canary, dashboard.ViewOptions(s, d)
	srv, err := sshserver.New(c)
	if err != nil {
		return usageError{sshflag.ServerError(err)}
	}
	ln, err := net.Listen("tcp", sf.Listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	fmt.Fprintln(logw, sshflag.Serving(s.What(), ln.Addr()))
	return a.serveSSH(ctx, srv, ln, s, term, d)
}

// sshSpec is the load ssh's flags describe: the agents' (--agents, their
// notes off the terminal with --local), or this machine's.
func (a *app) sshSpec(f *loadFlags, cf *sessionflag.Flags, agf *fleetflag.Flags, quiet bool) (session.Spec, error) {
	if agf.On() {
		ag, err := a.agentsSpec(f, agf, cf, quiet)
		return session.Spec{Agents: ag}, err
	}
	cfg, err := f.config()
	if err != nil {
		return session.Spec{}, err
	}
	lp, err := cf.Spec(cfg, nil)
	if err != nil {
		return session.Spec{}, usageError{err}
	}
	return lp, nil
}

// serveSSH serves srv on ln until ctx ends (a signal) and, with term (--local),
// shows the dashboard there too; then the load's last word.
func (a *app) serveSSH(ctx context.Context, srv *sshserver.Server, ln net.Listener, s session.Session, term *os.File, d dashboard.Options) error {
	srvCtx, stopServer := context.WithCancel(ctx)
	serveErr := make(chan error, 1)
	go func() { defer crash.Recover(); serveErr <- srv.Serve(srvCtx, ln) }()
	if term == nil {
		<-ctx.Done()
		stopServer()
		if err := <-serveErr; err != nil {
			return err
		}
		return a.lastWord(s)
	}
	guard := termguard.Install(term, a.stderr)
	defer crash.Handle(nil)
	p, done, err := a.dashboard(ctx, s, term, d)
	if err != nil {
		stopServer()
		<-serveErr
		return err
	}
	err = guard.Run(p)
	done()
	if n := srv.Active(); err == nil && ctx.Err() == nil && n > 0 {
		// q ends this terminal's session, as it does every other's: the
		// audience is not cut off without asking.
		fmt.Fprintln(a.stderr, sshflag.StillWatched(n, ln.Addr()))
		<-ctx.Done()
	}
	stopServer()
	if serr := <-serveErr; serr != nil {
		return serr
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return a.lastWord(s)
}
