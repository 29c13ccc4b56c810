package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/termguard"
	"github.com/infertop/infertop/ui"
)

// The pair moves both loads when the dashboard's keys move one; a split
// moves its one load and starts its groups' comparison over.
var (
	_ ui.Controller = (*compare.Pair)(nil)
	_ ui.Controller = (*compare.Split)(nil)
)

// compareFlags put a canary beside the endpoint: the same load on both;
// or, with --split-by, compare the backends behind the one endpoint.
type compareFlags struct {
	url, model  string
	regressions []string
	splitBy     string
	// baselineGroup names the split's baseline group (--baseline-group).
	baselineGroup string
	// minSeconds lowers the seconds a statistic needs (hidden: for tests
	// that cannot wait the default's 20 s; fewer make intervals too narrow).
	minSeconds int
}

// addCompareFlags binds the comparison's flags; --regression only for the
// headless run, the one that sets an exit code.
func addCompareFlags(fs *pflag.FlagSet, headless bool) *compareFlags {
	cf := &compareFlags{}
	fs.StringVar(&cf.url, "compare", "", "canary endpoint: the same load (knobs, prompts, seed) on it at once, each endpoint its own engine, and a live verdict: is the canary slower, are its errors up")
	fs.StringVar(&cf.model, "compare-model", "", "the canary's model name, when it serves another (default: --model, else its first)")
	fs.StringVar(&cf.splitBy, "split-by", "", "group every request by the backend that answered, header:NAME or field:system_fingerprint (or field:model), and compare the group seen first with each newer one (a rolling update's old and new pods behind one --url)")
	fs.StringVar(&cf.baselineGroup, "baseline-group", "", "with --split-by: the group of this value is the baseline whenever it appears, instead of the first seen (the old version's, in a rollout where the new one may answer first)")
	if headless {
		fs.StringArrayVar(&cf.regressions, "regression", nil, "with --compare or --split-by: the canary's (each newer group's) allowed worsening, repeatable, e.g. 'ttft_p99<+10%', 'error_rate<+0.5pp'; exit 1 when it is worse with confidence")
	}
	fs.IntVar(&cf.minSeconds, "compare-min-seconds", 0, "seconds of requests a statistic needs before it is judged (default 20)")
	_ = fs.MarkHidden("compare-min-seconds")
	return cf
}

func (cf *compareFlags) used() bool {
	return cf.url != "" || cf.model != "" || len(cf.regressions) > 0 || cf.splitBy != "" || cf.baselineGroup != ""
}

// options are the comparison's options from the flags.
func (cf *compareFlags) options() (compare.Options, error) {
	regs, err := compare.ParseRegressions(cf.regressions)
	if err != nil {
		return compare.Options{}, usagef("--regression: %v", err)
	}
	if cf.minSeconds < 0 {
		return compare.Options{}, usagef("--compare-min-seconds must not be negative")
	}
	return compare.Options{Regressions: regs, MinSeconds: cf.minSeconds}, nil
}

// splitConfig checks the split's flags and builds its configuration over
// cfg, the load's.
func (cf *compareFlags) splitConfig(cfg runner.Config) (compare.SplitConfig, error) {
	if cf.url != "" || cf.model != "" {
		return compare.SplitConfig{}, usagef("--split-by does not work with --compare: split one endpoint's answers, or compare two endpoints")
	}
	by, err := probe.ParseSplitBy(cf.splitBy)
	if err != nil {
		return compare.SplitConfig{}, usageError{err}
	}
	o, err := cf.options()
	if err != nil {
		return compare.SplitConfig{}, err
	}
	// The value as the probe keeps a group's (trimmed), so the name given
	// is the name matched; a longer one could never match a cut value.
	base := strings.TrimSpace(cf.baselineGroup)
	if len(base) > probe.MaxGroupBytes {
		return compare.SplitConfig{}, usagef("--baseline-group: at most %d bytes, the longest group value a split keeps", probe.MaxGroupBytes)
	}
	cfg.Probe.SplitBy = by
	return compare.SplitConfig{Run: cfg, Options: o, BaselineGroup: base}, nil
}

