package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
)

// The figures of issue 24: every rate over the time it describes.

// TestWarmupOutOfTheRates: the warm-up is in none of the run's figures, so
// it is in none of their denominators: the run's duration and rates, and
// the window's, start where the measured phase does.
func TestWarmupOutOfTheRates(t *testing.T) {
	k := Knobs{Concurrency: 2, PromptTokens: 4, OutputTokens: 2}
	s := runFor(t, Config{Do: quickDo, Knobs: k, Warmup: Warmup{Duration: 300 * time.Millisecond}, Duration: 600 * time.Millisecond}, 10*time.Second)
	if len(s.Phases) != 2 || !s.Phases[0].Warmup || s.Phases[1].Warmup {
		t.Fatalf("phases %+v", s.Phases)
	}
	m := s.Phases[1]
	if s.Run.Start != m.Start || s.Run.Duration != m.Duration || s.Run.Duration > s.Elapsed-m.Start {
		t.Errorf("run from %v for %v, the measured phase from %v for %v (the run ended at %v)", s.Run.Start, s.Run.Duration, m.Start, m.Duration, s.Elapsed)
	}
	if want := float64(s.Run.Completed) / s.Run.Duration.Seconds(); math.Abs(s.Run.ReqPerSec-want) > 1e-9 || s.Run.Completed == 0 {
		t.Errorf("run %.1f req/s, want %.1f (%d completed)", s.Run.ReqPerSec, want, s.Run.Completed)
	}
	if s.Covered > s.Elapsed-m.Start {
		t.Errorf("the window covers %v of a run whose measured part is %v", s.Covered, s.Elapsed-m.Start)
	}
}

// TestSentRateOverTheSending: the open loop's sent rate is over the time
// requests were being sent, never the drain after it.
func TestSentRateOverTheSending(t *testing.T) {
	k := Knobs{Mode: OpenLoop, Rate: 200, Concurrency: 0, PromptTokens: 4, OutputTokens: 2}
	s := runFor(t, Config{Do: fakeDo(200 * time.Millisecond), Knobs: k, Duration: 300 * time.Millisecond}, 10*time.Second)
	run := s.Run
	if run.Sending < 300*time.Millisecond || run.Sending > s.Elapsed-150*time.Millisecond {
		t.Errorf("sending for %v of a run of %v whose last 200 ms were the drain", run.Sending, s.Elapsed)
	}
	if want := float64(run.Sent()) / run.Sending.Seconds(); run.Sent() == 0 || math.Abs(run.SentPerSec-want) > 1e-9 {
		t.Errorf("sent %d at %.1f/s, want %.1f/s", run.Sent(), run.SentPerSec, want)
	}
	if len(s.Phases) != 1 || s.Phases[0].Sending != run.Sending {
		t.Errorf("phases %+v", s.Phases)
	}
}

// startEngine runs an engine with cfg (its Do given) until stopped.
func startEngine(t *testing.T, cfg Config) (*Engine, func()) {
	t.Helper()
	cfg.Tick = 20 * time.Millisecond
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	return e, func() { cancel(); <-done }
}

// timedDo answers after d, its start and end times real, as probe's are.
func timedDo(d time.Duration) func(context.Context, probe.Request) probe.Result {
	return func(ctx context.Context, _ probe.Request) probe.Result {
		start := time.Now()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return probe.Result{Start: start, HasTTFT: true, TTFT: d / 2, E2E: d, OutputTokens: 4, InputTokens: 8}
		case <-ctx.Done():
			return probe.Result{Start: start, Class: probe.Canceled}
		}
	}
}

// TestPauseEndsAPhase: a pause ends its phase and the resume starts a new
// one, so the burst at the resume is the new phase's; the time paused,
// once the requests it found in flight are back, is in no rate's
// denominator: neither a phase's, the run's nor the window's (which the o
// key opens the open loop at). The times are a synctest bubble's.
func TestPauseEndsAPhase(t *testing.T) { synctest.Test(t, testPauseEndsAPhase) }

