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

// Pair puts one load on two endpoints at once, a canary against a
// baseline, and says live whether the canary is slower or fails more. It
// is two runners driven by one set of knobs: the same load.Config (the
// same seed, so the same prompts in the same order), each endpoint its
// own engine (the closed loop's concurrency on each, the open loop's rate
// on each), started at the same moment, every knob change applied to both
// (Pair is the controller the dashboard's keys act on). Beside the engines
// it keeps the newest requests of each side (compare.Samples) and compares
// them every second with compare's paired block bootstrap. Its methods
// are safe from any goroutine.
type Pair struct {
	cfg     PairConfig
	runners [2]*runner.Runner
	samples *compare.Samples
	live    atomic.Pointer[compare.Comparison]
	evals   atomic.Uint64
	// knobsMu makes a knob change one step on both sides: two
	// controllers at once (SSH sessions, --local) would otherwise
	// interleave and leave the sides on different settings.
	knobsMu sync.Mutex

	// settings keeps each knob setting's last live verdict.
	settings settings

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopX    func()
	stopOnce sync.Once
	xOnce    sync.Once // stopX, from Stop or from Release
	stopErr  error
}

// Start starts both runners at once: each does its detection and model
// discovery, then waits for the other (runner.Config.Ready), so both
// engines start together. When a side fails, both are stopped and the
// error is a *StartError naming the side.
func StartPair(ctx context.Context, cfg PairConfig) (_ *Pair, err error) {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	stats := compare.Stats(cfg.Options.Regressions)
	p := &Pair{cfg: cfg, stopX: func() {}, samples: compare.NewSamples(stats, cfg.Samples, time.Now())}
	p.settings.knobs = p.samples.Knobs
	defer func() {
		if err != nil {
			p.Stop()
			p.Release()
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
		notes := &lockedWriter{w: cfg.Baseline.Notes}
		cfgs[compare.Baseline].Notes = notes
		c.Notes = prefixWriter{w: notes, prefix: "infertop: canary: "}
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
	lctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer crash.Recover()
		p.follow(lctx)
	}()
	return p, nil
}

// follow computes the live comparison every cfg.Every until ctx ends.
func (p *Pair) follow(ctx context.Context) {
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.settings.look(func() string {
				c := p.Compare(0)
				p.live.Store(&c)
				return c.Line()
			})
		}
	}
}

// Compare compares the sides now with resamples bootstrap replicates (0:
// the configured number); each call draws afresh (a seed of its own).
func (p *Pair) Compare(resamples int) compare.Comparison {
	o := p.cfg.Options
	if resamples > 0 {
		o.Resamples = resamples
	}
	o.Seed += p.evals.Add(1)
	return p.samples.Compare(o)
}

// Comparison is the newest live comparison (computed every PairConfig.Every);
// ok is false before the first.
func (p *Pair) Comparison() (c compare.Comparison, ok bool) {
	if l := p.live.Load(); l != nil {
		return *l, true
	}
	return compare.Comparison{}, false
}

// Runner is one side's runner.
func (p *Pair) Runner(s compare.Side) *runner.Runner { return p.runners[s] }