// pairConfig checks the comparison's flags and builds the pair's
// configuration over cfg, the baseline's.
func (cf *compareFlags) pairConfig(cfg runner.Config) (compare.Config, error) {
	if cf.baselineGroup != "" {
		return compare.Config{}, usagef("--baseline-group needs --split-by: it names one of the groups a split makes")
	}
	if cf.url == "" {
		return compare.Config{}, usagef("--compare-model and --regression need --compare URL (or --split-by)")
	}
	o, err := cf.options()
	if err != nil {
		return compare.Config{}, err
	}
	if cfg.Settings != nil { // the manifest stores the canary's URL without credentials
		cfg.Settings["compare"] = probe.RedactURL(cf.url)
	}
	return compare.Config{Baseline: cfg, CanaryURL: cf.url, CanaryModel: cf.model, Options: o}, nil
}

// canaryPath is the canary's file beside the baseline's: run.jsonl ->
// run.canary.jsonl.
func canaryPath(path string) string {
	if path == "" {
		return ""
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".canary" + ext
}

// startPair starts the pair with the app's hooks, its errors in the
// command line's words.
func (a *app) startPair(ctx context.Context, pc compare.Config) (*compare.Pair, error) {
	pc.Baseline.Notes, pc.Baseline.WrapDo = a.stderr, a.wrapDo
	p, err := compare.Start(ctx, pc)
	if err == nil {
		return p, nil
	}
	var se *compare.StartError
	if errors.As(err, &se) && se.Side == compare.Canary {
		return nil, usagef("--compare: %v", startError(se.Err))
	}
	if errors.As(err, &se) {
		err = se.Err
	}
	return nil, startError(err)
}

// runCompare is `infertop run --compare`: both loads followed to their
// end, both reports and the comparison, and the exit code: 1 when an SLO
// broke on either side or the canary regressed with confidence.
func (a *app) runCompare(cfg runner.Config, rf *runFlags, cf *compareFlags) error {
	if cf.splitBy != "" {
		return a.runSplit(cfg, rf, cf)
	}
	pc, err := cf.pairConfig(cfg)
	if err != nil {
		return err
	}
	pc.CanaryRequestsLog = canaryPath(rf.requestsLog)
	if err := runner.CheckOutputs(map[string]string{"--json": rf.jsonPath, "--csv": rf.csvPath, "--requests-log": rf.requestsLog,
		"--requests-log (the canary's)": pc.CanaryRequestsLog}); err != nil {
		return usageError{err}
	}
	p, sigs, stopSignals, err := underSignals(func(ctx context.Context) (*compare.Pair, error) { return a.startPair(ctx, pc) })
	if err != nil {
		return err
	}
	defer stopSignals()
	defer p.Stop()
	final, breaches, stoppedBy := a.followPair(p, rf, sigs)
	if err := p.Stop(); err != nil {
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
	}
	cmp := p.Compare(2 * compare.DefaultResamples) // the last word: more resamples than the live line's
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	var reps [2]*report.Report
	for i := range reps {
		r := p.Runner(compare.Side(i))
		if s := r.Engine().Latest(); final[i].Seq < s.Seq {
			final[i] = s
		}
		reps[i] = r.Report(rctx, final[i])
		reps[i].Verdicts = append(reps[i].Verdicts, breaches[i]...)
	}
	for i, rep := range reps {
		fmt.Fprintf(a.stdout, "== %s ==\n", compare.Side(i))
		if err := rep.WriteText(a.stdout); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout)
	}
	base, canary := sanitize.Text(reps[0].Manifest.URL), sanitize.Text(reps[1].Manifest.URL)
	if err := cmp.WriteTable(a.stdout, base, canary); err != nil {
		return err
	}
	if err := withComparison(reps, cmp); err != nil {
		return err
	}
	if err := runner.Write(reps[0], runner.Outputs{JSON: rf.jsonPath, CSV: rf.csvPath, HTML: rf.htmlPath}); err != nil {
		return err
	}
	for i, s := range final {
		if err := allFailed(s); err != nil {
			if i == int(compare.Canary) {
				return usagef("the canary: %v", err)
			}
			return err
		}
	}
	var broken []string
	for i, rep := range reps {
		for _, v := range rep.Verdicts {
			if !v.Held {
				broken = append(broken, fmt.Sprintf("%s in %s (%s)", v.Expr, v.Scope, compare.Side(i)))
			}
		}
	}
	broken = append(broken, gateFailures(cmp.Gates, "")...)
	if !cmp.Breached() {
		// The live breach that ended the run stands, though the last
		// word's fresh draw, with the drain's requests, came out held.
		broken = append(broken, stoppedBy...)
	}
	if len(broken) > 0 {
		return exitError{1, fmt.Errorf("the canary regressed, a regression went unjudged or an SLO broke: %s", strings.Join(broken, "; "))}
	}
	return nil
}

