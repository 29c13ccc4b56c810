package main

import (
	"context"
	"errors"
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
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/slo"
)

const runSynopsis = `Usage: infertop run [flags]

The same engine and flags as the dashboard, headless: runs until --duration or
--requests (or SIGINT/SIGTERM), then prints a summary to stdout and writes the
reports asked for. Exit code 0 when every --slo held, 1 when one was breached,
2 for bad usage or an endpoint unreachable from the start.`

// exitError ends a command with a given exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// runFlags are the headless run's own flags.
type runFlags struct {
	progressEvery, sloWindow       time.Duration
	jsonPath, csvPath, requestsLog string
	failFast                       bool
}

func (r *runFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&r.progressEvery, "progress-every", 10*time.Second, "a progress line this often on stderr when it is not a terminal")
	fs.StringVar(&r.jsonPath, "json", "", "write the whole result as JSON (vLLM's keys plus infertop's) to this file")
	fs.StringVar(&r.csvPath, "csv", "", "write one row per phase to this CSV file")
	fs.StringVar(&r.requestsLog, "requests-log", "", "write one JSON line per request to this file, as they finish")
	fs.DurationVar(&r.sloWindow, "slo-window", 30*time.Second, "window the SLOs are checked over while running (10s..5m)")
	fs.BoolVar(&r.failFast, "fail-fast", false, "end the run at the first full --slo-window that breaks an SLO")
}

// runHeadless is `infertop run`.
func runHeadless(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", runSynopsis, stdout)
	var f loadFlags
	f.add(fs)
	var rf runFlags
	rf.add(fs)
	sf := addSimFlags(fs, "sim-")
	if done, err := f.parseLoad(fs, args, stdout); done || err != nil {
		return err
	}
	objectives := f.objectives
	switch {
	case rf.sloWindow < 10*time.Second || rf.sloWindow > 5*time.Minute:
		return usagef("--slo-window must be within 10s..5m, got %v", rf.sloWindow)
	case rf.failFast && len(objectives) == 0:
		return usagef("--fail-fast needs at least one --slo")
	case rf.progressEvery <= 0:
		return usagef("--progress-every must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	st, err := f.setup(ctx, sf, stderr)
	if err != nil {
		return err
	}
	defer st.stop()

	var reqLog *report.RequestsLog
	var logHook func(load.Record)
	if rf.requestsLog != "" {
		if reqLog, err = report.OpenRequestsLog(rf.requestsLog); err != nil {
			return usageError{err}
		}
		logHook = reqLog.Write
	}
	xctx, stopExporter := context.WithCancel(context.Background())
	defer stopExporter()
	x, xDone, err := f.startExporter(xctx)
	if err != nil {
		return err
	}
	var observe func(load.Record)
	if x != nil {
		observe = x.Observe
		defer func() { stopExporter(); <-xDone }()
	}
	manifest := f.manifest(ctx, st)

	cfg := f.engineConfig(st, rf.sloWindow)
	cfg.OnResult = chain(logHook, observe)
	eng, err := load.New(cfg)
	if err != nil {
		return usageError{err}
	}
	engCtx, stopEngine := context.WithCancel(context.Background())
	sc := f.scraper(st)
	scDone := make(chan struct{})
	if sc != nil {
		go func() { defer close(scDone); sc.Run(engCtx) }()
	} else {
		close(scDone)
	}
	engDone := make(chan error, 1)
	manifest.Start = time.Now()
	go func() { engDone <- eng.Run(engCtx) }()
	snaps, unsubscribe := eng.Subscribe()

	live := isTerminal(stderr)
	var windowBreaches []slo.Verdict
	var deadline <-chan time.Time
	if f.duration > 0 {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		deadline = t.C
	}
	// A walk (--stages, --ramp) ends the run when it is over, unless a
	// duration or a request count says how long to hold the last stage.
	var walked chan error
	var walkDone <-chan error
	if len(f.walk) > 0 {
		walked = make(chan error, 1)
		go func() { walked <- eng.Walk(engCtx, f.walk) }()
		if f.duration == 0 && f.requests == 0 {
			walkDone = walked
		}
	}
	lastProgress := time.Now()
	why := "interrupted"
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline:
			why = "duration reached"
			break loop
		case <-walkDone:
			why, walkDone, walked = "the last stage ended", nil, nil
			break loop
		case s, ok := <-snaps:
			if !ok {
				break loop
			}
			if x != nil {
				x.Update(s)
			}
			if f.requests > 0 && s.Finished() >= f.requests {
				why = "requests reached"
				break loop
			}
			if rf.failFast && s.Covered >= rf.sloWindow-time.Second {
				scope := "window ending " + s.Elapsed.Round(time.Second).String()
				for _, v := range slo.CheckAll(objectives, windowFigures(s, sc), scope) {
					if !v.Held {
						windowBreaches = append(windowBreaches, v)
					}
				}
				if len(windowBreaches) > 0 {
					why = "an SLO broke (--fail-fast)"
					break loop
				}
			}
			switch {
			case live:
				fmt.Fprintf(stderr, "\r\033[K%s", progressLine(s))
			case time.Since(lastProgress) >= rf.progressEvery:
				fmt.Fprintln(stderr, progressLine(s))
				lastProgress = time.Now()
			}
		}
	}
	unsubscribe()
	stopEngine()
	<-engDone
	<-scDone
	if walked != nil {
		<-walked
	}
	manifest.End = time.Now()
	if live {
		fmt.Fprint(stderr, "\r\033[K")
	}
	fmt.Fprintf(stderr, "infertop: run ended: %s\n", why)
	final := eng.Latest()
	if reqLog != nil {
		if err := reqLog.Close(); err != nil {
			fmt.Fprintf(stderr, "infertop: %v\n", err)
		}
	}

	rep := &report.Report{Manifest: manifest, Final: final, Energy: report.EnergyOf(sc, manifest.Start, final)}
	rep.Verdicts = append(report.Verdicts(objectives, final, rep.Energy), windowBreaches...)
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if err := writeReports(rep, rf.jsonPath, rf.csvPath); err != nil {
		return err
	}
	if final.TotalCompleted == 0 && final.TotalFailed > 0 && final.TotalByClass[probe.Connection] == final.TotalFailed {
		return usagef("the endpoint was unreachable: %s", final.LastError)
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

// writeReports writes the JSON and CSV files asked for.
func writeReports(rep *report.Report, jsonPath, csvPath string) error {
	write := func(path string, fn func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		fh, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := fn(fh); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}
	return errors.Join(write(jsonPath, rep.WriteJSON), write(csvPath, rep.WriteCSV))
}

func progressLine(s load.Snapshot) string {
	return fmt.Sprintf("%s  %d ok %d failed  in flight %d  %.1f req/s  %.0f tok/s  TTFT p50 %s p99 %s  E2E p99 %s",
		s.Elapsed.Round(time.Second), s.TotalCompleted, s.TotalFailed, s.InFlight, s.ReqPerSec, s.OutTokPerSec,
		s.Latency[load.TTFT].P50.Round(time.Millisecond/10), s.Latency[load.TTFT].P99.Round(time.Millisecond/10),
		s.Latency[load.E2E].P99.Round(time.Millisecond))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
