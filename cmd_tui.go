package main

import (
	"context"
	"fmt"
	"io"
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
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/termguard"
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
	guard := termguard.Install(term, a.stderr)
	defer crash.Handle(nil)
	r, err := a.start(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer r.Stop()
	p, done, err := a.dashboard(context.Background(), servedRun(r), term, f.theme, *reportDir)
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

// served is the load a dashboard follows: one runner, a pair (run its
// baseline) or a split (run its runner), as `infertop`, `infertop ssh`
// and their --compare and --split-by start them.
type served struct {
	run   *runner.Runner
	pair  *compare.Pair
	split *compare.Split
	// splitBy is what a split groups by (probe.SplitBy's String).
	splitBy string
}

// servedRun is one runner's load.
func servedRun(r *runner.Runner) served { return served{run: r} }

// what names the load in a line: the endpoint, a pair's canary, a
// split's grouping.
func (s served) what() string {
	u := sanitize.Text(s.run.Target().URL)
	switch {
	case s.pair != nil:
		return u + " against the canary " + sanitize.Text(s.pair.Runner(compare.Canary).Target().URL)
	case s.split != nil:
		return u + ", its answers split by " + s.splitBy
	}
	return u
}

// loadView is what every dashboard of a load starts from, for a
// controller that saves into reportDir: its options (no subscription in
// them: each view makes its own), the controller its keys act on, and in
// a pair the canary's subscription (nil otherwise). A pair's keys move
// both loads, its panels show the canary beside the baseline with the
// live verdict, and s saves both sides and the comparison; a split's keys
// move its load and start its groups' comparison over, its groups'
// verdict and panel show above the load's panels, and s saves the
// groups' comparison with the report.
type loadView struct {
	opts   ui.Options
	ctl    ui.Controller
	canary func() (<-chan load.Snapshot, func())
}

// view is the load's loadView.
func (s served) view(theme, reportDir string) loadView {
	v := loadView{opts: viewOptions(s.run, theme, reportDir), ctl: s.run.Engine()}
	switch {
	case s.pair != nil:
		v.opts.Compare, v.opts.Save, v.ctl = s.pair.Comparison, savePair(s.pair, reportDir), s.pair
		v.canary = s.pair.Runner(compare.Canary).Subscribe
	case s.split != nil:
		v.opts.Groups, v.opts.Save, v.ctl = s.split.Comparison, saveSplit(s.split, reportDir), s.split
	}
	return v
}

// stop stops the load (it may be called more than once).
func (s served) stop() error {
	switch {
	case s.pair != nil:
		return s.pair.Stop()
	case s.split != nil:
		return s.split.Stop()
	}
	return s.run.Stop()
}

// writeComparison writes a pair's or a split's comparison table, the last
// word (more resamples than the live line's), once the load has stopped;
// nothing for one runner.
func (s served) writeComparison(w io.Writer) error {
	switch {
	case s.pair != nil:
		b, c := s.pair.Runner(compare.Baseline).Target().URL, s.pair.Runner(compare.Canary).Target().URL
		return s.pair.Compare(2*compare.DefaultResamples).WriteTable(w, sanitize.Text(b), sanitize.Text(c))
	case s.split != nil:
		return s.split.Compare(2 * compare.DefaultResamples).WriteTable(w)
	}
	return nil
}

// dashboard builds the dashboard program of s on term, a controller: the
// one builder for `infertop`, `infertop --compare`, `infertop --split-by`
// and `infertop ssh --local` (with or without them). The program ends
// with ctx; done ends its subscriptions once it has run.
func (a *app) dashboard(ctx context.Context, s served, term *os.File, theme, reportDir string) (p *tea.Program, done func(), err error) {
	rd := lipgloss.NewRenderer(term)
	if os.Getenv("NO_COLOR") != "" {
		rd.SetColorProfile(termenv.Ascii)
	}
	v := s.view(theme, reportDir)
	o := v.opts
	snaps, unsubscribe := s.run.Subscribe()
	o.Renderer, o.Snapshots = rd, snaps
	if v.canary != nil {
		canary, unsubscribeCanary := v.canary()
		o.Canary = canary
		base := unsubscribe
		unsubscribe = func() { base(); unsubscribeCanary() }
	}
	// A search drives one engine's knobs; a pair's canary would be left
	// behind, so a comparison has none (its f key says so).
	closeSearcher := func() {}
	if s.pair == nil {
		searcher := a.searcher(s.run, &o)
		closeSearcher = searcher.Close
	}
	model, err := ui.New(v.ctl, o)
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
	p = tea.NewProgram(m, tea.WithAltScreen(), tea.WithOutput(term), tea.WithContext(ctx), tea.WithoutCatchPanics())
	return p, func() { closeSearcher(); unsubscribe() }, nil
}

// searcher is the dashboard's capacity searches over r, its f key's (and
// --find-max's, at once), set in o; the dashboard's command closes it.
// Without a.find (infertop ssh --local) the searches are the defaults,
// over the loop the load runs.
func (a *app) searcher(r *runner.Runner, o *ui.Options) *capacity.Live {
	tmpl := capacity.Search{}
	if a.find != nil {
		tmpl = *a.find
	} else if r.Engine().Knobs().Mode == load.OpenLoop {
		tmpl.Over = capacity.Rate
	}
	s := capacity.NewLive(tmpl, r.Engine(), r.Subscribe)
	o.Finder, o.FindMax = s, tmpl.Objectives
	return s
}