// withComparison puts the comparison and the canary's whole report into
// the baseline's JSON, as infertop.compare: one file holds the run.
func withComparison(reps [2]*report.Report, cmp compare.Comparison) error {
	var cj bytes.Buffer
	if err := reps[1].WriteJSON(&cj); err != nil {
		return fmt.Errorf("the canary's report: %w", err)
	}
	j := cmp.JSON()
	j["baseline"] = map[string]any{"url": reps[0].Manifest.URL, "model": reps[0].Manifest.Model, "report": "the top level"}
	j["canary"] = json.RawMessage(cj.Bytes())
	reps[0].Extra = map[string]any{"compare": j}
	return nil
}

// savePair is the s key's save in a comparison: what `run --compare`
// writes, for the run so far. The baseline's reports at the runner's
// SaveBase (infertop-START.json, .csv, .txt, .html), its JSON holding
// infertop.compare with the canary's whole report; the canary's beside
// them, named as canaryPath names its requests log
// (infertop-START.canary.json, …); and the comparison's table
// (infertop-START.compare.txt). The comparison is the live one, the
// verdict on screen (a fresh one before the first). It runs in the
// dashboard's command, never in its Update.
func savePair(p *compare.Pair, dir string) func(load.Snapshot) (string, error) {
	return func(s load.Snapshot) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmp, ok := p.Comparison()
		if !ok {
			cmp = p.Compare(0)
		}
		b, c := p.Runner(compare.Baseline), p.Runner(compare.Canary)
		reps := [2]*report.Report{b.Report(ctx, s), c.Report(ctx, c.Engine().Latest())}
		if err := withComparison(reps, cmp); err != nil {
			return "", err
		}
		base := b.SaveBase(dir)
		// base has no extension (infertop-START): canaryPath adds .canary.
		if _, err := runner.SaveAs(reps[1], canaryPath(base)); err != nil {
			return "", fmt.Errorf("the canary's: %w", err)
		}
		if _, err := runner.SaveAs(reps[0], base); err != nil {
			return "", err
		}
		var t bytes.Buffer
		if err := cmp.WriteTable(&t, sanitize.Text(reps[0].Manifest.URL), sanitize.Text(reps[1].Manifest.URL)); err != nil {
			return "", fmt.Errorf("the comparison: %w", err)
		}
		if err := runner.ReplaceFile(base+".compare.txt", t.Bytes()); err != nil {
			return "", err
		}
		return base + "{,.canary}.{json,csv,txt,html} and " + filepath.Base(base) + ".compare.txt", nil
	}
}

// saveSplit is the s key's save in a split: what `run --split-by` writes,
// for the run so far: the load's reports, its JSON holding the groups'
// comparison as infertop.compare, and the groups' tables beside them
// (infertop-START.compare.txt). The comparison is the live one, the
// verdict on screen (a fresh one before the first).
func saveSplit(sp *compare.Split, dir string) func(load.Snapshot) (string, error) {
	return func(s load.Snapshot) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		grp, ok := sp.Comparison()
		if !ok {
			grp = sp.Compare(0)
		}
		r := sp.Runner()
		rep := r.Report(ctx, s)
		rep.Extra = map[string]any{"compare": grp.JSON()}
		base := r.SaveBase(dir)
		if _, err := runner.SaveAs(rep, base); err != nil {
			return "", err
		}
		var t bytes.Buffer
		if err := grp.WriteTable(&t); err != nil {
			return "", fmt.Errorf("the groups: %w", err)
		}
		if err := runner.ReplaceFile(base+".compare.txt", t.Bytes()); err != nil {
			return "", err
		}
		return base + ".{json,csv,txt,html} and " + filepath.Base(base) + ".compare.txt", nil
	}
}

// allFailed is the error of a side where nothing worked: its first reason.
func allFailed(s load.Snapshot) error {
	run := s.Run
	if run.Completed > 0 || run.Failed == 0 {
		return nil
	}
	why := sanitize.Text(s.LastError)
	if len(s.Errors) > 0 {
		e := s.Errors[0]
		why = fmt.Sprintf("%d of %d: %s", e.Count, run.Sent(), e.Line())
	}
	if s.TotalByClass[probe.Connection] == s.TotalFailed {
		return usagef("the endpoint was unreachable: %s", why)
	}
	return usagef("every request failed: %s", why)
}

