// Package watch follows a fleet's servers through their own metrics and
// sends nothing to the model: every pod of vLLM, SGLang, TGI,
// TensorRT-LLM, Triton or llama.cpp already counts its real traffic in
// /metrics. Each tick a Source reads every server (scraping each
// target's /metrics, or one query to a Prometheus that already scrapes
// them); the Watch turns each server's counters and histogram buckets
// into increments (a counter that falls is a restart, never a negative
// rate), keeps a rolling window per server and per group (a revision:
// the baseline and the canary), and judges the canary group against the
// baseline group on the servers' own buckets with the anytime-valid
// statistics of package compare, which stay right however often the
// verdict is read.
//
// A watch is not a load: it has no controller, no phases and no
// requests of its own, so it is not a session.Session; the command
// layer starts it (Start) as session.Start starts a load.
package watch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/latest"
	"github.com/infertop/infertop/slo"
)

// Target is one server of the fleet: its name as shown (a pod, an
// address), its metrics URL, and its group (the revision it runs).
type Target struct {
	Name, URL, Group string
}

// Observation is one server's reading at a tick, or why there was none.
type Observation struct {
	Target  Target
	Reading engines.Reading
	Err     error
}

// Source reads every server of the fleet once. It returns the servers
// it knows of now (a server it no longer lists has left the fleet);
// err is a failure of the source as a whole (the Kubernetes API, the
// Prometheus server), for which the last servers are kept.
type Source interface {
	Read(ctx context.Context) ([]Observation, error)
	// String names the source in a line, without secrets.
	String() string
}

// Config is a watch's settings.
type Config struct {
	// Source reads the fleet.
	Source Source
	// Every is the interval between reads (default 1 s); Window the span
	// of the rolling figures (default 60 s).
	Every, Window time.Duration
	// Baseline and Canary name the groups compared. Empty: with exactly
	// two groups, the one whose name says canary (preview, new, next), or
	// the other's stable (baseline, primary, prod, old), is the canary;
	// else the one with fewer servers (a rollout's new revision); a tie
	// of unnamed roles goes by the alphabet.
	Baseline, Canary string
	// Regressions are the canary's allowed worsening (compare's
	// language: ttft_p99<+10%); none: DefaultRegressions, each judged
	// only where both groups' servers report its histogram (llama.cpp
	// has no ITL's), while one given is judged always.
	Regressions []compare.Regression
	defaulted   bool
	// Objectives are checked on every group (slo's language).
	Objectives []slo.Objective
	// Alpha is the verdict's family-wise error over the whole watch, at
	// every look (default 0.05), split between the regressions.
	Alpha float64
	// StallAfter is how long a server may run requests without a token
	// before it reads as stalled (default 10 s).
	StallAfter time.Duration
	// GoneAfter is how long a server that left or stopped answering stays
	// in the table (default 5 min).
	GoneAfter time.Duration
	// Probe, if set, is read at every look for the end-to-end probe's
	// figures (a load of real requests through the fleet's Service,
	// followed elsewhere); ok false: nothing to show yet.
	Probe func() (p Probe, ok bool)
}

// DefaultRegressions are judged when none is given: the server's TTFT
// p99 within 10 %, its ITL p50 within 10 %, its errors within half a
// point.
func DefaultRegressions() []compare.Regression {
	var out []compare.Regression
	for _, e := range []string{"ttft_p99<+10%", "itl_p50<+10%", "error_rate<+0.5pp"} {
		r, err := compare.ParseRegression(e)
		if err != nil {
			panic(err) // a constant above
		}
		out = append(out, r)
	}
	return out
}

func (c *Config) defaults() {
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.Window <= 0 {
		c.Window = time.Minute
	}
	if len(c.Regressions) == 0 {
		c.Regressions, c.defaulted = DefaultRegressions(), true
	}
	if c.Alpha <= 0 || c.Alpha >= 1 {
		c.Alpha = 0.05
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 10 * time.Second
	}
	if c.GoneAfter <= 0 {
		c.GoneAfter = 5 * time.Minute
	}
}

// Watch follows a fleet. Run reads it; Subscribe and Latest are safe
// from any goroutine.
type Watch struct {
	cfg   Config
	hub   latest.Hub[Snapshot]
	fleet *fleetState
	// mu guards the fleet's history, which History reads from another
	// goroutine; the rest of the fleet is Run's alone.
	mu sync.Mutex
}

// History is each group's figures at every read so far (the last hour's
// at 1 Hz), for a report's charts.
func (w *Watch) History() map[string][]Point {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string][]Point, len(w.fleet.history))
	for g, h := range w.fleet.history {
		out[g] = append([]Point(nil), h...)
	}
	return out
}

// New builds a watch; it reads nothing until Run.
func New(cfg Config) (*Watch, error) {
	if cfg.Source == nil {
		return nil, fmt.Errorf("watch: no source: %w", ErrNoTargets)
	}
	cfg.defaults()
	for _, r := range cfg.Regressions {
		// The invalid rate reads judged answers: an engine's metrics have none.
		if _, ok := histOf(r.Stat); !ok && !r.Stat.ErrorRate || r.Stat.Invalid {
			return nil, fmt.Errorf("watch: --regression %q: %w", r.Expr, ErrStatistic)
		}
	}
	for _, o := range cfg.Objectives {
		if !objectiveKnown(o) {
			return nil, fmt.Errorf("watch: --slo %q: %w", o.Expr, ErrObjective)
		}
	}
	return &Watch{cfg: cfg, fleet: newFleetState(cfg)}, nil
}

// Run reads the fleet every Every until ctx ends, publishing a snapshot
// after each read; the subscriptions close when it returns. The first
// read is at once.
func (w *Watch) Run(ctx context.Context) {
	defer w.hub.Close()
	start := time.Now()
	t := time.NewTicker(w.cfg.Every)
	defer t.Stop()
	for {
		obs, err := w.cfg.Source.Read(ctx)
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		w.fleet.observe(now, obs, err)
		snap := w.fleet.snapshot(now, now.Sub(start), w.cfg.Source.String())
		if w.cfg.Probe != nil {
			if p, ok := w.cfg.Probe(); ok {
				snap.Probe = &p
			}
		}
		w.mu.Lock()
		w.fleet.remember(snap)
		w.mu.Unlock()
		w.hub.Publish(snap)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Subscribe is a subscription to the snapshots (latest wins); the
// channel closes when Run returns.
func (w *Watch) Subscribe() (<-chan Snapshot, func()) { return w.hub.Subscribe() }

// Latest is the newest snapshot and whether there was one.
func (w *Watch) Latest() (Snapshot, bool) { return w.hub.Latest() }

// Source is what the watch reads, named in a line without secrets.
func (w *Watch) Source() string { return w.cfg.Source.String() }
