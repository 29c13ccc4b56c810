package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/door"
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

// Serve serves Handler (/verdict, /snapshot, /metrics) on ln; the
// returned function stops it, giving answers in flight a second.
func (w *Watch) Serve(ln net.Listener) (stop func()) {
	ln = door.Limit(ln) // open to anyone: bounded
	srv := door.Server(w.Handler())
	done := make(chan struct{})
	go func() { defer close(done); defer crash.Recover(); _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}
