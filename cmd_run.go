package main

import (
	"context"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity/capflag"
	"github.com/infertop/infertop/fleet/fleetflag"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
)

const runSynopsis = `Usage: infertop run [flags]

The same engine and flags as the dashboard, headless: runs until --duration or
--requests (or the end of --stages/--ramp, or SIGINT/SIGTERM), lets the
requests in flight finish (--drain), then prints a summary to stdout and
writes the reports asked for. A second signal stops at once. Exit code 0
when every --slo held, 1 when one was breached, 2 for bad usage, an
endpoint unreachable from the start, or a run where nothing completed.

With --find-max it searches instead for the highest load at which every
objective holds (see docs/guide/capacity.md): exit code 0
when a load was found, 1 when even the lowest step broke.`

// runHeadless is `infertop run`: the load of whichever kind the flags
// ask for, followed to its end (session.Follower), then its outcome
// (session.End) printed and written, and its exit code.
func (a *app) runHeadless(args []string) error {
	fs := newFlagSet("run", runSynopsis, a.stdout)
	f := addLoadFlags(fs)
	rf := sessionflag.AddRun(fs)
	cf := sessionflag.Add(fs, true)
	capf := capflag.Add(fs)
	agf := fleetflag.Add(fs)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	if err := rf.Check(len(f.slos) > 0 || cf.Regressions()); err != nil {
		return usageError{err}
	}
	if err := agf.Check(fs); err != nil {
		return usageError{err}
	}
	// The files given to flags are read before the signals are taken: a
	// signal during a long read ends the process, as it would any other.
	lp, err := a.headlessSpec(fs, f, rf, cf, capf, agf)
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
	defer session.Release(s)
	// Its progress under logf's lock: the agents' pollers log beside it.
	fo := rf.Follower(session.LockedWriter{Mu: &a.logMu, W: a.stderr}, isTerminal(a.stderr), sigs).Follow(s)
	err = a.conclude(session.End(s, fo, a.reportTimeout), rf.Outputs())
	if lp.Base().HoldMetrics && fo.Signals < 2 {
		rf.Linger(a.stderr, sigs, lp.Base().MetricsAddr)
	}
	return err
}

// headlessSpec is the load a headless run's flags describe: the agents'
// (--agents: their merge, searched where asked, each step split between
// them and their runs ended after it), or this machine's (headlessPlan).
func (a *app) headlessSpec(fs *pflag.FlagSet, f *loadFlags, rf *sessionflag.Run, cf *sessionflag.Flags, capf *capflag.Flags, agf *fleetflag.Flags) (session.Spec, error) {
	if !agf.On() {
		return a.headlessPlan(fs, f, rf, cf, capf)
	}
	if err := rf.CheckOutputs(""); err != nil {
		return session.Spec{}, usageError{err}
	}
	plan, err := agentsPlan(capf, f, rf)
	if err != nil {
		return session.Spec{}, err
	}
	ag, err := a.agentsSpec(f, agf, cf, false)
	if err != nil {
		return session.Spec{}, err
	}
	return session.Spec{Agents: ag, Search: plan}, nil
}

// headlessPlan is the load a headless run's flags describe, checked,
// with its outputs.
func (a *app) headlessPlan(fs *pflag.FlagSet, f *loadFlags, rf *sessionflag.Run, cf *sessionflag.Flags, capf *capflag.Flags) (session.Spec, error) {
	w, err := f.load.HeadlessWindow(rf.SLOWindow, fs.Changed("slo-window"))
	if err != nil {
		return session.Spec{}, usageError{err}
	}
	rf.SLOWindow = w
	f.window = w // the window is the SLOs' window here
	cfg, err := f.config()
	if err != nil {
		return session.Spec{}, err
	}
	cfg.RequestsLog = rf.RequestsLog
	cfg.HoldMetrics = cfg.MetricsAddr != "" && rf.MetricsLinger > 0
	var search *session.Plan // none for an agent (capf nil): its share is a plain load
	if capf != nil {
		if search, err = capacityPlan(fs, capf, f, rf, &cfg); err != nil {
			return session.Spec{}, err
		}
	}
	// A walk ends the run when it is over, unless a duration or a request
	// count says how long to hold the last stage.
	cfg.Load.EndAfterStages = cfg.Load.Duration == 0 && cfg.Load.MaxRequests == 0
	lp, err := cf.Spec(cfg, search)
	if err != nil {
		return session.Spec{}, usageError{err}
	}
	canaryLog := ""
	if lp.Pair != nil {
		canaryLog = session.CanaryPath(rf.RequestsLog)
		lp.Pair.CanaryRequestsLog = canaryLog
	}
	if err := rf.CheckOutputs(canaryLog); err != nil {
		return session.Spec{}, usageError{err}
	}
	return lp, nil
}

// startUnder starts lp's load: a signal on sigs during the start ends
// the start (its context); once started, the follower reads them.
func (a *app) startUnder(sigs <-chan os.Signal, lp session.Spec) (session.Session, error) {
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
