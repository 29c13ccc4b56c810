package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/fleet"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
)

const runSynopsis = `Usage: infertop run [flags]

The same engine and flags as the dashboard, headless: runs until --duration or
--requests (or the end of --stages/--ramp, or SIGINT/SIGTERM), lets the
requests in flight finish (--drain), then prints a summary to stdout and
writes the reports asked for. A second signal stops at once. Exit code 0
when every --slo held, 1 when one was breached, 2 for bad usage, an
endpoint unreachable from the start, or a run where nothing completed.

With --find-max it searches instead for the highest load at which every
objective holds (see "Finding the capacity" in the README): exit code 0
when a load was found, 1 when even the lowest step broke.`

// runFlags are the headless run's own flags.
type runFlags struct {
	progressEvery, sloWindow       time.Duration
	jsonPath, csvPath, requestsLog string
	htmlPath                       string
	failFast                       bool
	metricsLinger                  time.Duration
}

func (r *runFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&r.progressEvery, "progress-every", 10*time.Second, "a progress line this often on stderr when it is not a terminal")
	fs.StringVar(&r.jsonPath, "json", "", "write the whole result as JSON (vLLM's keys plus infertop's) to this file")
	fs.StringVar(&r.csvPath, "csv", "", "write one row per phase to this CSV file")
	fs.StringVar(&r.htmlPath, "html", "", "write the result as one self-contained HTML page (charts, summary) to this file")
	fs.StringVar(&r.requestsLog, "requests-log", "", "write one JSON line per request to this file, as they finish")
	fs.DurationVar(&r.sloWindow, "slo-window", load.DefaultWindow, "window the SLOs are checked over while running (10s..5m)")
	fs.BoolVar(&r.failFast, "fail-fast", false, "end the run at the first full --slo-window that breaks an SLO")
	fs.DurationVar(&r.metricsLinger, "metrics-linger", 15*time.Second, "with --metrics-addr: keep serving the final metrics this long after the reports, for a last scrape (0: none; a signal ends it)")
}

// check checks the run's flags against the rest.
func (r *runFlags) check(f *loadFlags, cf *compareFlags) error {
	switch {
	case r.sloWindow < 10*time.Second || r.sloWindow > 5*time.Minute:
		return usagef("--slo-window must be within 10s..5m, got %v", r.sloWindow)
	case r.failFast && len(f.slos) == 0 && len(cf.regressions) == 0:
		return usagef("--fail-fast needs at least one --slo (or, with --compare or --split-by, a --regression)")
	case r.progressEvery <= 0:
		return usagef("--progress-every must be positive")
	case r.metricsLinger < 0:
		return usagef("--metrics-linger must not be negative, got %v", r.metricsLinger)
	}
	return nil
}

// outputs are the files the run writes at its end.
func (r *runFlags) outputs() runner.Outputs {
	return runner.Outputs{JSON: r.jsonPath, CSV: r.csvPath, HTML: r.htmlPath}
}

// runHeadless is `infertop run`: the load of whichever kind the flags
// ask for, followed to its end (session.Follower), then its outcome
// (session.End) printed and written, and its exit code.
func (a *app) runHeadless(args []string) error {
	fs := newFlagSet("run", runSynopsis, a.stdout)
	f := addLoadFlags(fs)
	var rf runFlags
	rf.add(fs)
	cf := addCompareFlags(fs, true)
	var capf capacityFlags
	capf.add(fs)
	var agf fleet.Flags
	agf.Add(fs)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	if err := agf.Check(fs); err != nil {
		return usageError{err}
	} else if agf.On() {
		return a.runAgents(fs, f, &rf, &agf)
	}
	if err := rf.check(f, cf); err != nil {
		return err
	}
	lp, err := a.headlessPlan(fs, f, &rf, cf, &capf)
	if err != nil {
		return err
	}
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	s, err := a.startUnder(sigs, lp)
	if err != nil {
		return err
	}
	defer s.Stop()
	defer s.Release()
	fl := session.Follower{Stderr: a.stderr, Live: isTerminal(a.stderr), ProgressEvery: rf.progressEvery,
		Gate: session.Gate{On: rf.failFast, Window: rf.sloWindow}, Signals: sigs}
	fo := fl.Follow(s)
	err = a.conclude(session.End(s, fo, a.reportTimeout), rf.outputs())
	if lp.holdsMetrics() && fo.Signals < 2 {
		a.linger(sigs, rf.metricsLinger, lp.metricsAddr())
	}
	return err
}

