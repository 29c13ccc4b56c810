// Package compare puts one load on two endpoints at once (a canary against
// a baseline) and says, live, whether the canary is slower or fails more.
//
// A Pair is two runners driven by one set of knobs: the same load.Config
// (the same seed, so the same prompts in the same order), each endpoint
// its own engine (the closed loop's concurrency on each, the open loop's
// rate on each), started at the same moment, every knob change applied to
// both (Pair is a controller, as the dashboard's keys want one). Beside
// the engines it keeps the newest requests of each side (Samples) and
// compares them every second with a paired block bootstrap (judge): a
// verdict per statistic with an interval of the canary's difference, and
// a line for a person, "canary slower: TTFT p99 +38% (…)".
package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/exporter"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
)

// Config is a comparison: the baseline's load, and where the canary is.
type Config struct {
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
	Options Options
	// Samples is how many of the newest requests a side keeps per metric
	// (0: DefaultSamples).
	Samples int
	// Every is how often the live comparison is computed (default 1 s).
	Every time.Duration
}

// StartError is a side that could not start.
type StartError struct {
	Side Side
	Err  error
}

func (e *StartError) Error() string { return e.Side.String() + ": " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// errOtherSide fails a side's start when the other side's failed.
var errOtherSide = errors.New("the other side did not start")

// Pair is two loads under one set of knobs. Its methods are safe from any
// goroutine.
type Pair struct {
	cfg     Config
	runners [2]*runner.Runner
	samples *Samples
	live    atomic.Pointer[Comparison]
	evals   atomic.Uint64
	// knobsMu makes a knob change one step on both sides: two
	// controllers at once (SSH sessions, --local) would otherwise
	// interleave and leave the sides on different settings.
	knobsMu sync.Mutex

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopX    func()
	stopOnce sync.Once
	stopErr  error
}

// Start starts both runners at once: each does its detection and model
// discovery, then waits for the other (runner.Config.Ready), so both
// engines start together. When a side fails, both are stopped and the
// error is a *StartError naming the side.
func Start(ctx context.Context, cfg Config) (_ *Pair, err error) {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	stats := Stats(cfg.Options.Regressions)
	p := &Pair{cfg: cfg, stopX: func() {}, samples: NewSamples(stats, cfg.Samples, time.Now())}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	cfgs := [2]runner.Config{cfg.Baseline, cfg.Baseline}
	c := &cfgs[Canary]
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
		cfgs[Baseline].Notes = notes
		c.Notes = prefixWriter{w: notes, prefix: "infertop: canary: "}
	}
	c.Load.Stages = append([]load.Stage(nil), cfg.Baseline.Load.Stages...)
	if ds := cfg.Baseline.Load.Dataset; ds != nil { // a cursor each, from the first prompt
		cfgs[Baseline].Load.Dataset, c.Load.Dataset = ds.Clone(), ds.Clone()
	}
	var xs []*exporter.Exporter
	if addr := cfg.Baseline.MetricsAddr; addr != "" {
		ln, err := exporter.Listen(addr)
		if err != nil {
			return nil, &StartError{Baseline, &runner.SettingError{Setting: runner.SettingMetricsAddr, Err: err}}
		}
		for i := range cfgs {
			x := exporter.ForTarget(cfg.Baseline.Objectives, Side(i).String(), i == 0)
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
		side := Side(i)
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
			return nil, &StartError{Side(i), e}
		}
	}
	for i, e := range errs {
		if e != nil {
			return nil, &StartError{Side(i), e}
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
			c := p.Compare(0)
			p.live.Store(&c)
		}
	}
}

// Compare compares the sides now with resamples bootstrap replicates (0:
// the configured number); each call draws afresh (a seed of its own).
func (p *Pair) Compare(resamples int) Comparison {
	o := p.cfg.Options
	if resamples > 0 {
		o.Resamples = resamples
	}
	o.Seed += p.evals.Add(1)
	return p.samples.Compare(o)
}

// Comparison is the newest live comparison (computed every Config.Every);
// ok is false before the first.
func (p *Pair) Comparison() (c Comparison, ok bool) {
	if l := p.live.Load(); l != nil {
		return *l, true
	}
	return Comparison{}, false
}

// Runner is one side's runner.
func (p *Pair) Runner(s Side) *runner.Runner { return p.runners[s] }

// Update changes the knobs of both sides: f moves the baseline's, and the
// canary's are set to the result, so both stay the same even if a walk
// moved one (the ui.Controller's Update).
func (p *Pair) Update(f func(*load.Knobs)) load.Knobs {
	p.knobsMu.Lock()
	defer p.knobsMu.Unlock()
	k := p.runners[Baseline].Engine().Update(f)
	p.runners[Canary].Engine().Update(func(c *load.Knobs) { *c = k })
	p.samples.SetKnobs(k)
	return k
}

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
}

// Finish ends both runs for why (see load.Engine.Finish).
func (p *Pair) Finish(why string) {
	for _, r := range p.runners {
		r.Engine().Finish(why)
	}
}

// Stop stops the live comparison and both runners (see runner.Stop), and
// the exporter they share; the samples stay for a last Compare. The first
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
					errs = append(errs, fmt.Errorf("%s: %w", Side(i), err))
				}
			}
		}
		p.stopX()
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

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