// followPair reads both sides' snapshots until both runs are done (or a
// second signal stops them): a progress line on stderr with the live
// verdict. With --fail-fast, a full window breaking an SLO on either side,
// or the live comparison breaching a --regression with confidence, ends
// both runs. It returns each side's last snapshot and window breaches.
func (a *app) followPair(p *compare.Pair, rf *runFlags, sigs <-chan os.Signal) (last [2]load.Snapshot, breaches [2][]slo.Verdict, stoppedBy []string) {
	failed := false
	var breachSince time.Time // when the live comparison began breaching a gate (zero: it does not)
	var chans [2]<-chan load.Snapshot
	for i := range chans {
		ch, unsubscribe := p.Runner(compare.Side(i)).Subscribe()
		defer unsubscribe()
		chans[i] = ch
	}
	live := isTerminal(a.stderr)
	lastProgress := time.Now()
	said := false
	for chans[0] != nil || chans[1] != nil {
		var s load.Snapshot
		var ok bool
		var i int
		select {
		case <-sigs:
			if last[0].Ending() || last[1].Ending() {
				fmt.Fprintf(a.stderr, "\ninfertop: stopped: %d requests in flight cancelled\n", last[0].InFlight+last[1].InFlight)
				return last, breaches, stoppedBy
			}
			p.Finish(load.EndInterrupted)
			continue
		case s, ok = <-chans[0]:
			i = 0
		case s, ok = <-chans[1]:
			i = 1
		}
		if !ok || s.Done {
			chans[i] = nil
		}
		if !ok {
			continue
		}
		last[i] = s
		if s.Ending() && !said {
			said = true
			if live {
				fmt.Fprint(a.stderr, "\r\033[K")
			}
			fmt.Fprintf(a.stderr, "infertop: run ended: %s\n", s.DoneWhy)
		}
		if b := windowBreaches(p.Runner(compare.Side(i)), s, rf); len(b) > 0 && !failed {
			breaches[i], failed = b, true
			p.Finish("an SLO broke on the " + compare.Side(i).String() + " (--fail-fast)")
		}
		if i != 0 || s.Done {
			continue
		}
		line := progressLine(s)
		if c, ok := p.Comparison(); ok {
			line += "  ·  " + c.Line()
			// Each look is a test: the gate's tolerance, not the verdict's
			// zero, is what it must clear, which keeps looking every second
			// from calling a canary that is only a little slower; and the
			// breach must stand over three comparisons (the pair judges
			// once a second), so one unlucky draw ends nothing.
			if !rf.failFast || !c.Breached() {
				breachSince = time.Time{}
			} else if breachSince.IsZero() {
				breachSince = time.Now()
			}
			if !breachSince.IsZero() && time.Since(breachSince) >= sustainedBreach && !failed && !s.Ending() {
				failed, stoppedBy = true, liveBreaches(c.Gates, "")
				p.Finish("the canary regressed (--fail-fast)")
			}
		}
		switch {
		case live:
			fmt.Fprintf(a.stderr, "\r\033[K%s", line)
		case time.Since(lastProgress) >= rf.progressEvery:
			fmt.Fprintln(a.stderr, line)
			lastProgress = time.Now()
		}
	}
	if live {
		fmt.Fprint(a.stderr, "\r\033[K")
	}
	return last, breaches, stoppedBy
}