// linger keeps infertop's own metrics served for d once the run is over,
// its reports written and its exit code decided, so that a Prometheus
// scraping every 15 s reads the final counts; a signal ends it.
func (a *app) linger(sigs <-chan os.Signal, d time.Duration, addr string) {
	fmt.Fprintf(a.stderr, "infertop: serving the final metrics at %s for %v (--metrics-linger); a signal ends it\n", addr, d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-sigs:
	case <-t.C:
	}
}

// headlessPlan is the load a headless run's flags describe, checked,
// with its outputs.
func (a *app) headlessPlan(fs *pflag.FlagSet, f *loadFlags, rf *runFlags, cf *compareFlags, capf *capacityFlags) (loadPlan, error) {
	if fs.Changed("window") { // the dashboard's window, which is the SLOs' here
		w := f.cfg.Load.Window
		switch {
		case fs.Changed("slo-window") && rf.sloWindow != w:
			return loadPlan{}, usagef("--window and --slo-window are one window in a headless run: give one")
		case !slices.Contains(load.Windows(), w):
			var names []string
			for _, d := range load.Windows() {
				if d%time.Minute == 0 {
					names = append(names, fmt.Sprintf("%dm", d/time.Minute))
				} else {
					names = append(names, fmt.Sprintf("%ds", d/time.Second))
				}
			}
			return loadPlan{}, usagef("--window: %v is not one of %s (a headless run checks its SLOs over any --slo-window of 10s..5m)", w, strings.Join(names, ", "))
		}
		rf.sloWindow = w
	}
	f.cfg.Load.Window = rf.sloWindow // the window is the SLOs' window here
	cfg, err := f.config()
	if err != nil {
		return loadPlan{}, err
	}
	cfg.RequestsLog = rf.requestsLog
	cfg.HoldMetrics = cfg.MetricsAddr != "" && rf.metricsLinger > 0
	search, err := capf.plan(fs, f, rf, &cfg)
	if err != nil {
		return loadPlan{}, err
	}
	outs := map[string]string{"--json": rf.jsonPath, "--csv": rf.csvPath, "--requests-log": rf.requestsLog, "--html": rf.htmlPath}
	// A walk ends the run when it is over, unless a duration or a request
	// count says how long to hold the last stage.
	cfg.Load.EndAfterStages = cfg.Load.Duration == 0 && cfg.Load.MaxRequests == 0
	lp, err := cf.loadPlan(cfg, search)
	if err != nil {
		return loadPlan{}, err
	}
	if lp.pair != nil {
		lp.pair.CanaryRequestsLog = session.CanaryPath(rf.requestsLog)
		outs["--requests-log (the canary's)"] = lp.pair.CanaryRequestsLog
	}
	if err := runner.CheckOutputs(outs); err != nil {
		return loadPlan{}, usageError{err}
	}
	return lp, nil
}

// startUnder starts lp's load: a signal on sigs during the start ends
// the start (its context); once started, the follower reads them.
func (a *app) startUnder(sigs <-chan os.Signal, lp loadPlan) (session.Session, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	defer close(started)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-started:
		}
	}()
	return a.start(ctx, lp)
}

// conclude prints a run's outcome and writes its files, and ends with its
// exit code.
func (a *app) conclude(o session.Outcome, outs runner.Outputs) error {
	if o.StopErr != nil {
		a.note(o.StopErr)
	}
	if _, err := a.stdout.Write(o.Text); err != nil {
		return err
	}
	if len(o.Reports) > 0 {
		if err := runner.Write(o.Reports[0], outs); err != nil {
			return err
		}
	}
	switch o.Code {
	case session.ExitOK:
		return nil
	case session.ExitNothingWorked:
		return usageError{o.Err}
	}
	return exitError{o.Code, o.Err}
}

// note prints a line on stderr that ends nothing.
func (a *app) note(err error) {
	io.WriteString(a.stderr, "infertop: "+err.Error()+"\n")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
