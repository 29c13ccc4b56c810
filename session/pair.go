package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/exporter"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// PairConfig is a comparison: the baseline's load, and where the canary is.
type PairConfig struct {
	// Baseline is the load on the baseline; the canary gets the same, with
	// URL, Model and the outputs below changed. Its MetricsAddr serves
	// both sides, each series labelled target="baseline" or "canary".
	Baseline runner.Config
	// CanaryURL is the canary's endpoint; CanaryModel its model name when
	// it serves another (empty: the baseline's --model, else its first).
	CanaryURL, CanaryModel string
	// CanaryRequestsLog is the canary's requests log (empty: none).
	CanaryRequestsLog string
	// Options configure the live comparison (Regressions, Confidence).
	Options compare.Options
	// Samples is how many of the newest requests a side keeps per metric
	// (0: DefaultSamples).
	Samples int
	// Every is how often the live comparison is computed (default 1 s).
	Every time.Duration
}

// StartError is a side that could not start.
type StartError struct {
	Side compare.Side
	Err  error
}

func (e *StartError) Error() string { return e.Side.String() + ": " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// errOtherSide fails a side's start when the other side's failed.
var errOtherSide = errors.New("the other side did not start")

// runners are a comparison's two loads on this machine: one load on two
// endpoints at once, a canary against a baseline, two runners driven by
// one set of knobs: the same load.Config (the same seed, so the same
// prompts in the same order), each endpoint its own engine (the closed
// loop's concurrency on each, the open loop's rate on each), started at
// the same moment, every knob change applied to both (runners is the
// controller the dashboard's keys act on). Beside the engines it keeps
// the newest requests of each side (compare.Samples), the Pair's source.
// Its methods are safe from any goroutine.
type runners struct {
	cfg     PairConfig
	runners [2]*runner.Runner
	samples *compare.Samples
	// knobsMu makes a knob change one step on both sides: two
	// controllers at once (SSH sessions, --local) would otherwise
	// interleave and leave the sides on different settings.
	knobsMu sync.Mutex
	// onReset forgets the Pair's verdicts of earlier settings.
	onReset func()

	stopX    func()
	stopOnce sync.Once
	xOnce    sync.Once // stopX, from Stop or from Release
	stopErr  error
}

// startPair starts both runners at once: each does its detection and
// model discovery, then waits for the other (runner.Config.Ready), so
// both engines start together; then the live comparison of their
// requests. When a side fails, both are stopped and the error is a
// *StartError naming the side.
func startPair(ctx context.Context, cfg PairConfig) (*Pair, error) {
	rs, err := startRunners(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := newPair(rs, rs.samples, cfg.Options, cfg.Every)
	rs.onReset = p.settings.v.Reset
	return p, nil
}

// startRunners starts both runners at once (startPair).
func startRunners(ctx context.Context, cfg PairConfig) (_ *runners, err error) {
	stats := statsOf(cfg.Options.Regressions, cfg.Baseline)
	p := &runners{cfg: cfg, stopX: func() {}, samples: compare.NewSamples(stats, cfg.Samples, time.Now()), onReset: func() {}}
	// Every request counted per value only for the sequences (hot path).
	p.samples.SetAnytime(cfg.Options.Anytime)
	defer func() {
		if err != nil {
			p.stop()
			p.release()
		}
	}()
	cfgs := [2]runner.Config{cfg.Baseline, cfg.Baseline}
	c := &cfgs[compare.Canary]
	c.URL, c.RequestsLog = cfg.CanaryURL, cfg.CanaryRequestsLog
	if cfg.CanaryModel != "" {
		c.Probe.Model = cfg.CanaryModel
	}
	// The GPUs and an explicit server metrics URL are the baseline's.
	c.Telemetry.GPUMetrics, c.Telemetry.GPULocal = "", false
	if c.Telemetry.ServerMetrics != runner.ServerMetricsOff {
		c.Telemetry.ServerMetrics = ""
	}
	// Both sides start at once and may note something at the same moment:
	// one lock for the one writer.
	if cfg.Baseline.Notes != nil {
		notes := LockedWriter{Mu: new(sync.Mutex), W: cfg.Baseline.Notes}
		cfgs[compare.Baseline].Notes = notes
		c.Notes = prefixWriter{w: notes, prefix: "infertop: canary: "}
	}
	for i := range cfgs {
		cfgs[i].Name = compare.Side(i).String()
	}
	c.Load.Stages = append([]load.Stage(nil), cfg.Baseline.Load.Stages...)
	if ds := cfg.Baseline.Load.Dataset; ds != nil { // a cursor each, from the first prompt
		cfgs[compare.Baseline].Load.Dataset, c.Load.Dataset = ds.Clone(), ds.Clone()
	}
	var xs []*exporter.Exporter
	if addr := cfg.Baseline.MetricsAddr; addr != "" {
		ln, err := exporter.Listen(addr)
		if err != nil {
			return nil, &StartError{compare.Baseline, &runner.SettingError{Setting: runner.SettingMetricsAddr, Err: err}}
		}
		for i := range cfgs {
			x := exporter.ForTarget(cfg.Baseline.Objectives, compare.Side(i).String(), i == 0)
			cfgs[i].Exporter, cfgs[i].MetricsAddr, xs = x, "", append(xs, x)
		}
		xctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); defer crash.Recover(); exporter.Serve(xctx, ln, xs...) }()
		p.stopX = func() { stop(); <-done }
	}
	var arrived [2]chan struct{}
	failed := make(chan struct{})
	for i := range cfgs {
		side := compare.Side(i)
		arrived[i] = make(chan struct{})
		next := cfgs[i].Load.OnResult
		cfgs[i].Load.OnResult = func(rec load.Record) {
			p.samples.Observe(side, rec, time.Now())
			if next != nil {
				next(rec)
			}
		}
		cfgs[i].Ready = func(ctx context.Context) error {
			close(arrived[side])
			select {
			case <-arrived[1-side]:
				return nil
			case <-failed:
				return errOtherSide
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	var errs [2]error
	var wg sync.WaitGroup
	var failOnce sync.Once
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer crash.Recover()
			p.runners[i], errs[i] = runner.Start(ctx, cfgs[i])
			if errs[i] != nil {
				failOnce.Do(func() { close(failed) })
			}
		}()
	}
	wg.Wait()
	for i, e := range errs { // the side that failed first, not the one it took down
		if e != nil && !errors.Is(e, errOtherSide) {
			return nil, &StartError{compare.Side(i), e}
		}
	}
	for i, e := range errs {
		if e != nil {
			return nil, &StartError{compare.Side(i), e}
		}
	}
	return p, nil
}

// Runner is one side's runner.
func (p *runners) Runner(s compare.Side) *runner.Runner { return p.runners[s] }

// Update changes the knobs of both sides: f moves the baseline's, and the
// canary's are set to the result, so both stay the same even if a walk
// moved one (load.Controller's Update).
func (p *runners) Update(f func(*load.Knobs)) load.Knobs {
	p.knobsMu.Lock()
	defer p.knobsMu.Unlock()
	k := p.runners[compare.Baseline].Engine().Update(f)
	p.runners[compare.Canary].Engine().Update(func(c *load.Knobs) { *c = k })
	p.samples.SetKnobs(k)
	return k
}

// NewPhaseFrom changes the knobs of both sides as Update does and starts
// a phase on each, of an id at least least, the canary's the baseline's
// (load.Engine.NewPhaseFrom): an agent of a comparison numbers its phases
// as its follower names them, on both sides alike.
func (p *runners) NewPhaseFrom(least int, f func(*load.Knobs)) (load.Knobs, int) {
	p.knobsMu.Lock()
	defer p.knobsMu.Unlock()
	k, id := p.runners[compare.Baseline].Engine().NewPhaseFrom(least, f)
	p.runners[compare.Canary].Engine().NewPhaseFrom(id, func(c *load.Knobs) { *c = k })
	p.samples.SetKnobs(k)
	return k, id
}

// NewPhase is NewPhaseFrom past every phase begun.
func (p *runners) NewPhase(f func(*load.Knobs)) (load.Knobs, int) { return p.NewPhaseFrom(0, f) }

// Knobs are the baseline's knobs now (both sides have the same).
func (p *runners) Knobs() load.Knobs { return p.runners[compare.Baseline].Engine().Knobs() }

// SetWindow selects both sides' rolling window.
func (p *runners) SetWindow(w time.Duration) {
	for _, r := range p.runners {
		r.Engine().SetWindow(w)
	}
}

// Reset forgets both sides' statistics, the comparison's samples and the
// verdicts of earlier settings.
func (p *runners) Reset() {
	p.knobsMu.Lock()
	defer p.knobsMu.Unlock()
	for _, r := range p.runners {
		r.Engine().Reset()
	}
	p.samples.Reset(time.Now())
	p.onReset()
}

// Finish ends both runs for why (see load.Engine.Finish).
func (p *runners) Finish(why string) {
	for _, r := range p.runners {
		r.Engine().Finish(why)
	}
}

// stop stops both runners (see runner.Stop), and the exporter they share
// (unless the baseline holds it: see release); the samples stay for a
// last Compare. The first runner error is returned, every time.
func (p *runners) stop() error {
	p.stopOnce.Do(func() {
		var errs []error
		for i, r := range p.runners {
			if r != nil {
				if err := r.Stop(); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", compare.Side(i), err))
				}
			}
		}
		if !p.cfg.Baseline.HoldMetrics {
			p.release()
		}
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// release stops serving the metrics both sides share, which stop leaves
// served under the baseline's runner.Config.HoldMetrics; it may be called
// more than once.
func (p *runners) release() { p.xOnce.Do(p.stopX) }

func (p *runners) sides() [2]Side {
	return [2]Side{p.runners[compare.Baseline], p.runners[compare.Canary]}
}

func (p *runners) controller() load.Controller { return p }
func (p *runners) finish(why string)           { p.Finish(why) }

func (p *runners) names() [2]string {
	return [2]string{sanitize.Text(p.runners[compare.Baseline].Target().URL), sanitize.Text(p.runners[compare.Canary].Target().URL)}
}

func (p *runners) what() string {
	n := p.names()
	return n[0] + " against the canary " + n[1]
}

// reports are both sides' reports of last.
func (p *runners) reports(ctx context.Context, last [2]load.Snapshot) ([2]*report.Report, error) {
	var reps [2]*report.Report
	for i, r := range p.runners {
		reps[i] = r.Report(ctx, last[i])
	}
	return reps, nil
}

// saved are the s key's reports: the baseline's as snap shows it, the
// canary's latest, at the runner's SaveBase (infertop-START).
func (p *runners) saved(ctx context.Context, snap load.Snapshot, dir string) ([2]*report.Report, string, error) {
	b, c := p.runners[compare.Baseline], p.runners[compare.Canary]
	return [2]*report.Report{b.Report(ctx, snap), c.Report(ctx, c.Latest())}, b.SaveBase(dir), nil
}

// PairSource is what a comparison is judged from: the per-request
// samples of two runners (compare.Samples) or the agents' two merges'
// binned seconds (fleet.Pair).
type PairSource interface {
	// Compare compares the sides now with o.
	Compare(o compare.Options) compare.Comparison
	// Knobs are the setting compared and its epoch, which changes
	// whenever the comparison starts over; ok is false before one.
	Knobs() (k load.Knobs, epoch int, ok bool)
}

// pairLoads are the two loads a Pair compares: two runners on this
// machine (runners), or the agents' two merges (merges).
type pairLoads interface {
	sides() [2]Side
	controller() load.Controller
	finish(why string)
	stop() error
	release()
	// names are the sides' names in the comparison's table; what the
	// pair's, in a line.
	names() [2]string
	what() string
	// reports are both sides' reports of last, at the run's end; saved
	// the s key's, with the path they are saved at (no extension).
	reports(ctx context.Context, last [2]load.Snapshot) ([2]*report.Report, error)
	saved(ctx context.Context, snap load.Snapshot, dir string) ([2]*report.Report, string, error)
}

// Pair is a comparison of two loads, a canary against a baseline, of
// either kind (pairLoads), judged live from its source (PairSource) with
// compare's paired block bootstrap, or with Options.Anytime its
// confidence sequences (valid at every look, so the gate acts on their
// first breach): it says live whether the canary is slower or fails
// more. Its methods are safe from any goroutine.
type Pair struct {
	loads pairLoads
	src   PairSource
	opts  compare.Options
	evals atomic.Uint64
	// settings keeps each knob setting's last live verdict.
	settings settings
	live     live[compare.Comparison]
}

// newPair compares l's two loads from src with o, every every (1 s when
// not positive).
func newPair(l pairLoads, src PairSource, o compare.Options, every time.Duration) *Pair {
	p := &Pair{loads: l, src: src, opts: o}
	p.settings.knobs = src.Knobs
	p.live.start(every, &p.settings, func() compare.Comparison { return p.Compare(0) })
	return p
}

// Compare compares the sides now with resamples bootstrap replicates (0:
// the configured number); each call draws afresh (a seed of its own).
func (p *Pair) Compare(resamples int) compare.Comparison {
	o := p.opts
	if resamples > 0 {
		o.Resamples = resamples
	}
	o.Seed += p.evals.Add(1)
	return p.src.Compare(o)
}

// Comparison is the newest live comparison; ok is false before the
// first.
func (p *Pair) Comparison() (compare.Comparison, bool) { return p.live.get() }

// Runner is one side's runner, in a comparison of two runners (nil in
// the agents').
func (p *Pair) Runner(s compare.Side) *runner.Runner {
	if rs, ok := p.loads.(*runners); ok {
		return rs.Runner(s)
	}
	return nil
}

// What names the pair: the baseline against the canary.
func (p *Pair) What() string { return p.loads.what() }

// Sides are the baseline's load and the canary's.
func (p *Pair) Sides() []Side {
	s := p.loads.sides()
	return s[:]
}

// Controller moves both loads.
func (p *Pair) Controller() load.Controller { return p.loads.controller() }

// Finish ends both runs for why.
func (p *Pair) Finish(why string) { p.loads.finish(why) }

// Stop stops the live comparison and both loads; the source stays for a
// last Compare. The first load error is returned, every time.
func (p *Pair) Stop() error {
	p.live.stop()
	return p.loads.stop()
}

// Release stops serving the metrics both sides share where Stop left
// them served; it may be called more than once.
func (p *Pair) Release() { p.loads.release() }

// Live is the newest live comparison.
func (p *Pair) Live() (Look, bool) {
	c, ok := p.Comparison()
	if !ok {
		return Look{}, false
	}
	return ComparedLook(c), true
}

// table writes cmp's table, then the verdicts of earlier settings.
func (p *Pair) table(cmp compare.Comparison) func(io.Writer) error {
	n := p.loads.names()
	return p.settings.table(func(w io.Writer) error { return cmp.WriteTable(w, n[0], n[1]) })
}

// Conclude is both sides' reports, the baseline's holding the comparison
// (the last word: more resamples than the live line's; with
// Options.Anytime the same sequences at the last look) and the canary's
// whole report, and the comparison's gates that did not pass.
func (p *Pair) Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion {
	var l [2]load.Snapshot
	copy(l[:], last)
	reps, err := p.loads.reports(ctx, l)
	if err != nil {
		return Conclusion{Err: err}
	}
	for i := range reps {
		if i < len(breaches) {
			reps[i].Verdicts = append(reps[i].Verdicts, breaches[i]...)
		}
	}
	cmp := p.Compare(2 * compare.DefaultResamples)
	return Compared(reps, cmp, p.table(cmp))
}

// Compared is the end of a comparison of two loads (a Pair, or agents
// comparing a canary): both sides' reports, the baseline's holding the
// comparison and the canary's whole report (withComparison), the
// comparison's gates that did not pass, and table, which writes its
// table.
func Compared(reps [2]*report.Report, cmp compare.Comparison, table func(io.Writer) error) Conclusion {
	c := Conclusion{Reports: reps[:], Failures: cmp.Failures(), Breached: cmp.Breached(), Table: table,
		Headline: "the canary regressed, a regression went unjudged or an SLO broke"}
	if err := withComparison(reps, cmp); err != nil {
		c.Err = err
	}
	return c
}

// ComparedLook is a comparison of two loads as a follower reads it live.
func ComparedLook(c compare.Comparison) Look {
	return Look{Line: c.Line(), Breaches: c.Breaches(), Regressed: "the canary regressed", Anytime: c.Anytime}
}

// withComparison puts the comparison and the canary's whole report into
// the baseline's JSON, as infertop.compare: one file holds the run.
func withComparison(reps [2]*report.Report, cmp compare.Comparison) error {
	var cj bytes.Buffer
	if err := reps[1].WriteJSON(&cj); err != nil {
		return fmt.Errorf("the canary's report: %w", err)
	}
	j := cmp.PairJSON(reps[0].Manifest.URL, reps[0].Manifest.Model, cj.Bytes())
	reps[0].Compare = &report.Compare{Pair: &j}
	return nil
}

// Save is the s key's save in a comparison: what `run --compare` writes,
// for the run so far. The baseline's reports at base (infertop-START.json,
// .csv, .txt, .html), its JSON holding infertop.compare with the canary's
// whole report; the canary's beside them, named as CanaryPath names its
// requests log (infertop-START.canary.json, …); and the comparison's
// table (infertop-START.compare.txt). The comparison is the live one, the
// verdict on screen (a fresh one before the first).
func (p *Pair) Save(ctx context.Context, s load.Snapshot, dir string) (string, error) {
	cmp, ok := p.Comparison()
	if !ok {
		cmp = p.Compare(0)
	}
	reps, base, err := p.loads.saved(ctx, s, dir)
	if err != nil {
		return "", err
	}
	return SaveCompared(reps, cmp, base, p.table(cmp))
}

// SaveCompared writes a comparison's files at base (a path without an
// extension, infertop-START): the baseline's reports (base.json, .csv,
// .txt, .html) holding the comparison and the canary's whole report, the
// canary's beside them (base.canary.json, ...), and the comparison's
// table (base.compare.txt, written by table); it says where.
func SaveCompared(reps [2]*report.Report, cmp compare.Comparison, base string, table func(io.Writer) error) (string, error) {
	if err := withComparison(reps, cmp); err != nil {
		return "", err
	}
	if _, err := runner.SaveAs(reps[1], CanaryPath(base)); err != nil { // CanaryPath adds .canary
		return "", fmt.Errorf("the canary's: %w", err)
	}
	if err := saveWithTable(reps[0], base, table); err != nil {
		return "", err
	}
	return base + "{,.canary}.{json,csv,txt,html} and " + filepath.Base(base) + ".compare.txt", nil
}

// saveWithTable writes rep's reports at base (base.json, .csv, .txt,
// .html) and the comparison's table beside them (base.compare.txt).
func saveWithTable(rep *report.Report, base string, table func(io.Writer) error) error {
	if _, err := runner.SaveAs(rep, base); err != nil {
		return err
	}
	var t bytes.Buffer
	if err := table(&t); err != nil {
		return fmt.Errorf("the comparison: %w", err)
	}
	return runner.ReplaceFile(base+".compare.txt", t.Bytes())
}

// View: the live comparison and the canary's snapshots; no capacity
// search (it would drive the baseline's knobs and leave the canary
// behind).
func (p *Pair) View() View {
	return View{Compare: p.Comparison, Canary: p.loads.sides()[compare.Canary].Subscribe}
}

// LastWord is the comparison's table, the last word.
func (p *Pair) LastWord(w io.Writer) error {
	return p.table(p.Compare(2 * compare.DefaultResamples))(w)
}

// CanaryPath is the canary's file beside the baseline's: run.jsonl ->
// run.canary.jsonl ("" stays "").
func CanaryPath(path string) string {
	if path == "" {
		return ""
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".canary" + ext
}

// PrefixNotes is w with prefix put before each line a runner's notes
// write, instead of their own "infertop: ", so that a load beside the
// main one (a pair's canary, a watch's probe) says whose its notes are.
func PrefixNotes(w io.Writer, prefix string) io.Writer { return prefixWriter{w: w, prefix: prefix} }

// prefixWriter is PrefixNotes' writer.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

// LockedWriter is W with each Write under Mu: writers of their own
// goroutines sharing one (a comparison's two sides' notes; a follower's
// progress beside the agents' pollers' log, which holds Mu itself).
type LockedWriter struct {
	Mu *sync.Mutex
	W  io.Writer
}

func (l LockedWriter) Write(b []byte) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.W.Write(b)
}

func (pw prefixWriter) Write(b []byte) (int, error) {
	if pw.w == nil {
		return len(b), nil
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			out.WriteString(pw.prefix + strings.TrimPrefix(line, "infertop: "))
		}
	}
	if _, err := io.WriteString(pw.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// statsOf are the statistics a comparison of cfg's load judges: the
// defaults and regs', and the invalid rate where the load judges answers
// (--response-format, --tools), so nothing changes for one that does not.
func statsOf(regs []compare.Regression, cfg runner.Config) []compare.Stat {
	if cfg.Probe.Body.Output.IsZero() {
		return compare.Stats(regs)
	}
	return compare.Stats(regs, compare.InvalidRate())
}