func testPauseEndsAPhase(t *testing.T) {
	const latency, pause = 50 * time.Millisecond, 500 * time.Millisecond
	e, stop := startEngine(t, Config{Do: timedDo(latency), Knobs: Knobs{Concurrency: 4, PromptTokens: 4, OutputTokens: 2}})
	defer stop()
	waitFor(t, e, 5*time.Second, "8 requests", func(s Snapshot) bool { return s.TotalCompleted >= 8 })
	e.SetPaused(true)
	paused := waitFor(t, e, 5*time.Second, "the pause", func(s Snapshot) bool { return s.InFlight == 0 && s.Knobs.Paused })
	waitFor(t, e, 5*time.Second, "a long pause", func(s Snapshot) bool { return s.Elapsed > paused.Elapsed+pause })
	e.SetPaused(false)
	s := waitFor(t, e, 5*time.Second, "8 requests after the resume", func(s Snapshot) bool { return s.TotalCompleted >= paused.TotalCompleted+8 })
	if s.Run.Duration > s.Elapsed-pause || s.Covered > s.Elapsed-pause {
		t.Errorf("run %v, window %v of %v: the %v pause is in them", s.Run.Duration, s.Covered, s.Elapsed, pause)
	}
	if want := float64(s.Completed) / s.Covered.Seconds(); math.Abs(s.ReqPerSec-want) > 1e-9 {
		t.Errorf("window %.1f req/s, want %.1f", s.ReqPerSec, want)
	}
	var got []string
	for _, p := range s.Phases {
		got = append(got, fmt.Sprintf("%d (paused %v, %d sent, from %v for %v)", p.ID, p.Knobs.Paused, p.Sent(), p.Start, p.Duration))
	}
	if len(s.Phases) != 3 || !s.Phases[1].Knobs.Paused || s.Phases[1].Sent() != 0 || s.Phases[0].Knobs.Paused || s.Phases[2].Knobs.Paused {
		t.Fatalf("want a phase before the pause, the pause, and one after: %s", strings.Join(got, "; "))
	}
	before, during, after := s.Phases[0], s.Phases[1], s.Phases[2]
	if end := before.Start + before.Duration; end > during.Start+latency+200*time.Millisecond {
		t.Errorf("the phase before the pause lasts to %v; the pause began at %v, its last request %v later at most", end, during.Start, latency)
	}
	if during.Sending != 0 || s.Run.Sending != before.Sending+after.Sending {
		t.Errorf("sending: %v paused; the run's %v is not %v + %v", during.Sending, s.Run.Sending, before.Sending, after.Sending)
	}
}

// TestErrorsGroupedWithoutLocalPorts: resets on seven connections are one
// error seen seven times, not seven errors of one; "most frequent" then
// ranks them above a 5xx seen three times.
func TestErrorsGroupedWithoutLocalPorts(t *testing.T) {
	var tab errorTable
	for i := range 7 {
		local := fmt.Sprintf("127.0.0.1:%d", 40398+i)
		if i%2 == 1 {
			local = fmt.Sprintf("[::1]:%d", 40398+i)
		}
		tab.add(&probe.Result{Class: probe.StreamCut, Err: "read tcp " + local + "->10.0.0.7:8000: read: connection reset by peer"})
	}
	for range 3 {
		tab.add(&probe.Result{Class: probe.HTTP5xx, Status: 500, Err: "HTTP 500: boom"})
	}
	got := tab.list()
	if len(got) != 2 || got[0].Class != probe.StreamCut || got[0].Count != 7 || got[0].Message != "read tcp 10.0.0.7:8000: read: connection reset by peer" {
		t.Fatalf("errors %+v", got)
	}
}

// TestConcurrencyHeldByOpenFiles: past what the open-file limit allows the
// client fails for want of descriptors, so the concurrency stops there: a
// configuration past it is refused in words that name the limit, a key
// stops at it, and the open loop's senders are capped by it.
func TestConcurrencyHeldByOpenFiles(t *testing.T) {
	if got := MaxConcurrencyFor(1024, 2); got != 288 {
		t.Errorf("1024 files, 2 a request: %d, want 288", got)
	}
	if got := MaxConcurrencyFor(1024, 0); got != 576 {
		t.Errorf("1024 files, 1 a request: %d, want 576", got)
	}
	if got := MaxConcurrencyFor(0, 2); got != MaxConcurrency {
		t.Errorf("no limit known: %d", got)
	}
	base := Config{Do: quickDo, OpenFiles: 1024, FilesPerRequest: 2, Knobs: Knobs{Concurrency: 8, PromptTokens: 4, OutputTokens: 2}}
	for _, cfg := range []Config{
		func(c Config) Config { c.Knobs.Concurrency = 5000; return c }(base),
		func(c Config) Config {
			c.Stages = []Stage{{Concurrency: 8, Duration: time.Second}, {Concurrency: 300, Duration: time.Second}}
			return c
		}(base),
	} {
		err := cfg.Validate()
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != SettingConcurrency || !strings.Contains(err.Error(), "288") || !strings.Contains(err.Error(), "ulimit -n") {
			t.Errorf("validate: %v", err)
		}
	}
	e, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	if k := e.Update(func(k *Knobs) { k.Concurrency = 10000 }); k.Concurrency != 288 {
		t.Errorf("the key took the concurrency to %d", k.Concurrency)
	}
	if n := e.maxOpenInFlight(); n != 288 {
		t.Errorf("the open loop may keep %d in flight", n)
	}
}

