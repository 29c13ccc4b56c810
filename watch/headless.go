package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/net/netutil"

	"github.com/infertop/infertop/crash"
)

// ErrNeverRead is a watch that ended before its first read of the fleet.
var ErrNeverRead = errors.New("the fleet was never read")

// Follow reads the snapshots until the watch ends: a progress line to
// logf every `every` (0: none), and with failFast stop at the first
// regressed verdict.
func (w *Watch) Follow(every time.Duration, failFast bool, logf func(string, ...any), stop func()) {
	snaps, unsubscribe := w.Subscribe()
	defer unsubscribe()
	var last time.Time
	for s := range snaps {
		if every > 0 && s.At.Sub(last) >= every {
			last = s.At
			logf("watch: %s", Progress(s))
		}
		if failFast && s.Verdict.State == Regressed {
			logf("watch: --fail-fast: %s", s.Verdict.Line)
			stop()
		}
	}
}

// Conclude writes the last snapshot as text to out and, where a path is
// given, as JSON and as an HTML page; it returns the snapshot, whose
// verdict the caller turns into an exit code.
//
// Call it once the watch has run and any probe has stopped.
func (w *Watch) Conclude(out io.Writer, jsonPath, htmlPath string) (Snapshot, error) {
	s, ok := w.Latest()
	if !ok {
		return s, ErrNeverRead
	}
	// The probe's last word: it has stopped by now (its requests counted
	// to the end), where the last look read it still running.
	if w.cfg.Probe != nil {
		if p, ok := w.cfg.Probe(); ok {
			s.Probe = &p
		}
	}
	if err := Text(out, s); err != nil {
		return s, err
	}
	if jsonPath != "" {
		b, err := JSON(s)
		if err == nil {
			err = os.WriteFile(jsonPath, b, 0o644)
		}
		if err != nil {
			return s, fmt.Errorf("--json: %w", err)
		}
	}
	if htmlPath != "" {
		var b bytes.Buffer
		err := HTML(&b, s, w.History())
		if err == nil {
			err = os.WriteFile(htmlPath, b.Bytes(), 0o644)
		}
		if err != nil {
			return s, fmt.Errorf("--html: %w", err)
		}
	}
	return s, nil
}

// The bounds of the --serve door, open to whoever reaches it: 15,000
// connections that each asked once and then kept silent were held for
// ever, 326 MB. A rollout tool asks every few seconds on one or two.
const (
	// maxServeConns is the most connections served at once; the next
	// wait in the kernel's queue until one closes.
	maxServeConns = 64
	// serveIdle closes a connection that asks nothing for this long.
	serveIdle = 30 * time.Second
)

// Serve serves Handler (/verdict, /snapshot, /metrics) on ln; the
// returned function stops it, giving answers in flight a second.
func (w *Watch) Serve(ln net.Listener) (stop func()) {
	ln = netutil.LimitListener(ln, maxServeConns)
	srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: serveIdle, MaxHeaderBytes: 16 << 10}
	done := make(chan struct{})
	go func() { defer close(done); defer crash.Recover(); _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}
