package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/fleet"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/termguard"
	"github.com/infertop/infertop/ui"
)

// runAgents is `infertop run --agents`: the agents followed to their end
// (package fleet), their results merged into one report, its exit code
// by the usual rules (session.End).
func (a *app) runAgents(fs *pflag.FlagSet, f *loadFlags, rf *runFlags, af *fleet.Flags) error {
	if err := runner.CheckOutputs(map[string]string{"--json": rf.jsonPath, "--csv": rf.csvPath, "--html": rf.htmlPath}); err != nil {
		return usageError{err}
	}
	var logMu sync.Mutex
	s, err := followAgents(fs, f, af, func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(a.stderr, "infertop "+format+"\n", args...)
	})
	if err != nil {
		return err
	}
	defer s.Stop()
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	follower := session.Follower{Stderr: a.stderr, Live: isTerminal(a.stderr), ProgressEvery: rf.progressEvery,
		Gate: session.Gate{On: rf.failFast, Window: rf.sloWindow}, Signals: sigs}
	fo := follower.Follow(s)
	return a.conclude(session.End(s, fo, a.reportTimeout), rf.outputs())
}

// followAgents starts following the agents af names (logf hears of
// refusals), their merge checked against the --slo objectives.
func followAgents(fs *pflag.FlagSet, f *loadFlags, af *fleet.Flags, logf func(string, ...any)) (*fleet.Session, error) {
	if err := af.Check(fs); err != nil {
		return nil, usageError{err}
	}
	objs, err := slo.ParseAll(f.slos)
	if err != nil {
		return nil, usageError{err}
	}
	cfg, err := af.Config(versionString(), logf)
	if err != nil {
		return nil, usageError{err}
	}
	fl, err := fleet.Start(cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return fleet.NewSession(fl, objs), nil
}

// agentsTUI is `infertop --agents`: the dashboard of the agents' merge,
// with their panel.
func (a *app) agentsTUI(fs *pflag.FlagSet, f *loadFlags, af *fleet.Flags, reportDir string) error {
	if err := runner.CheckDir(reportDir); err != nil {
		return usagef("--report-dir: %v", err)
	}
	term, ok := a.stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(a.input().Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}
	s, err := followAgents(fs, f, af, nil) // nothing on the terminal while the dashboard runs: the panel names refusals
	if err != nil {
		return err
	}
	guard := termguard.Install(term, a.stderr)
	defer crash.Handle(nil)
	defer s.Stop()
	p, done, err := a.dashboard(context.Background(), s, term, dashboardOptions{theme: f.theme, reportDir: reportDir,
		agents: func() ui.Agents { return agentsPanel(s.AgentsView()) }})
	if err != nil {
		return err
	}
	err = guard.Run(p)
	done()
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// agentsPanel is v as the dashboard's agents panel shows it.
func agentsPanel(v fleet.View) ui.Agents {
	out := ui.Agents{Source: v.Source, Of: v.Of, Missing: v.Missing}
	for _, ag := range v.Agents {
		r := fleet.AgentRow(ag)
		row := ui.AgentRow{Index: r.Index, Addr: r.Address, State: r.State, Why: r.Why, Sent: r.Sent, Completed: r.Completed, Failed: r.Failed,
			Incomplete: r.Incomplete, InFlight: r.InFlight, ClockOffset: ag.ClockOffset, Seen: r.LastSeen != nil}
		if r.TTFTP99MS != nil {
			row.TTFTP99 = time.Duration(*r.TTFTP99MS * float64(time.Millisecond))
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}
