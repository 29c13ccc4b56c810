package main

import (
	"context"
	"fmt"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/fleet"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/termguard"
	"github.com/infertop/infertop/ui"
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

// defaultSaveTimeout bounds an s key's save: the server's description
// and the engine's history, read within it.
const defaultSaveTimeout = 5 * time.Second

// runTUI is `infertop`: the dashboard on this terminal, of one load, of a
// pair (--compare: both sides, the keys moving both loads, the live
// verdict under the header) or of a split (--split-by: the one load and
// its groups' verdict and panel). A comparison's table is printed when it
// ends.
func (a *app) runTUI(args []string) error {
	fs := newFlagSet("infertop", tuiSynopsis, a.stdout)
	f := addLoadFlags(fs)
	reportDir := fs.String("report-dir", ".", "where the s key writes the reports (infertop-START.json, .csv, .txt)")
	cf := addCompareFlags(fs, false)
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
		return a.agentsTUI(fs, f, &agf, *reportDir)
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if err := runner.CheckDir(*reportDir); err != nil {
		return usagef("--report-dir: %v", err)
	}
	find, err := capf.dashboardSearch(fs, f, &cfg)
	if err != nil {
		return err
	}
	if cf.used() && len(find.Objectives) > 0 {
		return usagef("--find-max does not work with --compare yet")
	}
	lp, err := cf.loadPlan(cfg, nil)
	if err != nil {
		return err
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
	p, done, err := a.dashboard(context.Background(), s, term, dashboardOptions{theme: f.theme, reportDir: *reportDir, find: &find})
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

// dashboardOptions are a dashboard's own settings: its theme, where its
// s key saves, and its capacity searches' template (nil: the defaults,
// over the loop the load runs).
type dashboardOptions struct {
	theme, reportDir string
	find             *capacity.Search
	agents           func() ui.Agents // the agents' panel (--agents)
}

// viewOptions are the options of every view of s, local or over SSH,
// without a subscription (each view makes its own): the first side's
// objectives and figures, the s key's save, and what the session
// compares.
func (a *app) viewOptions(s session.Session, d dashboardOptions) ui.Options {
	main := s.Sides()[0]
	v := s.View()
	timeout := a.saveTimeout
	if timeout <= 0 {
		timeout = defaultSaveTimeout
	}
	return ui.Options{
		Theme: d.theme, Objectives: main.Objectives(), Figures: main.Figures, Compare: v.Compare, Groups: v.Groups, Agents: d.agents,
		ReadOnly: d.agents != nil, // the agents take no knob changes yet
		Save: func(snap load.Snapshot) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return s.Save(ctx, snap, d.reportDir)
		},
	}
}

// dashboard builds the dashboard program of s on term: the one builder
// for `infertop` and `infertop ssh --local`, of every kind of load. The
// program ends with ctx; done ends its subscriptions once it has run.
func (a *app) dashboard(ctx context.Context, s session.Session, term *os.File, d dashboardOptions) (p *tea.Program, done func(), err error) {
	rd := lipgloss.NewRenderer(term)
	if a.env("NO_COLOR") != "" {
		rd.SetColorProfile(termenv.Ascii)
	}
	o := a.viewOptions(s, d)
	main := s.Sides()[0]
	snaps, unsubscribe := main.Subscribe()
	o.Renderer, o.Snapshots = rd, snaps
	v := s.View()
	if v.Canary != nil {
		canary, unsubscribeCanary := v.Canary()
		o.Canary = canary
		base := unsubscribe
		unsubscribe = func() { base(); unsubscribeCanary() }
	}
	closeSearcher := func() {}
	if v.Search != nil { // none in a pair: it would leave the canary behind (its f key says so)
		searcher := searcher(v.Search, main, d.find, &o)
		closeSearcher = searcher.Close
	}
	model, err := ui.New(s.Controller(), o)
	if err != nil {
		closeSearcher()
		unsubscribe()
		return nil, nil, usageError{err}
	}
	var m tea.Model = model
	if a.wrapModel != nil {
		m = a.wrapModel(m)
	}
	// Panics are crash's, not bubbletea's: bubbletea would print a panic in
	// a command's goroutine into the alternate screen, where it is lost.
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithOutput(term), tea.WithContext(ctx), tea.WithoutCatchPanics()}
	if a.stdin != nil {
		opts = append(opts, tea.WithInput(a.stdin))
	}
	p = tea.NewProgram(m, opts...)
	return p, func() { closeSearcher(); unsubscribe() }, nil
}

// searcher is the dashboard's capacity searches over eng, its f key's
// (and --find-max's, at once, from find), set in o; the dashboard's
// command closes it. Without find the searches are the defaults, over
// the loop the load runs.
func searcher(eng capacity.Engine, side session.Side, find *capacity.Search, o *ui.Options) *capacity.Live {
	tmpl := capacity.Search{}
	if find != nil {
		tmpl = *find
	} else if k, ok := eng.(interface{ Knobs() load.Knobs }); ok && k.Knobs().Mode == load.OpenLoop {
		tmpl.Over = capacity.Rate
	}
	s := capacity.NewLive(tmpl, eng, side.Subscribe)
	o.Finder, o.FindMax = s, tmpl.Objectives
	return s
}

// lastWord prints a comparison's table on stdout once the load has
// stopped, the last word (more resamples than the live line's): the
// views that showed the verdict are gone, and the table is what is left
// of it. Nothing for a load that compares nothing.
func (a *app) lastWord(s session.Session) error {
	if err := s.Stop(); err != nil {
		a.note(err)
	}
	return s.LastWord(a.stdout)
}
