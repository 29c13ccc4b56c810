package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/sshserver"
	"github.com/infertop/infertop/termguard"
	"github.com/spf13/pflag"
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
comparison's table is printed.`

// sshFlags are `infertop ssh`'s own flags, bound to the server's
// configuration.
type sshFlags struct {
	srv                        sshserver.Config
	listen, logPath, reportDir string
	local                      bool
}

func (sf *sshFlags) add(fs *pflag.FlagSet) {
	home, _ := os.UserHomeDir()
	confDir, err := os.UserConfigDir()
	if err != nil {
		confDir = filepath.Join(home, ".config")
	}
	c := &sf.srv
	fs.StringVar(&sf.listen, "listen", "127.0.0.1:2222", "address to serve SSH on")
	fs.StringVar(&c.AuthorizedKeys, "authorized-keys", filepath.Join(home, ".ssh", "authorized_keys"), "public keys that may connect")
	fs.BoolVar(&c.AllowAnyKey, "allow-any-key", false, "let any public key connect (watchers unless in --controllers)")
	fs.StringVar(&c.Controllers, "controllers", "", "public keys (authorized_keys format) that may turn the knobs")
	fs.StringVar(&c.HostKeyPath, "host-key", filepath.Join(confDir, "infertop", "ssh_host_ed25519"), "the server's key, generated (ed25519) on first start and reused")
	fs.IntVar(&c.MaxSessions, "max-sessions", 16, "most sessions at once")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 10*time.Minute, "end a connection that sends and receives nothing for this long (0: never)")
	fs.BoolVar(&sf.local, "local", false, "show the dashboard on this terminal too, as a controller")
	fs.StringVar(&sf.logPath, "log", "", "write connection lines here instead of stderr (they would cross --local's dashboard)")
	fs.StringVar(&sf.reportDir, "report-dir", ".", "where a controller's s key writes the reports")
}

// runSSH is `infertop ssh`: one load, served to every session until a
// signal; with --local on this terminal too.
func (a *app) runSSH(args []string) error {
	fs := newFlagSet("ssh", sshSynopsis, a.stdout)
	f := addLoadFlags(fs)
	var sf sshFlags
	sf.add(fs)
	cf := addCompareFlags(fs, false)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	if sf.srv.MaxSessions < 1 || sf.srv.IdleTimeout < 0 {
		return usagef("--max-sessions must be at least 1 and --idle-timeout not negative")
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if err := runner.CheckDir(sf.reportDir); err != nil {
		return usagef("--report-dir: %v", err)
	}
	lp, err := cf.loadPlan(cfg, nil)
	if err != nil {
		return err
	}
	var term *os.File
	if sf.local {
		t, ok := a.stdout.(*os.File)
		if !ok || !isTerminal(t) {
			return usagef("--local needs a terminal")
		}
		term = t
	}
	logw, closeLog, err := a.sshLog(&sf)
	if err != nil {
		return err
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
	d := dashboardOptions{theme: f.theme, reportDir: sf.reportDir}
	c := sf.srv
	c.Log, c.Watch, c.Controller, c.Canary, c.View = logw, s.Sides()[0], s.Controller(), s.View().Canary, a.viewOptions(s, d)
	srv, err := sshserver.New(c)
	if err != nil {
		return sshError(err)
	}
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	fmt.Fprintf(logw, "infertop ssh: serving %s on %s (ssh -t -p %s HOST); Ctrl+C stops\n", s.What(), ln.Addr(), portOf(ln.Addr()))
	return a.serveSSH(ctx, srv, ln, s, term, d)
}

// sshLog is where the connection lines go: --log, else stderr, or
// nowhere beside --local's dashboard.
func (a *app) sshLog(sf *sshFlags) (io.Writer, func(), error) {
	switch {
	case sf.logPath != "":
		fh, err := os.OpenFile(sf.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, usagef("--log: %v", err)
		}
		return fh, func() { fh.Close() }, nil
	case sf.local:
		return io.Discard, func() {}, nil
	}
	return a.stderr, func() {}, nil
}

// serveSSH serves srv on ln until ctx ends (a signal) and, with term (--local),
// shows the dashboard there too; then the load's last word.
func (a *app) serveSSH(ctx context.Context, srv *sshserver.Server, ln net.Listener, s session.Session, term *os.File, d dashboardOptions) error {
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
		who := fmt.Sprintf("%d other sessions still watch", n)
		if n == 1 {
			who = "1 other session still watches"
		}
		fmt.Fprintf(a.stderr, "infertop ssh: your dashboard is closed; %s %s. Ctrl+C stops the server.\n", who, ln.Addr())
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

// sshError names the flag behind an error of the SSH server's set-up.
func sshError(err error) error {
	for _, m := range []struct {
		err  error
		flag string
	}{{sshserver.ErrAuthorizedKeys, "--authorized-keys"}, {sshserver.ErrControllers, "--controllers"}, {sshserver.ErrHostKey, "--host-key"}} {
		if errors.Is(err, m.err) {
			return usagef("%s: %v", m.flag, err)
		}
	}
	return usageError{err}
}

func portOf(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return port
}
