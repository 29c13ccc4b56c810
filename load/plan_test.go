package load

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
)

func quickDo(ctx context.Context, _ probe.Request) probe.Result {
	start := time.Now()
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
		return probe.Result{Start: start, Class: probe.Canceled}
	}
	return probe.Result{Start: start, HasTTFT: true, TTFT: time.Millisecond, E2E: 2 * time.Millisecond, OutputTokens: 2, InputEstimated: true}
}

func runEngine(t *testing.T, cfg Config) (*Engine, func()) {
	t.Helper()
	cfg.Do, cfg.Tick = quickDo, 20*time.Millisecond
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	return e, func() { cancel(); <-done }
}

func TestWarmup(t *testing.T) {
	e, stop := runEngine(t, Config{Knobs: Knobs{Concurrency: 2, PromptTokens: 4, OutputTokens: 2}, Warmup: Warmup{Requests: 10}, MaxRequests: 40})
	defer stop()
	s := waitFor(t, e, 5*time.Second, "40 requests", func(s Snapshot) bool {
		return len(s.Phases) == 2 && s.Phases[0].Completed+s.Phases[1].Completed == 40
	})
	if !s.Phases[0].Warmup || s.Phases[0].Completed != 10 || s.Phases[1].Warmup {
		t.Fatalf("phases %+v", s.Phases)
	}
	if s.Run.Completed != 30 || s.TotalCompleted != 30 || s.Latency[E2E].Count != 30 {
		t.Fatalf("the warm-up leaked into the figures: run %d, total %d, window %d", s.Run.Completed, s.TotalCompleted, s.Latency[E2E].Count)
	}
	if w, err := ParseWarmup("30s"); err != nil || w.Duration != 30*time.Second {
		t.Fatalf("ParseWarmup(30s) = %+v %v", w, err)
	}
	if _, err := ParseWarmup("soon"); err == nil {
		t.Fatal("bad warm-up accepted")
	}
}

// TestStages: a walk of three stages makes three phases, each with its
// stage's knobs and requests; its 900 ms are a synctest bubble's virtual
// time.
func TestStages(t *testing.T) { synctest.Test(t, testStages) }

func testStages(t *testing.T) {
	stages, err := ParseStages("concurrency=2,duration=300ms; concurrency=4,prompt=8,duration=300ms;rate=50,duration=300ms")
	if err != nil {
		t.Fatal(err)
	}
	k := Knobs{Concurrency: 1, PromptTokens: 4, OutputTokens: 2}
	stages[0].Apply(&k)
	e, stop := runEngine(t, Config{Knobs: k})
	defer stop()
	if err := e.Walk(context.Background(), stages); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	s := e.Latest()
	if len(s.Phases) != 3 {
		t.Fatalf("%d phases for 3 stages: %+v", len(s.Phases), s.Phases)
	}
	want := []Knobs{
		{Concurrency: 2, PromptTokens: 4, OutputTokens: 2},
		{Concurrency: 4, PromptTokens: 8, OutputTokens: 2},
		{Concurrency: 4, PromptTokens: 8, OutputTokens: 2, Mode: OpenLoop, Rate: 50},
	}
	for i, p := range s.Phases {
		if p.Knobs != want[i] || p.Completed == 0 {
			t.Errorf("phase %d: %+v with %d requests, want %+v", i+1, p.Knobs, p.Completed, want[i])
		}
	}
	for _, bad := range []string{"", "concurrency=2", "rate=5,concurrency=2,duration=1s", "speed=3,duration=1s", "duration=-1s"} {
		if _, err := ParseStages(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRamp(t *testing.T) {
	st, err := Ramp("1:5:4s", false)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, s := range st {
		got = append(got, s.Concurrency)
	}
	if len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("ramp %v", got)
	}
	st, _ = Ramp("10:20:2s", true)
	if len(st) != 3 || st[1].Rate != 15 {
		t.Fatalf("rate ramp %+v", st)
	}
	for _, bad := range []string{"1:5", "0:5:3s", "1:5:10ms", "a:b:c"} {
		if _, err := Ramp(bad, false); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