// TestResetResetsEveryFigure: after a reset every figure starts again:
// the open loop's arrivals scheduled beside the requests sent, the run's
// setting (the one it started at since the reset), and the run counts
// only requests begun since, so that its sent is its phases' (a request
// begun before the reset is in no figure since); the counters for
// Prometheus go on.
func TestResetResetsEveryFigure(t *testing.T) {
	const latency = 100 * time.Millisecond
	e, stop := startEngine(t, Config{Do: timedDo(latency), Knobs: Knobs{Concurrency: 4, PromptTokens: 4, OutputTokens: 2}})
	defer stop()
	waitFor(t, e, 5*time.Second, "8 requests", func(s Snapshot) bool { return s.TotalCompleted >= 8 })
	e.Update(func(k *Knobs) { k.Mode, k.Rate = OpenLoop, 50 }) // the o key
	waitFor(t, e, 5*time.Second, "arrivals", func(s Snapshot) bool { return s.Scheduled >= 5 })
	at := e.Latest()
	e.Reset() // with requests of both loops in flight
	waitFor(t, e, 5*time.Second, "arrivals after the reset", func(s Snapshot) bool { return s.Run.Completed >= 10 && s.Elapsed > at.Elapsed+2*latency })
	e.Finish(EndDuration)
	s := waitFor(t, e, 5*time.Second, "done", func(s Snapshot) bool { return s.Done })

	var phaseSent int64
	for _, p := range s.Phases {
		phaseSent += p.Sent()
	}
	run := s.Run
	if s.Since < at.Elapsed || s.Since > s.Elapsed-2*latency {
		t.Errorf("figures since %v; the reset was after %v", s.Since, at.Elapsed)
	}
	if run.Sent() != phaseSent || run.Sent() != run.Completed+run.Failed+run.Incomplete || s.Scheduled != run.Sent() {
		t.Errorf("since the reset: %d scheduled, %d sent = %d + %d + %d, the phases' %d", s.Scheduled, run.Sent(), run.Completed, run.Failed, run.Incomplete, phaseSent)
	}
	if run.Knobs.Mode != OpenLoop || run.Knobs.Rate != 50 {
		t.Errorf("the run's setting %+v, want the open loop at 50/s", run.Knobs)
	}
	if s.SentEver < run.Sent()+8 {
		t.Errorf("%d sent ever, %d since the reset: the counter went back", s.SentEver, run.Sent())
	}
}

// TestNewPhaseFrom: a phase a follower numbers takes the id asked for
// past those begun, and the next after the highest when asked for one
// already taken; the knobs change with it, and requests go on counting
// in it.
func TestNewPhaseFrom(t *testing.T) { synctest.Test(t, testNewPhaseFrom) }

func testNewPhaseFrom(t *testing.T) {
	e, stop := startEngine(t, Config{Do: timedDo(10 * time.Millisecond), Knobs: Knobs{Concurrency: 2, PromptTokens: 4, OutputTokens: 2}})
	defer stop()
	waitFor(t, e, 5*time.Second, "requests in phase 1", func(s Snapshot) bool { return s.TotalCompleted > 0 })
	if k, id := e.NewPhaseFrom(7, func(k *Knobs) { k.Concurrency = 3 }); id != 7 || k.Concurrency != 3 {
		t.Fatalf("NewPhaseFrom(7): phase %d, knobs %+v", id, k)
	}
	waitFor(t, e, 5*time.Second, "requests in phase 7", func(s Snapshot) bool {
		return len(s.Phases) > 0 && s.Phases[len(s.Phases)-1].ID == 7 && s.Phases[len(s.Phases)-1].Completed > 0
	})
	if _, id := e.NewPhaseFrom(3, func(*Knobs) {}); id != 8 {
		t.Fatalf("NewPhaseFrom(3) after 7: phase %d, want 8", id)
	}
	s := waitFor(t, e, 5*time.Second, "requests in phase 8", func(s Snapshot) bool {
		return len(s.Phases) > 0 && s.Phases[len(s.Phases)-1].ID == 8 && s.Phases[len(s.Phases)-1].Completed > 0
	})
	var ids []int
	for _, p := range s.Phases {
		ids = append(ids, p.ID)
	}
	if fmt.Sprint(ids) != "[1 7 8]" || s.Phases[len(s.Phases)-1].Knobs.Concurrency != 3 {
		t.Errorf("phases %v, the last's knobs %+v", ids, s.Phases[len(s.Phases)-1].Knobs)
	}
}