// runSplit is `infertop run --split-by`: one load followed to its end,
// its report, the comparison of each newer group with the baseline group,
// and the exit code: 1 when an SLO broke or a newer group regressed with
// confidence.
func (a *app) runSplit(cfg runner.Config, rf *runFlags, cf *compareFlags) error {
	sc, err := cf.splitConfig(cfg)
	if err != nil {
		return err
	}
	sp, sigs, stopSignals, err := underSignals(func(ctx context.Context) (*compare.Split, error) { return a.startSplit(ctx, sc) })
	if err != nil {
		return err
	}
	defer stopSignals()
	defer sp.Stop()
	final, breaches, stoppedBy := a.followSplit(sp, rf, sigs)
	if err := sp.Stop(); err != nil {
		fmt.Fprintf(a.stderr, "infertop: %v\n", err)
	}
	grp := sp.Compare(2 * compare.DefaultResamples) // the last word: more resamples than the live line's
	r := sp.Runner()
	if s := r.Engine().Latest(); final.Seq < s.Seq {
		final = s
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	rep := r.Report(rctx, final)
	rep.Verdicts = append(rep.Verdicts, breaches...)
	if err := rep.WriteText(a.stdout); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	if err := grp.WriteTable(a.stdout); err != nil {
		return err
	}
	rep.Extra = map[string]any{"compare": grp.JSON()}
	if err := runner.Write(rep, runner.Outputs{JSON: rf.jsonPath, CSV: rf.csvPath, HTML: rf.htmlPath}); err != nil {
		return err
	}
	if err := allFailed(final); err != nil {
		return err
	}
	var broken []string
	for _, v := range rep.Verdicts {
		if !v.Held {
			broken = append(broken, v.Expr+" in "+v.Scope)
		}
	}
	broken = append(broken, splitGateFailures(grp, sc.Options.Regressions)...)
	if !grp.Breached() {
		broken = append(broken, stoppedBy...) // as runCompare's
	}
	if len(broken) > 0 {
		return exitError{1, fmt.Errorf("a newer group regressed, a regression went unjudged or an SLO broke: %s", strings.Join(broken, "; "))}
	}
	return nil
}

// splitGateFailures are a split's gates that did not pass: every breach,
// in any newer group; and each regression that no newer group could judge
// (too few requests in all, or no newer group at all: no gate passed). A
// group too small to judge beside one that was judged (a pod that came
// and went, the "other groups") fails nothing: the regression was judged.
func splitGateFailures(grp compare.Grouping, regs []compare.Regression) []string {
	var out []string
	judged := map[string]bool{}
	for _, c := range grp.Newer {
		for _, g := range c.Gates {
			if g.Breached {
				out = append(out, fmt.Sprintf("regression %s (%s)", g.String(), c.Group.Label()))
			}
			if g.Result.Verdict != compare.NotEnough {
				judged[g.Regression.Expr] = true
			}
		}
	}
	for _, r := range regs {
		if judged[r.Expr] {
			continue
		}
		why := grp.Line()
		for _, c := range grp.Newer {
			for _, g := range c.Gates {
				if g.Regression.Expr == r.Expr {
					why = g.String() + " (" + c.Group.Label() + ")"
				}
			}
		}
		out = append(out, "regression "+r.Expr+" not judged: "+strings.TrimPrefix(why, r.Expr+": not judged: "))
	}
	return out
}

// sustainedBreach is how long a live comparison must keep breaching a
// --regression before --fail-fast ends the run: three of the comparisons
// made once a second.
const sustainedBreach = 2 * time.Second

// liveBreaches are the breached gates of a live comparison that ended a
// run (--fail-fast), in a line each.
func liveBreaches(gates []compare.Gate, who string) []string {
	var out []string
	for _, l := range gateFailures(gates, who) {
		if strings.Contains(l, ": breached: ") {
			out = append(out, l+" (live, ended the run: --fail-fast)")
		}
	}
	return out
}

// gateFailures are the gates that did not pass, in a line each: breached
// with confidence, or never judged (too few requests: an objective with
// nothing measured never passes). who names the group, "" for a pair.
func gateFailures(gates []compare.Gate, who string) []string {
	var out []string
	for _, g := range gates {
		if !g.Breached && g.Result.Verdict != compare.NotEnough {
			continue
		}
		line := "regression " + g.String()
		if who != "" {
			line += " (" + who + ")"
		}
		out = append(out, line)
	}
	return out
}

// startSplit starts the split with the app's hooks, its errors in the
// command line's words.
func (a *app) startSplit(ctx context.Context, sc compare.SplitConfig) (*compare.Split, error) {
	sc.Run.Notes, sc.Run.WrapDo = a.stderr, a.wrapDo
	sp, err := compare.StartSplit(ctx, sc)
	if err != nil {
		return nil, startError(err)
	}
	return sp, nil
}

// followSplit reads the snapshots until the run is done (or a second
// signal stops it): a progress line on stderr with the live verdict of
// the groups; --fail-fast as followPair's. It returns the last snapshot
// and the window breaches.
func (a *app) followSplit(sp *compare.Split, rf *runFlags, sigs <-chan os.Signal) (last load.Snapshot, breaches []slo.Verdict, stoppedBy []string) {
	failed := false
	var breachSince time.Time // as followPair's
	snaps, unsubscribe := sp.Runner().Subscribe()
	defer unsubscribe()
	live := isTerminal(a.stderr)
	lastProgress := time.Now()
	said := false
	defer func() {
		if live {
			fmt.Fprint(a.stderr, "\r\033[K")
		}
	}()
	for {
		select {
		case <-sigs:
			if last.Ending() {
				fmt.Fprintf(a.stderr, "\ninfertop: stopped: %d requests in flight cancelled\n", last.InFlight)
				return last, breaches, stoppedBy
			}
			sp.Finish(load.EndInterrupted)
			continue
		case s, ok := <-snaps:
			if !ok {
				return last, breaches, stoppedBy
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
				return s, breaches, stoppedBy
			}
			if b := windowBreaches(sp.Runner(), s, rf); len(b) > 0 && !failed {
				breaches, failed = b, true
				sp.Finish("an SLO broke (--fail-fast)")
			}
		}
		line := progressLine(last)
		if g, ok := sp.Comparison(); ok {
			line += "  ·  " + g.Line()
			if !rf.failFast || !g.Breached() { // as followPair's
				breachSince = time.Time{}
			} else if breachSince.IsZero() {
				breachSince = time.Now()
			}
			if !breachSince.IsZero() && time.Since(breachSince) >= sustainedBreach && !failed && !last.Ending() {
				failed = true
				for _, c := range g.Newer {
					stoppedBy = append(stoppedBy, liveBreaches(c.Gates, c.Group.Label())...)
				}
				sp.Finish("a newer group regressed (--fail-fast)")
			}
		}
		switch {
		case live:
			fmt.Fprintf(a.stderr, "\r\033[K%s", line)
		case time.Since(lastProgress) >= rf.progressEvery:
			fmt.Fprintln(a.stderr, line)
			lastProgress = time.Now()
		}
	}
}

// runTUICompare is `infertop --compare` and `infertop --split-by`: the
// dashboard of a pair (both sides, the keys moving both loads, the live
// verdict under the header) or of a split (the one load, its keys moving
// it and a new setting starting the groups' comparison over; above its
// panels the groups': the live verdict under the header and a panel of
// each group's figures and each newer group's differences from the
// baseline group, sp.Comparison, computed once a second). The comparison
// is printed when it ends.
func (a *app) runTUICompare(cfg runner.Config, cf *compareFlags, theme, reportDir string) error {
	sc, err := cf.servedConfig(cfg)
	if err != nil {
		return err
	}
	term, ok := a.stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}
	guard := termguard.Install(term, a.stderr)
	defer crash.Handle(nil)
	s, err := a.startServed(context.Background(), sc)
	if err != nil {
		return err
	}
	defer s.stop()
	prog, done, err := a.dashboard(context.Background(), s, term, theme, reportDir)
	if err != nil {
		return err
	}
	err = guard.Run(prog)
	done()
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	s.stop()
	return s.writeComparison(a.stdout)
}

