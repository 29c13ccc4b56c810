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
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/ui"
)

const tuiSynopsis = `Usage: infertop [flags]          the live dashboard
       infertop run [flags]      the same load, headless, with reports and SLO gates (infertop run --help)
       infertop ssh [flags]      the dashboard served over SSH, one load for every session (infertop ssh --help)
       infertop sim [flags]      the simulated endpoint alone (infertop sim --help)

Puts load (a closed loop, or an open loop with --rate) on an inference endpoint (OpenAI chat or completions,
Ollama, TGI, or any JSON API) and shows latency percentiles, TTFT, throughput,
errors, in-flight requests and a table of phases, live. Without --url it starts an
embedded simulated endpoint and watches that. Keys change the load while it
runs; press ? in the dashboard for all of them.`

// runTUI is `infertop`: the dashboard on this terminal.
func (a *app) runTUI(args []string) error {
	fs := newFlagSet("infertop", tuiSynopsis, a.stdout)
	f := addLoadFlags(fs)
	reportDir := fs.String("report-dir", ".", "where the s key writes the reports (infertop-START.json, .csv, .txt)")
	cf := addCompareFlags(fs, false)
	var capf capacityFlags
	capf.add(fs)
	if done, err := f.parse(args, a.stdout); done || err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	find, err := capf.dashboardSearch(fs, f, &cfg)
	if err != nil {
		return err
	}
	a.find = &find
	if cf.used() {
		if len(find.Objectives) > 0 {
			return usagef("--find-max does not work with --compare yet")
		}
		return a.runTUICompare(cfg, cf, f.theme, *reportDir)
	}
	term, ok := a.stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}
	guard := crash.GuardTerminal(term, a.stderr)
	defer crash.Handle(nil)
	r, err := a.start(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer r.Stop()
	p, done, err := a.dashboard(context.Background(), r, nil, term, f.theme, *reportDir)
	if err != nil {
		return err
	}
	defer done()
	if err := guard.Run(p); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// viewOptions are a dashboard's options over r, for a controller that
// saves into reportDir: the template of every view, local or over SSH.
func viewOptions(r *runner.Runner, theme, reportDir string) ui.Options {
	return ui.Options{
		Theme: theme, Objectives: r.Objectives(), Figures: r.Figures,
		Save: func(s load.Snapshot) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			return r.Save(ctx, s, reportDir)
		},
	}
}

// dashboard builds the dashboard program on term, a controller of r: the
// one builder for `infertop`, `infertop --compare`, `infertop --split-by`
// and `infertop ssh --local`. With a pair (r its baseline) the keys move
// both of its loads, the panels show its canary beside r with the live
// verdict, and s saves both sides and the comparison. The program ends
// with ctx; done ends its subscriptions once it has run.
func (a *app) dashboard(ctx context.Context, r *runner.Runner, pair *compare.Pair, term *os.File, theme, reportDir string) (p *tea.Program, done func(), err error) {
	return a.dashboardOn(ctx, r, nil, pair, term, theme, reportDir)
}

// dashboardOn is dashboard with a split (nil: none; r its runner): the
// keys act on it (a new setting starts its groups' comparison over), its
// groups' verdict and panel show above the load's panels, and s saves
// the groups' comparison with the report.
func (a *app) dashboardOn(ctx context.Context, r *runner.Runner, split *compare.Split, pair *compare.Pair, term *os.File, theme, reportDir string) (p *tea.Program, done func(), err error) {
	rd := lipgloss.NewRenderer(term)
	if os.Getenv("NO_COLOR") != "" {
		rd.SetColorProfile(termenv.Ascii)
	}
	o := viewOptions(r, theme, reportDir)
	snaps, unsubscribe := r.Subscribe()
	o.Renderer, o.Snapshots = rd, snaps
	var ctl ui.Controller = r.Engine()
	if split != nil {
		o.Groups, o.Save, ctl = split.Comparison, saveSplit(split, reportDir), split
	}
	if pair != nil {
		canary, unsubscribeCanary := pair.Runner(compare.Canary).Subscribe()
		o.Canary, o.Compare, o.Save, ctl = canary, pair.Comparison, savePair(pair, reportDir), pair
		base := unsubscribe
		unsubscribe = func() { base(); unsubscribeCanary() }
	}
	searcher := a.searcher(r, &o)
	model, err := ui.New(ctl, o)
	if err != nil {
		searcher.Close()
		unsubscribe()
		return nil, nil, usageError{err}
	}
	var m tea.Model = model
	if a.wrapModel != nil {
		m = a.wrapModel(m)
	}
	// Panics are crash's, not bubbletea's: bubbletea would print a panic in
	// a command's goroutine into the alternate screen, where it is lost.
	p = tea.NewProgram(m, tea.WithAltScreen(), tea.WithOutput(term), tea.WithContext(ctx), tea.WithoutCatchPanics())
	return p, func() { searcher.Close(); unsubscribe() }, nil
}

// searcher is the dashboard's capacity searches over r, its f key's (and
// --find-max's, at once), set in o; the dashboard's command closes it.
// Without a.find (infertop ssh --local) the searches are the defaults,
// over the loop the load runs.
func (a *app) searcher(r *runner.Runner, o *ui.Options) *ui.Searcher {
	tmpl := capacity.Search{}
	if a.find != nil {
		tmpl = *a.find
	} else if r.Engine().Knobs().Mode == load.OpenLoop {
		tmpl.Over = capacity.Rate
	}
	s := ui.NewSearcher(tmpl, r.Engine(), r.Subscribe)
	o.Finder, o.FindMax = s, tmpl.Objectives
	return s
}
