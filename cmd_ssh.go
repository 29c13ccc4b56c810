package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/sshserver"
	"github.com/infertop/infertop/ui"
)

const sshSynopsis = `Usage: infertop ssh [flags]

Serves the dashboard over SSH: one load on the endpoint, a view of it for
every session, sized and coloured for its own terminal. Keys in
--authorized-keys may connect (no passwords); keys in --controllers turn the
knobs, every other session watches. For a room:

  infertop ssh --listen 0.0.0.0:2222 --allow-any-key --controllers ~/.ssh/id_ed25519.pub --local
  ssh -t -p 2222 demo-host            (everyone else; add theme=light after the host for a light theme)`

// runSSH is `infertop ssh`.
func runSSH(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ssh", sshSynopsis, stdout)
	var f loadFlags
	f.add(fs)
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
	sf := addSimFlags(fs, "sim-")
	if done, err := f.parseLoad(fs, args, stdout); done || err != nil {
		return err
	}
	if *maxSessions < 1 || *idle < 0 {
		return usagef("--max-sessions must be at least 1 and --idle-timeout not negative")
	}
	var term *os.File
	if *local {
		t, ok := stdout.(*os.File)
		if !ok || !isTerminal(t) {
			return usagef("--local needs a terminal")
		}
		term = t
	}
	logw := stderr
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

	var guard *terminalGuard
	if *local {
		guard = guardTerminal(term, stderr)
		defer crash.Handle(nil)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	st, eng, sc, stopLive, err := f.live(ctx, sf, stderr)
	if err != nil {
		return err
	}
	defer stopLive()
	save := f.saver(ctx, st, sc, *reportDir)
	srv, err := sshserver.New(sshserver.Config{
		HostKeyPath: *hostKey, AuthorizedKeys: *authorized, AllowAnyKey: *anyKey, Controllers: *controllers,
		MaxSessions: *maxSessions, IdleTimeout: *idle, Theme: f.theme, Log: logw, Engine: eng, Telemetry: telemetryView(sc),
		Objectives: f.objectives, Duration: f.duration, Requests: f.requests, Save: save,
	})
	if err != nil {
		return usageError{err}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvCtx, ln) }()
	fmt.Fprintf(logw, "infertop ssh: serving %s on %s (ssh -t -p %s HOST); Ctrl+C stops\n", st.target.URL, ln.Addr(), portOf(ln.Addr()))

	if *local {
		snaps, unsubscribe := eng.Subscribe()
		defer unsubscribe()
		model, err := ui.New(eng, ui.Options{Renderer: lipgloss.NewRenderer(term), Theme: f.theme, Snapshots: snaps,
			Objectives: f.objectives, Save: save, Telemetry: telemetryView(sc), Duration: f.duration, Requests: f.requests})
		if err != nil {
			stopServer()
			<-served
			return usageError{err}
		}
		err = guard.run(tea.NewProgram(model, tea.WithAltScreen(), tea.WithOutput(term), tea.WithContext(ctx), tea.WithoutCatchPanics()))
		stopServer()
		if serr := <-served; serr != nil {
			return serr
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		return nil
	}
	<-ctx.Done()
	stopServer()
	return <-served
}

func portOf(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return port
}
