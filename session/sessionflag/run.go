package sessionflag

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
)

// Run binds a headless run's own flags: its progress line, the files it
// writes, the window its SLOs are checked over and the fail-fast gate,
// and how long its metrics stay served.
type Run struct {
	ProgressEvery, SLOWindow     time.Duration
	JSON, CSV, HTML, RequestsLog string
	FailFast                     bool
	MetricsLinger                time.Duration
}

// AddRun binds a headless run's flags to fs.
func AddRun(fs *pflag.FlagSet) *Run {
	defer flaghelp.Group(fs, "Reports and gates")()
	r := &Run{}
	fs.DurationVar(&r.ProgressEvery, "progress-every", 10*time.Second, "a progress line this often on stderr when it is not a terminal")
	fs.StringVar(&r.JSON, "json", "", "write the whole result as JSON (vLLM's keys plus infertop's) to this file")
	fs.StringVar(&r.CSV, "csv", "", "write one row per phase to this CSV file")
	fs.StringVar(&r.HTML, "html", "", "write the result as one self-contained HTML page (charts, summary) to this file")
	fs.StringVar(&r.RequestsLog, "requests-log", "", "write one JSON line per request to this file, as they finish")
	fs.DurationVar(&r.SLOWindow, "slo-window", load.DefaultWindow, "window the SLOs are checked over while running (10s..5m)")
	fs.BoolVar(&r.FailFast, "fail-fast", false, "end the run at the first full --slo-window that breaks an SLO")
	fs.DurationVar(&r.MetricsLinger, "metrics-linger", 15*time.Second, "with --metrics-addr: keep serving the final metrics this long after the reports, for a last scrape (0: none; a signal ends it)")
	// A follower of agents writes and gates the merged run as one
	// machine's.
	flaghelp.Follower(fs, "progress-every", "json", "csv", "html", "slo-window", "fail-fast")
	return r
}

// Check checks the run's flags; gated says whether the run has an
// objective or a regression for --fail-fast to end it by.
func (r *Run) Check(gated bool) error {
	switch {
	case r.SLOWindow < 10*time.Second || r.SLOWindow > 5*time.Minute:
		return fmt.Errorf("--slo-window must be within 10s..5m, got %v", r.SLOWindow)
	case r.FailFast && !gated:
		return errors.New("--fail-fast needs at least one --slo (or, with --compare or --split-by, a --regression)")
	case r.ProgressEvery <= 0:
		return errors.New("--progress-every must be positive")
	case r.MetricsLinger < 0:
		return fmt.Errorf("--metrics-linger must not be negative, got %v", r.MetricsLinger)
	}
	return nil
}

// Outputs are the files the run writes at its end.
func (r *Run) Outputs() runner.Outputs {
	return runner.Outputs{JSON: r.JSON, CSV: r.CSV, HTML: r.HTML}
}

// CheckOutputs checks that the run's files can be written, and a pair's
// canary's requests log (canaryLog, "" for none) beside them.
func (r *Run) CheckOutputs(canaryLog string) error {
	outs := map[string]string{"--json": r.JSON, "--csv": r.CSV, "--requests-log": r.RequestsLog, "--html": r.HTML}
	if canaryLog != "" {
		outs["--requests-log (the canary's)"] = canaryLog
	}
	return runner.CheckOutputs(outs)
}

// Follower is the run's follower: its progress on stderr (a live line
// when live, a terminal), its gate, the signals that end it.
func (r *Run) Follower(stderr io.Writer, live bool, sigs <-chan os.Signal) *session.Follower {
	return &session.Follower{Stderr: stderr, Live: live, ProgressEvery: r.ProgressEvery,
		Gate: session.Gate{On: r.FailFast, Window: r.SLOWindow}, Signals: sigs}
}

// Linger keeps infertop's own metrics at addr served for --metrics-linger
// once the run is over, its reports written and its exit code decided,
// so that a Prometheus scraping every 15 s reads the final counts; a
// signal ends it. It says so on stderr.
func (r *Run) Linger(stderr io.Writer, sigs <-chan os.Signal, addr string) {
	fmt.Fprintf(stderr, "infertop: serving the final metrics at %s for %v (--metrics-linger); a signal ends it\n", addr, r.MetricsLinger)
	t := time.NewTimer(r.MetricsLinger)
	defer t.Stop()
	select {
	case <-sigs:
	case <-t.C:
	}
}
