package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/sshserver"
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
comparison's table is printed.`

// runSSH is `infertop ssh`.
func (a *app) runSSH(args []string) error {
	fs := newFlagSet("ssh", sshSynopsis, a.stdout)
	f := addLoadFlags(fs)
	home, _ := os.UserHomeDir()
	confDir, err := os.UserConfigDir()
	if err != nil {
		confDir = filepath.Join(home, ".config")
	}
	listen := fs.String("listen", "127.0.0.1:2222", "address to serve SSH on")
	authorized := fs.String("authorized-keys", filepath.Join(home, ".ssh", "authorized_keys"), "public keys that may connect")
	anyKey := fs.Bool("allow-any-key", false, "let any public key connect (watchers unless in --controllers)")
	controllers := fs.String("controllers", "", "public keys (authorized_keys format) that may turn the knobs")
	hostKey := fs.String("host-key", filepath.Join(confDir, "infertop", "ssh_host_ed25519"), "the server's key, generated (ed25519) on first start and reused")
	maxSessions := fs.Int("max-sessions", 16, "most sessions at once")
	idle := fs.Duration("idle-timeout", 30*time.Minute, "end a session that sends nothing for this long (0: never)")
	local := fs.Bool("local", false, "show the dashboard on this terminal too, as a controller")
	logPath := fs.String("log", "", "write connection lines here instead of stderr (they would cross --local's dashboard)")
	reportDir := fs.String("report-dir", ".", "where a controller's s key writes the reports")
	cf := addCompareFlags(fs, false)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	if *maxSessions < 1 || *idle < 0 {
		return usagef("--max-sessions must be at least 1 and --idle-timeout not negative")
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	sc, err := cf.servedConfig(cfg)
	if err != nil {
		return err
	}
	var term *os.File
	if *local {
		t, ok := a.stdout.(*os.File)
		if !ok || !isTerminal(t) {
			return usagef("--local needs a terminal")
		}
		term = t
	}
	logw := a.stderr
	switch {
	case *logPath != "":
		fh, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return usagef("--log: %v", err)
		}
		defer fh.Close()
		logw = fh
	case *local:
		logw = io.Discard
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ld, err := a.startServed(ctx, sc)
	if err != nil {
		return err
	}
	defer ld.stop()
	v := ld.view(f.theme, *reportDir)
	srv, err := sshserver.New(sshserver.Config{
		HostKeyPath: *hostKey, AuthorizedKeys: *authorized, AllowAnyKey: *anyKey, Controllers: *controllers,
		MaxSessions: *maxSessions, IdleTimeout: *idle, Log: logw,
		Engine: ld.run.Engine(), Controller: v.ctl, Canary: v.canary, View: v.opts,
	})
	if err != nil {
		return sshError(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	serveErr := make(chan error, 1)
	go func() { defer crash.Recover(); serveErr <- srv.Serve(srvCtx, ln) }()
	fmt.Fprintf(logw, "infertop ssh: serving %s on %s (ssh -t -p %s HOST); Ctrl+C stops\n", ld.what(), ln.Addr(), portOf(ln.Addr()))
	if !*local {
		<-ctx.Done()
		stopServer()
		if err := <-serveErr; err != nil {
			return err
		}
		return a.lastWord(ld)
	}
	guard := termguard.Install(term, a.stderr)
	defer crash.Handle(nil)
	p, done, err := a.dashboard(ctx, ld, term, f.theme, *reportDir)
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
	return a.lastWord(ld)
}

// lastWord stops the load once the server has and prints a comparison's
// table on stdout, as the local dashboards do at q: the sessions that
// showed the verdict are gone, and the table is what is left of it.
func (a *app) lastWord(ld served) error {
	if err := ld.stop(); err != nil {
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
	}
	return ld.writeComparison(a.stdout)
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
