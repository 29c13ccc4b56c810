package load

import (
	"context"
	"testing"
	"time"

	"github.com/infertop/infertop/outputcheck"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestInvalidRateOverSim: with the sim breaking 2 % of its tool calls,
// the invalid rate of 5,000 judged answers reads 2 % ± 0.5 % in the run,
// its phase and the window, every completed answer judged; a goodput that
// asks for valid answers leaves the broken ones out.
func TestInvalidRateOverSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	p.Invalid = 0.02
	srv := simtest.Start(t, p)
	client, err := probe.New(probe.Config{URL: srv.ChatURL, Model: p.Model, MaxConns: 64,
		Body: probe.BodyOptions{Output: &outputcheck.Spec{Tools: outputcheck.Builtin()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	const n = 5000
	eng, err := New(Config{Do: client.Do, Knobs: Knobs{Concurrency: 64, PromptTokens: 4, OutputTokens: 4}, Tick: 50 * time.Millisecond,
		MaxRequests: n, NoCalibrate: true, Window: 5 * time.Minute, Goodput: Goodput{Valid: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	s := waitFor(t, eng, 90*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	run := s.Run
	if run.Completed != n || run.Valid+run.Invalid != n {
		t.Fatalf("%d completed, %d failed (%s); %d valid, %d invalid", run.Completed, run.Failed, s.LastError, run.Valid, run.Invalid)
	}
	rate, ok := run.InvalidRate()
	if !ok || rate < 0.015 || rate > 0.025 {
		t.Errorf("invalid rate %.2f %% over %d answers, want 2 %% ± 0.5", 100*rate, n)
	}
	if run.Good != run.Valid {
		t.Errorf("%d good, %d valid: a good request's answer is valid", run.Good, run.Valid)
	}
	if w, ok := s.InvalidRate(); !ok || w != rate || s.Phases[0].Invalid != run.Invalid {
		t.Errorf("the window's rate %v (%v), the phase's %d invalid, the run's %d", w, ok, s.Phases[0].Invalid, run.Invalid)
	}
	t.Logf("invalid rate %.2f %% (%d of %d)", 100*rate, run.Invalid, n)
}
