package main

import (
	"context"
	"fmt"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/capacity/capflag"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/dashboard"
	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/fleet/fleetflag"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
	"github.com/infertop/infertop/termguard"
)

const tuiSynopsis = `Usage: infertop [flags]          the live dashboard
       infertop run [flags]      the same load, headless, with reports and SLO gates (infertop run --help)
       infertop ssh [flags]      the dashboard served over SSH, one load for every session (infertop ssh --help)
       infertop sim [flags]      the simulated endpoint alone (infertop sim --help)
       infertop report RUN.json  a run's JSON result drawn as one HTML page (infertop report --help)
       infertop merge A.json B.json -o ALL.json  runs side by side merged exactly (infertop merge --help)
       infertop agent --index I --of N ...  one share of a load spread over machines (infertop agent --help)

Puts load (a closed loop, or an open loop with --rate) on an inference endpoint (OpenAI chat or completions,
Ollama, TGI, or any JSON API) and shows latency percentiles, TTFT, throughput,
errors, in-flight requests and a table of phases, live. Without --url it starts an
embedded simulated endpoint and watches that. Keys change the load while it
runs; press ? in the dashboard for all of them.`

// runTUI is `infertop`: the dashboard on this terminal, of one load, of a
// pair (--compare: both sides, the keys moving both loads, the live
// verdict under the header) or of a split (--split-by: the one load and
// its groups' verdict and panel). A comparison's table is printed when it
// ends.
func (a *app) runTUI(args []string) error {
	fs := newFlagSet("infertop", tuiSynopsis, a.stdout)
	f := addLoadFlags(fs)
	reportDir := fs.String("report-dir", ".", "where the s key writes the reports (infertop-START.json, .csv, .txt)")
	flaghelp.Mark(fs, "Reports", "report-dir")
	cf := sessionflag.Add(fs, false)
	capf := capflag.Add(fs)
	agf := fleetflag.Add(fs)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	if err := agf.Check(fs); err != nil {
		return usageError{err}
	}
	lp, find, err := a.dashboardSpec(fs, f, cf, capf, agf, true)
	if err != nil {
		return err
	}
	if err := runner.CheckDir(*reportDir); err != nil {
		return usagef("--report-dir: %v", err)
	}
	term, ok := a.stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(a.input().Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}
	guard := termguard.Install(term, a.stderr)
	defer crash.Handle(nil)
	s, err := a.start(context.Background(), lp)
	if err != nil {
		return err
	}
	defer s.Stop()
	p, done, err := a.dashboard(context.Background(), s, term, a.dashboardOptions(f.theme, *reportDir, &find))
	if err != nil {
		return err
	}
	err = guard.Run(p)
	done()
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return a.lastWord(s)
}

// dashboardSpec is the load a dashboard's flags describe, and the
// template of its capacity searches: the agents' (--agents, their notes
// off the terminal where quiet), or this machine's.
func (a *app) dashboardSpec(fs *pflag.FlagSet, f *loadFlags, cf *sessionflag.Flags, capf *capflag.Flags, agf *fleetflag.Flags, quiet bool) (session.Spec, capacity.Search, error) {
	if agf.On() {
		find, err := capf.AgentsDashboardSearch(len(f.slos) > 0)
		if err != nil {
			return session.Spec{}, capacity.Search{}, usageError{err}
		}
		ag, err := a.agentsSpec(f, agf, cf, quiet)
		return session.Spec{Agents: ag}, find, err
	}
	cfg, err := f.config()
	if err != nil {
		return session.Spec{}, capacity.Search{}, err
	}
	find, err := dashboardSearch(fs, capf, f, &cfg)
	if err != nil {
		return session.Spec{}, capacity.Search{}, err
	}
	if cf.Used() && len(find.Objectives) > 0 {
		return session.Spec{}, capacity.Search{}, usagef("--find-max does not work with --compare yet")
	}
	lp, err := cf.Spec(cfg, nil)
	if err != nil {
		return session.Spec{}, capacity.Search{}, usageError{err}
	}
	return lp, find, nil
}

// dashboardOptions are the options of the dashboard on this terminal:
// theme, the s key's folder and the searches' template from the flags,
// the rest from the app (its input, NO_COLOR, its hooks).
func (a *app) dashboardOptions(theme, reportDir string, find *capacity.Search) dashboard.Options {
	return dashboard.Options{Theme: theme, ReportDir: reportDir, Find: find, SaveTimeout: a.saveTimeout,
		NoColor: a.env("NO_COLOR") != "", Input: a.stdin, Wrap: a.wrapModel}
}

// dashboard is dashboard.Program with its refusal in the command line's
// words.
func (a *app) dashboard(ctx context.Context, s session.Session, term *os.File, d dashboard.Options) (*tea.Program, func(), error) {
	p, done, err := dashboard.Program(ctx, s, term, d)
	if err != nil {
		return nil, nil, usageError{err}
	}
	return p, done, nil
}

// lastWord prints a comparison's table on stdout once the load has
// stopped, the last word (more resamples than the live line's): the
// views that showed the verdict are gone, and the table is what is left
// of it. Nothing for a load that compares nothing.
func (a *app) lastWord(s session.Session) error {
	if err := s.Stop(); err != nil {
		a.note(err)
	}
	return session.LastWord(s, a.stdout)
}
