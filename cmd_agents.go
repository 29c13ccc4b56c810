package main

import (
	"fmt"
	"sync"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/fleet"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/slo"
)

// runAgents is `infertop run --agents`: the agents followed to their end
// (package fleet), their results merged into one report, its exit code
// by the usual rules (session.End).
func (a *app) runAgents(fs *pflag.FlagSet, f *loadFlags, rf *runFlags, af *fleet.Flags) error {
	if err := af.Check(fs); err != nil {
		return usageError{err}
	}
	objs, err := slo.ParseAll(f.slos)
	if err != nil {
		return usageError{err}
	}
	if err := runner.CheckOutputs(map[string]string{"--json": rf.jsonPath, "--csv": rf.csvPath, "--html": rf.htmlPath}); err != nil {
		return usageError{err}
	}
	var logMu sync.Mutex
	cfg, err := af.Config(versionString(), func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(a.stderr, "infertop "+format+"\n", args...)
	})
	if err != nil {
		return usageError{err}
	}
	fl, err := fleet.Start(cfg)
	if err != nil {
		return usageError{err}
	}
	s := fleet.NewSession(fl, objs)
	defer s.Stop()
	sigs, stopSignals := a.interrupts()
	defer stopSignals()
	follower := session.Follower{Stderr: a.stderr, Live: isTerminal(a.stderr), ProgressEvery: rf.progressEvery,
		Gate: session.Gate{On: rf.failFast, Window: rf.sloWindow}, Signals: sigs}
	fo := follower.Follow(s)
	return a.conclude(session.End(s, fo, a.reportTimeout), rf.outputs())
}
