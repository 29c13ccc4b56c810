package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

// TestGateRegression: a live breach ends the run only once it has stood
// the grace period; a look without one starts the period again; an
// unarmed gate ends nothing.
func TestGateRegression(t *testing.T) {
	t0 := time.Unix(1000, 0)
	breach := Look{Breaches: []compare.Failure{{Expr: "ttft_p99<+10%", Kind: compare.Breached}}}
	g := Gate{On: true}
	for _, step := range []struct {
		at   time.Duration
		look Look
		stop bool
	}{
		{0, breach, false},
		{1900 * time.Millisecond, breach, false},
		{2100 * time.Millisecond, Look{}, false}, // held: the period starts again
		{2200 * time.Millisecond, breach, false},
		{4100 * time.Millisecond, breach, false},
		{4200 * time.Millisecond, breach, true}, // 2 s since 2.2 s
	} {
		if got := g.Regression(step.look, t0.Add(step.at)); (len(got) > 0) != step.stop {
			t.Fatalf("at %v: %v, want stop %v", step.at, got, step.stop)
		}
	}
	off := Gate{}
	if got := off.Regression(breach, t0); got != nil || off.Regression(breach, t0.Add(time.Hour)) != nil {
		t.Fatal("an unarmed gate ended the run")
	}
}

// TestGateAnytime: a breach of a confidence sequence ends the run at its
// first look (its error already covers every look); unarmed, nothing.
func TestGateAnytime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	breach := Look{Breaches: []compare.Failure{{Expr: "ttft_p99<+10%", Kind: compare.Breached}}, Anytime: true}
	g := Gate{On: true}
	if got := g.Regression(Look{Anytime: true}, t0); got != nil {
		t.Fatalf("no breach: %v", got)
	}
	if got := g.Regression(breach, t0.Add(time.Second)); len(got) != 1 {
		t.Fatalf("first anytime breach: %v, want it at once", got)
	}
	off := Gate{}
	if off.Regression(breach, t0) != nil {
		t.Fatal("an unarmed gate ended the run")
	}
}

// side is a Side whose objectives all break.
type side struct{ checked int }

func (s *side) Subscribe() (<-chan load.Snapshot, func()) { return nil, func() {} }
func (s *side) Latest() load.Snapshot                     { return load.Snapshot{} }
func (s *side) Objectives() []slo.Objective               { return nil }
func (s *side) Figures(load.Snapshot) telemetry.Figures   { return telemetry.Figures{} }
func (s *side) Check(_ load.Snapshot, scope string) []slo.Verdict {
	s.checked++
	return []slo.Verdict{{Objective: slo.Objective{Expr: "ttft_p99<=1ms"}, Scope: scope}, {Objective: slo.Objective{Expr: "error_rate<1%"}, Held: true, Scope: scope}}
}

// TestGateSLO: an SLO is judged at its first full window only (the run
// has lasted one and the window holds all of it but the second filling),
// never while the run ends, and not at all with the gate off.
func TestGateSLO(t *testing.T) {
	g := Gate{On: true, Window: 10 * time.Second}
	sd := &side{}
	for _, c := range []struct {
		s    load.Snapshot
		want int
	}{
		{load.Snapshot{Elapsed: 9 * time.Second, Covered: 9 * time.Second}, 0},
		{load.Snapshot{Elapsed: 10 * time.Second, Covered: 9 * time.Second}, 0},
		{load.Snapshot{Elapsed: 10 * time.Second, Covered: 9500 * time.Millisecond}, 1},
		{load.Snapshot{Elapsed: 12 * time.Second, Covered: 10 * time.Second, DoneWhy: "interrupted"}, 0},
	} {
		got := g.SLO(sd, c.s)
		if len(got) != c.want {
			t.Fatalf("%+v: %v, want %d breaches", c.s, got, c.want)
		}
		if c.want > 0 && !strings.HasPrefix(got[0].Scope, "window ending 10s") {
			t.Fatalf("scope %q", got[0].Scope)
		}
	}
	off := Gate{Window: 10 * time.Second}
	if off.SLO(sd, load.Snapshot{Elapsed: time.Minute, Covered: time.Minute}) != nil {
		t.Fatal("an unarmed gate judged a window")
	}
}

// TestNothingCompleted: one rule for every kind of load: nothing
// completed is a failed run, whether the requests failed (the most
// frequent reason said, "unreachable" when every one was refused) or
// never finished.
func TestNothingCompleted(t *testing.T) {
	if err := NothingCompleted(load.Snapshot{Run: load.Phase{Completed: 1, Failed: 9}}); err != nil {
		t.Fatalf("one completed: %v", err)
	}
	hung := load.Snapshot{Run: load.Phase{Incomplete: 4}}
	if err := NothingCompleted(hung); !errors.Is(err, ErrNothingCompleted) || !strings.Contains(err.Error(), "4 requests sent, none finished") {
		t.Fatalf("all incomplete: %v", err)
	}
	if err := NothingCompleted(load.Snapshot{}); !errors.Is(err, ErrNothingCompleted) {
		t.Fatalf("none sent: %v", err)
	}
	refused := load.Snapshot{Run: load.Phase{Failed: 3}, TotalFailed: 3,
		Errors: []load.ErrorCount{{Class: probe.Connection, Count: 3, Message: "connection refused"}}}
	refused.TotalByClass[probe.Connection] = 3
	if err := NothingCompleted(refused); err == nil || !strings.HasPrefix(err.Error(), "the endpoint was unreachable: 3 sent, 3 failed; the most frequent reason (3 of them): ") {
		t.Fatalf("refused: %v", err)
	}
	failed := refused
	failed.TotalByClass[probe.Connection] = 1
	if err := NothingCompleted(failed); err == nil || !strings.HasPrefix(err.Error(), "every request failed: 3 sent, 3 failed; the most frequent reason (3 of them): ") {
		t.Fatalf("failed: %v", err)
	}
}

// TestNewPlan: a search starts its load paused; over the rate in the
// open loop, at least the slowest rate; a matrix over the rate with no
// objectives needs a rate to measure at.
func TestNewPlan(t *testing.T) {
	k := load.Knobs{Concurrency: 8}
	p, err := NewPlan(capacity.Search{Over: capacity.Concurrency}, nil, &k)
	if err != nil || !k.Paused || p.At != 8 || p.Knobs != k {
		t.Fatalf("concurrency: %+v, %v (knobs %+v)", p, err, k)
	}
	k = load.Knobs{Concurrency: 8}
	if _, err := NewPlan(capacity.Search{Over: capacity.Rate}, &capacity.Matrix{}, &k); !errors.Is(err, ErrNoRate) {
		t.Fatalf("a matrix over no rate: %v", err)
	}
	k = load.Knobs{Concurrency: 8}
	p, err = NewPlan(capacity.Search{Over: capacity.Rate, Objectives: []slo.Objective{{Expr: "x"}}}, nil, &k)
	if err != nil || k.Mode != load.OpenLoop || k.Rate != load.MinRate || p.At != 0 {
		t.Fatalf("rate: %+v, %v (knobs %+v)", p, err, k)
	}
}
