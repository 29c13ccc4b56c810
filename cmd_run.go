package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/ui"
)

const runSynopsis = `Usage: infertop run [flags]

The same engine and flags as the dashboard, headless: runs until --duration or
--requests (or the end of --stages/--ramp, or SIGINT/SIGTERM), lets the
requests in flight finish (--drain), then prints a summary to stdout and
writes the reports asked for. A second signal stops at once. Exit code 0
when every --slo held, 1 when one was breached, 2 for bad usage or an
endpoint unreachable from the start.

With --find-max it searches instead for the highest load at which every
objective holds (see "Finding the capacity" in the README): exit code 0
when a load was found, 1 when even the lowest step broke.`

// runFlags are the headless run's own flags.
type runFlags struct {
	progressEvery, sloWindow       time.Duration
	jsonPath, csvPath, requestsLog string
	htmlPath                       string
	failFast                       bool
}

func (r *runFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&r.progressEvery, "progress-every", 10*time.Second, "a progress line this often on stderr when it is not a terminal")
	fs.StringVar(&r.jsonPath, "json", "", "write the whole result as JSON (vLLM's keys plus infertop's) to this file")
	fs.StringVar(&r.csvPath, "csv", "", "write one row per phase to this CSV file")
	fs.StringVar(&r.htmlPath, "html", "", "write the result as one self-contained HTML page (charts, summary) to this file")
	fs.StringVar(&r.requestsLog, "requests-log", "", "write one JSON line per request to this file, as they finish")
	fs.DurationVar(&r.sloWindow, "slo-window", load.DefaultWindow, "window the SLOs are checked over while running (10s..5m)")
	fs.BoolVar(&r.failFast, "fail-fast", false, "end the run at the first full --slo-window that breaks an SLO")
}

