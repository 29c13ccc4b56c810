package load

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
)

// virtual runs f in a synctest bubble, as a subtest's function: its clock
// is virtual, advancing only when every goroutine of the bubble waits (on
// a timer, a channel, a sleep), so an engine with a request function that
// keeps to the bubble runs its seconds at once and to the nanosecond.
func virtual(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}

// startFake runs an engine with cfg until the test ends.
func startFake(t *testing.T, cfg Config) *Engine {
	t.Helper()
	if cfg.Tick == 0 {
		cfg.Tick = 20 * time.Millisecond
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// TestBackoffOnFailures: workers failing every request back off (fewer
// than 50 requests a second from four), and are back at full speed within
// the longest back-off once the endpoint recovers. The seconds are a
// synctest bubble's virtual time.
func TestBackoffOnFailures(t *testing.T) { synctest.Test(t, testBackoffOnFailures) }

func testBackoffOnFailures(t *testing.T) {
	var calls atomic.Int64
	var succeed atomic.Bool
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		calls.Add(1)
		start := time.Now()
		if !succeed.Load() {
			return probe.Result{Start: start, E2E: 100 * time.Microsecond, Status: 500, Class: probe.HTTP5xx, Err: "HTTP 500: no"}
		}
		time.Sleep(2 * time.Millisecond)
		return probe.Result{Start: start, HasTTFT: true, TTFT: time.Millisecond, E2E: 2 * time.Millisecond, OutputTokens: 2, InputTokens: 8}
	}
	e := startFake(t, Config{Do: do, Knobs: Knobs{Concurrency: 4, PromptTokens: 8, OutputTokens: 2}})
	waitFor(t, e, time.Second, "workers backing off", func(s Snapshot) bool { return s.BackingOff > 0 })
	time.Sleep(2 * time.Second)
	if n := calls.Load(); float64(n)/2 >= 50 {
		t.Fatalf("%d requests in 2 s against an endpoint failing all of them", n)
	}
	if s := e.Latest(); s.BackingOff == 0 || s.BackingOff > 4 {
		t.Fatalf("%d workers backing off, want 1 to 4", s.BackingOff)
	}
	// The endpoint recovers: within a second (the longest back-off) every
	// worker is back at full speed.
	succeed.Store(true)
	time.Sleep(1100 * time.Millisecond)
	before := calls.Load()
	time.Sleep(500 * time.Millisecond)
	if n := calls.Load() - before; n < 100 { // 4 workers of 2 ms: 1,000 in 0.5 s on an idle machine
		t.Fatalf("%d requests in 0.5 s after the endpoint recovered", n)
	}
	waitFor(t, e, time.Second, "no back-off", func(s Snapshot) bool { return s.BackingOff == 0 })
}

// TestBackoffHonoursRetryAfter: a 429 asking for 300 ms gets 300 ms, in a
// synctest bubble's virtual time.
func TestBackoffHonoursRetryAfter(t *testing.T) { synctest.Test(t, testBackoffHonoursRetryAfter) }

func testBackoffHonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return probe.Result{Start: time.Now(), E2E: 100 * time.Microsecond, Status: 429, Class: probe.HTTP429, Err: "HTTP 429: slow down", RetryAfter: 300 * time.Millisecond}
	}
	startFake(t, Config{Do: do, Knobs: Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 2}})
	time.Sleep(1100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 3 || len(at) > 5 {
		t.Fatalf("%d requests in 1.1 s with Retry-After 300 ms", len(at))
	}
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < 300*time.Millisecond {
			t.Fatalf("request %d sent %v after the 429 asking for 300 ms", i, d)
		}
	}
}

// TestBackoffEndsOnKnobChange: a knob change cuts a wait short.
func TestBackoffEndsOnKnobChange(t *testing.T) {
	var calls atomic.Int64
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		calls.Add(1)
		return probe.Result{Start: time.Now(), Status: 429, Class: probe.HTTP429, Err: "HTTP 429", RetryAfter: time.Hour}
	}
	e := startFake(t, Config{Do: do, Knobs: Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 2}})
	waitFor(t, e, time.Second, "backing off", func(s Snapshot) bool { return s.BackingOff == 1 })
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d requests", n)
	}
	e.Update(func(k *Knobs) { k.OutputTokens = 3 })
	deadline := time.Now().Add(time.Second)
	for calls.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the knob change did not end the wait")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The run ending ends it too: Done at once, not in 30 s.
	e.Finish("test")
	waitFor(t, e, time.Second, "done", func(s Snapshot) bool { return s.Done })
}

func TestBackoffSchedule(t *testing.T) {
	for _, c := range []struct {
		fails int
		retry time.Duration
		want  time.Duration
	}{
		{1, 0, 5 * time.Millisecond}, {2, 0, 10 * time.Millisecond}, {8, 0, 640 * time.Millisecond}, {9, 0, time.Second},
		{100, 0, time.Second}, {1, 2 * time.Second, 2 * time.Second}, {3, time.Hour, 30 * time.Second},
	} {
		if got := backoff(c.fails, c.retry); got != c.want {
			t.Errorf("backoff(%d, %v) = %v, want %v", c.fails, c.retry, got, c.want)
		}
	}
}