// Update changes the knobs of both sides: f moves the baseline's, and the
// canary's are set to the result, so both stay the same even if a walk
// moved one (the ui.Controller's Update).
func (p *Pair) Update(f func(*load.Knobs)) load.Knobs {
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
func (p *Pair) NewPhaseFrom(least int, f func(*load.Knobs)) (load.Knobs, int) {
	p.knobsMu.Lock()
	defer p.knobsMu.Unlock()
	k, id := p.runners[compare.Baseline].Engine().NewPhaseFrom(least, f)
	p.runners[compare.Canary].Engine().NewPhaseFrom(id, func(c *load.Knobs) { *c = k })
	p.samples.SetKnobs(k)
	return k, id
}

// NewPhase is NewPhaseFrom past every phase begun.
func (p *Pair) NewPhase(f func(*load.Knobs)) (load.Knobs, int) { return p.NewPhaseFrom(0, f) }

// SetWindow selects both sides' rolling window.
func (p *Pair) SetWindow(w time.Duration) {
	for _, r := range p.runners {
		r.Engine().SetWindow(w)
	}
}

// Reset forgets both sides' statistics and the comparison's samples.
func (p *Pair) Reset() {
	p.knobsMu.Lock()
	defer p.knobsMu.Unlock()
	for _, r := range p.runners {
		r.Engine().Reset()
	}
	p.samples.Reset(time.Now())
	p.settings.v.Reset()
}

// Finish ends both runs for why (see load.Engine.Finish).
func (p *Pair) Finish(why string) {
	for _, r := range p.runners {
		r.Engine().Finish(why)
	}
}

// Stop stops the live comparison and both runners (see runner.Stop), and
// the exporter they share (unless the baseline holds it: see Release);
// the samples stay for a last Compare. The first
// runner error is returned, every time.
func (p *Pair) Stop() error {
	p.stopOnce.Do(func() {
		if p.cancel != nil {
			p.cancel()
		}
		p.wg.Wait()
		var errs []error
		for i, r := range p.runners {
			if r != nil {
				if err := r.Stop(); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", compare.Side(i), err))
				}
			}
		}
		if !p.cfg.Baseline.HoldMetrics {
			p.Release()
		}
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// Release stops serving the metrics both sides share, which Stop leaves
// served under the baseline's runner.Config.HoldMetrics; it may be called
// more than once.
func (p *Pair) Release() { p.xOnce.Do(p.stopX) }

// prefixWriter puts prefix before each line a runner's notes write,
// instead of their own "infertop: ", so the canary's notes say whose they
// are.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

// lockedWriter serialises the writes of both sides to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
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

// What names the pair: the baseline against the canary.
func (p *Pair) What() string {
	return sanitize.Text(p.runners[compare.Baseline].Target().URL) + " against the canary " + sanitize.Text(p.runners[compare.Canary].Target().URL)
}

// Sides are the baseline's runner and the canary's.
func (p *Pair) Sides() []Side { return []Side{p.runners[compare.Baseline], p.runners[compare.Canary]} }

// Controller is the pair: its knobs move both loads.
func (p *Pair) Controller() Controller { return p }

// Live is the newest live comparison.
func (p *Pair) Live() (Look, bool) {
	c, ok := p.Comparison()
	if !ok {
		return Look{}, false
	}
	return ComparedLook(c), true
}

// Conclude is both sides' reports, the baseline's holding the comparison
// (the last word: more resamples than the live line's) and the canary's
// whole report, and the comparison's gates that did not pass.
func (p *Pair) Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion {
	cmp := p.Compare(2 * compare.DefaultResamples)
	reps := [2]*report.Report{}
	for i, r := range p.runners {
		reps[i] = r.Report(ctx, last[i])
		reps[i].Verdicts = append(reps[i].Verdicts, breaches[i]...)
	}
	base, canary := sanitize.Text(reps[0].Manifest.URL), sanitize.Text(reps[1].Manifest.URL)
	return Compared(reps, cmp, p.settings.table(func(w io.Writer) error { return cmp.WriteTable(w, base, canary) }))
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
	return Look{Line: c.Line(), Breaches: c.Breaches(), Regressed: "the canary regressed"}
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
// for the run so far. The baseline's reports at the runner's SaveBase
// (infertop-START.json, .csv, .txt, .html), its JSON holding
// infertop.compare with the canary's whole report; the canary's beside
// them, named as CanaryPath names its requests log
// (infertop-START.canary.json, …); and the comparison's table
// (infertop-START.compare.txt). The comparison is the live one, the
// verdict on screen (a fresh one before the first).
func (p *Pair) Save(ctx context.Context, s load.Snapshot, dir string) (string, error) {
	cmp, ok := p.Comparison()
	if !ok {
		cmp = p.Compare(0)
	}
	b, c := p.runners[compare.Baseline], p.runners[compare.Canary]
	reps := [2]*report.Report{b.Report(ctx, s), c.Report(ctx, c.Latest())}
	table := p.settings.table(func(w io.Writer) error {
		return cmp.WriteTable(w, sanitize.Text(reps[0].Manifest.URL), sanitize.Text(reps[1].Manifest.URL))
	})
	return SaveCompared(reps, cmp, b.SaveBase(dir), table)
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
	return View{Compare: p.Comparison, Canary: p.runners[compare.Canary].Subscribe}
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

// LastWord is the comparison's table, the last word.
func (p *Pair) LastWord(w io.Writer) error {
	b, c := p.runners[compare.Baseline].Target().URL, p.runners[compare.Canary].Target().URL
	cmp := p.Compare(2 * compare.DefaultResamples)
	return p.settings.table(func(w io.Writer) error { return cmp.WriteTable(w, sanitize.Text(b), sanitize.Text(c)) })(w)
}