// runHeadless is `infertop run`: it follows a runner to the end of the run
// (progress lines, fail-fast), then reports and sets the exit code.
func (a *app) runHeadless(args []string) error {
	fs := newFlagSet("run", runSynopsis, a.stdout)
	f := addLoadFlags(fs)
	var rf runFlags
	rf.add(fs)
	cf := addCompareFlags(fs, true)
	var capf capacityFlags
	capf.add(fs)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	switch {
	case rf.sloWindow < 10*time.Second || rf.sloWindow > 5*time.Minute:
		return usagef("--slo-window must be within 10s..5m, got %v", rf.sloWindow)
	case rf.failFast && len(f.slos) == 0 && len(cf.regressions) == 0:
		return usagef("--fail-fast needs at least one --slo (or, with --compare or --split-by, a --regression)")
	case rf.progressEvery <= 0:
		return usagef("--progress-every must be positive")
	}
	f.cfg.Load.Window = rf.sloWindow // the window is the SLOs' window here
	cfg, err := f.config()
	if err != nil {
		return err
	}
	cfg.RequestsLog = rf.requestsLog
	plan, err := capf.plan(fs, f, &rf, &cfg)
	if err != nil {
		return err
	}
	if err := runner.CheckOutputs(map[string]string{"--json": rf.jsonPath, "--csv": rf.csvPath, "--requests-log": rf.requestsLog, "--html": rf.htmlPath}); err != nil {
		return usageError{err}
	}
	// A walk ends the run when it is over, unless a duration or a request
	// count says how long to hold the last stage.
	cfg.Load.EndAfterStages = cfg.Load.Duration == 0 && cfg.Load.MaxRequests == 0
	if cf.used() {
		if plan != nil {
			return usagef("--find-max and --matrix do not work with --compare yet")
		}
		return a.runCompare(cfg, &rf, cf)
	}

	r, sigs, stopSignals, err := underSignals(func(ctx context.Context) (*runner.Runner, error) { return a.start(ctx, cfg) })
	if err != nil {
		return err
	}
	defer stopSignals()
	defer r.Stop()
	if plan != nil {
		return a.runCapacity(r, plan, &rf, sigs)
	}
	breaches, final := a.follow(r, &rf, sigs)
	if err := r.Stop(); err != nil {
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
	}
	if final.Seq < r.Engine().Latest().Seq {
		final = r.Engine().Latest()
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	rep := r.Report(rctx, final)
	rep.Verdicts = append(rep.Verdicts, breaches...)
	if err := rep.WriteText(a.stdout); err != nil {
		return err
	}
	if err := runner.Write(rep, runner.Outputs{JSON: rf.jsonPath, CSV: rf.csvPath, HTML: rf.htmlPath}); err != nil {
		return err
	}
	if err := allFailed(final); err != nil { // nothing worked: say the first reason
		return err
	}
	if !report.Held(rep.Verdicts) {
		var broken []string
		for _, v := range rep.Verdicts {
			if !v.Held {
				broken = append(broken, v.Expr+" in "+v.Scope)
			}
		}
		return exitError{1, fmt.Errorf("SLO breached: %s", strings.Join(broken, "; "))}
	}
	return nil
}

// follow reads the runner's snapshots until the run is done (the engine
// says so) or a second signal stops it: progress lines on stderr, and with
// --fail-fast the first full window that breaks an SLO ends the run. It
// returns those windows' breaches and the last snapshot.
func (a *app) follow(r *runner.Runner, rf *runFlags, sigs <-chan os.Signal) ([]slo.Verdict, load.Snapshot) {
	eng := r.Engine()
	snaps, unsubscribe := r.Subscribe()
	defer unsubscribe()
	live := isTerminal(a.stderr)
	var breaches []slo.Verdict
	var last load.Snapshot
	lastProgress := time.Now()
	said := false
	for {
		select {
		case <-sigs:
			if last.Ending() {
				fmt.Fprintf(a.stderr, "\ninfertop: stopped: %d requests in flight cancelled\n", last.InFlight)
				return breaches, last
			}
			eng.Finish(load.EndInterrupted)
		case s, ok := <-snaps:
			if !ok {
				return breaches, last
			}
			last = s
			if s.Ending() && !said {
				said = true
				if live {
					fmt.Fprint(a.stderr, "\r\033[K")
				}
				fmt.Fprintf(a.stderr, "infertop: run ended: %s\n", s.DoneWhy)
			}
			if s.Done {
				if live {
					fmt.Fprint(a.stderr, "\r\033[K")
				}
				return breaches, s
			}
			if b := windowBreaches(r, s, rf); len(b) > 0 {
				breaches = append(breaches, b...)
				eng.Finish("an SLO broke (--fail-fast)")
			}
			switch {
			case live:
				fmt.Fprintf(a.stderr, "\r\033[K%s", progressLine(s))
			case time.Since(lastProgress) >= rf.progressEvery:
				fmt.Fprintln(a.stderr, progressLine(s))
				lastProgress = time.Now()
			}
		}
	}
}

// windowBreaches are the SLOs s's window breaks, with --fail-fast once
// the window is full (the run has lasted one, and the window holds all of
// it but the second now filling); none without, or while the run ends.
func windowBreaches(r *runner.Runner, s load.Snapshot, rf *runFlags) []slo.Verdict {
	if !rf.failFast || s.Ending() || s.Elapsed < rf.sloWindow || s.Covered <= rf.sloWindow-time.Second {
		return nil
	}
	var out []slo.Verdict
	for _, v := range r.Check(s, "window ending "+s.Elapsed.Round(time.Second).String()) {
		if !v.Held {
			out = append(out, v)
		}
	}
	return out
}

// underSignals starts a headless run's load: a SIGINT or SIGTERM during
// start ends the start (its context); once started, the follower reads
// sigs (the first ends the run with a drain, a second stops it), until
// stop.
func underSignals[T any](start func(context.Context) (T, error)) (v T, sigs <-chan os.Signal, stop func(), err error) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	v, err = start(ctx)
	cancel()
	if err != nil {
		signal.Stop(ch)
		return v, nil, func() {}, err
	}
	return v, ch, func() { signal.Stop(ch) }, nil
}

func progressLine(s load.Snapshot) string {
	line := fmt.Sprintf("%s  %d ok %d failed  in flight %d  %.1f req/s  %.0f tok/s  TTFT p50 %s p99 %s  E2E p99 %s",
		ui.Duration(s.Elapsed), s.TotalCompleted, s.TotalFailed, s.InFlight, s.ReqPerSec, s.OutTokPerSec,
		ui.Duration(s.Latency[load.TTFT].P50), ui.Duration(s.Latency[load.TTFT].P99), ui.Duration(s.Latency[load.E2E].P99))
	if s.Ending() {
		line += "  (ending: draining)"
	}
	return line
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