// servedConfig is the load the flags ask a dashboard to follow: a pair
// (--compare), a split (--split-by), or with neither one runner.
type servedConfig struct {
	run   runner.Config
	pair  *compare.Config
	split *compare.SplitConfig
}

// servedConfig checks the comparison's flags and builds the load's
// configuration over cfg; it starts nothing.
func (cf *compareFlags) servedConfig(cfg runner.Config) (servedConfig, error) {
	switch {
	case cf.splitBy != "":
		sc, err := cf.splitConfig(cfg)
		return servedConfig{split: &sc}, err
	case cf.used():
		pc, err := cf.pairConfig(cfg)
		return servedConfig{pair: &pc}, err
	}
	return servedConfig{run: cfg}, nil
}

// startServed starts the load sc describes, with the app's hooks, its
// errors in the command line's words; ctx bounds only the start.
func (a *app) startServed(ctx context.Context, sc servedConfig) (served, error) {
	switch {
	case sc.pair != nil:
		p, err := a.startPair(ctx, *sc.pair)
		if err != nil {
			return served{}, err
		}
		return served{run: p.Runner(compare.Baseline), pair: p}, nil
	case sc.split != nil:
		sp, err := a.startSplit(ctx, *sc.split)
		if err != nil {
			return served{}, err
		}
		return served{run: sp.Runner(), split: sp, splitBy: sc.split.Run.Probe.SplitBy.String()}, nil
	}
	r, err := a.start(ctx, sc.run)
	if err != nil {
		return served{}, err
	}
	return servedRun(r), nil
}
