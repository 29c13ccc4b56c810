package load

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
)

// arrivalStats is what arrival times (run time) show over [from,
// from+span): their rate per second, and the index of dispersion (variance
// over mean) of their counts in 100 ms bins: near 0 for constant arrivals,
// about 1 for Poisson ones, about 1/shape for gamma ones (the squared
// coefficient of variation of the gaps, for a renewal process).
func arrivalStats(at []time.Duration, from, span time.Duration) (rate, dispersion float64) {
	const bin = 100 * time.Millisecond
	bins := make([]float64, span/bin)
	n := 0
	for _, a := range at {
		if a >= from && a < from+span {
			n++
			bins[(a-from)/bin]++
		}
	}
	mean, vr := 0.0, 0.0
	for _, b := range bins {
		mean += b / float64(len(bins))
	}
	for _, b := range bins {
		vr += (b - mean) * (b - mean) / float64(len(bins)-1)
	}
	return float64(n) / span.Seconds(), vr / mean
}

// countIn is how many of at fall in [from, from+span).
func countIn(at []time.Duration, from, span time.Duration) int {
	n := 0
	for _, a := range at {
		if a >= from && a < from+span {
			n++
		}
	}
	return n
}

// arrivalCases are the arrival processes with the dispersion their
// schedules must show (cv2, the squared coefficient of variation of their
// gaps: 0 constant, 1 Poisson, 1/shape gamma).
var arrivalCases = []struct {
	a   Arrivals
	cv2 float64
}{
	{Arrivals{Kind: "constant"}, 0},
	{Arrivals{Kind: "poisson"}, 1},
	{Arrivals{Kind: "gamma", Burstiness: 1}, 1}, // Poisson again, by another road
	{Arrivals{Kind: "gamma", Burstiness: 0.25}, 4},
	{Arrivals{Kind: "gamma", Burstiness: 0.5}, 2},
	{Arrivals{Kind: "gamma", Burstiness: 4}, 0.25},
}

// TestArrivalSchedule holds the open loop's schedule to its process, as
// arithmetic: 100 s of gaps drawn at 200 req/s, the way the dispatcher
// draws them, keep the rate (exactly for constant arrivals; within 4
// standard deviations, sqrt(cv2/n), otherwise) and show the dispersion of
// their process in 100 ms bins (within 20 % of cv2; observed within 7 %
// over five seeds).
func TestArrivalSchedule(t *testing.T) {
	const rate, span = 200, 100 * time.Second
	for _, c := range arrivalCases {
		t.Run(fmt.Sprintf("%s %v", c.a.Kind, c.a.Burstiness), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7^0x51ed27))
			var at []time.Duration
			for next := time.Duration(0); next < span+time.Second; next += c.a.gap(rng, rate) {
				at = append(at, next)
			}
			got, d := arrivalStats(at, time.Second, span)
			n := rate * span.Seconds()
			t.Logf("%.2f req/s, index of dispersion %.3f (want %v)", got, d, c.cv2)
			if c.cv2 == 0 {
				if math.Abs(got*span.Seconds()-n) > 1 || d > 0.01 {
					t.Fatalf("constant arrivals: %.2f req/s, index of dispersion %.3f", got, d)
				}
				return
			}
			if sd := math.Sqrt(c.cv2 / n); math.Abs(got-rate)/rate > 4*sd {
				t.Errorf("%.2f req/s, target %d (bound %.1f %%)", got, rate, 400*sd)
			}
			if d < 0.8*c.cv2 || d > 1.2*c.cv2 {
				t.Errorf("index of dispersion %.3f, want %v ± 20 %%", d, c.cv2)
			}
		})
	}
}

// TestOpenLoopFollowsSchedule runs the engine's open loop at 200 req/s for
// 11 s of a synctest bubble's virtual time, against a request function
// that answers at once: every arrival is sent at its intended time (no
// queue), and the schedule the engine followed over [1 s, 11 s) has its
// process's rate and dispersion (a Poisson count over 10 s has a standard
// deviation of 2.2 %, 1/sqrt(2000): held to 3 sigma of the target, and so
// is gamma's, sqrt(cv2/2000)). TestArrivalSchedule holds the draws over
// longer; this holds the dispatcher to them.
func TestOpenLoopFollowsSchedule(t *testing.T) {
	for _, c := range arrivalCases {
		t.Run(fmt.Sprintf("%s %v", c.a.Kind, c.a.Burstiness), virtual(func(t *testing.T) {
			do := func(ctx context.Context, _ probe.Request) probe.Result {
				return probe.Result{Start: time.Now(), HasTTFT: true, TTFT: time.Millisecond, E2E: time.Millisecond, OutputTokens: 2}
			}
			var intended, actual []time.Duration // the aggregator's goroutine only, until the stop
			// A snapshot a virtual second: the snapshots, not the
			// requests, are the cost of this test under -race.
			e := startFake(t, Config{Do: do, Knobs: Knobs{Mode: OpenLoop, Rate: 200, PromptTokens: 4, OutputTokens: 2}, Arrivals: c.a, Tick: time.Second,
				OnResult: func(rec Record) {
					intended = append(intended, rec.At-rec.Queue)
					actual = append(actual, rec.At)
				}})
			waitFor(t, e, 15*time.Second, "11 s of arrivals", func(s Snapshot) bool { return s.Elapsed > 11*time.Second+300*time.Millisecond })
			e.Finish("test")
			waitFor(t, e, time.Second, "done", func(s Snapshot) bool { return s.Done })
			s := e.Latest()
			if s.TotalFailed > 0 || s.Incomplete > 0 {
				t.Fatalf("%d failures, %d incomplete: %s", s.TotalFailed, s.Incomplete, s.LastError)
			}
			for i := range intended {
				if actual[i] != intended[i] {
					t.Fatalf("arrival %d due at %v sent at %v", i, intended[i], actual[i])
				}
			}
			rate, d := arrivalStats(intended, time.Second, 10*time.Second)
			t.Logf("scheduled %.1f req/s, index of dispersion %.2f", rate, d)
			bound := 0.02
			if c.cv2 > 0 {
				bound = 3 * math.Sqrt(c.cv2/2000)
			}
			if math.Abs(rate-200)/200 > bound {
				t.Errorf("scheduled %.1f req/s, target 200 (bound %.1f %%)", rate, bound*100)
			}
			if c.cv2 == 0 && d > 0.2 || c.cv2 > 0 && (d < 0.7*c.cv2 || d > 1.4*c.cv2) {
				t.Errorf("index of dispersion %.2f, want %v", d, c.cv2)
			}
		}))
	}
}

// TestOpenLoopRate is the check of the schedule through the engine: the
// open loop at 200 req/s of constant arrivals against requests of 20 ms,
// in a synctest bubble's time (a busy machine moves nothing). The
// requests actually sent in [0.5 s, 2.5 s) keep to the schedule within
// 2 % (the dispatcher times each arrival from its intended send time, so
// one that falls behind catches up), and so to the target. The processes'
// rates and dispersions are arithmetic (TestArrivalSchedule,
// TestOpenLoopFollowsSchedule); the real sim's timing is
// TestEngineMatchesSim's.
func TestOpenLoopRate(t *testing.T) { synctest.Test(t, testOpenLoopRate) }

func testOpenLoopRate(t *testing.T) {
	var mu sync.Mutex
	var starts, actual []time.Duration
	e, stop := startEngine(t, Config{Do: timedDo(20 * time.Millisecond), Knobs: Knobs{Mode: OpenLoop, Rate: 200, PromptTokens: 4, OutputTokens: 2},
		OnResult: func(rec Record) {
			mu.Lock()
			starts = append(starts, rec.At-rec.Queue) // the intended send time
			actual = append(actual, rec.At)
			mu.Unlock()
		}})
	from, span := 500*time.Millisecond, 2*time.Second
	waitFor(t, e, 30*time.Second, "2.5 s of arrivals", func(s Snapshot) bool { return s.Elapsed > from+span+300*time.Millisecond })
	stop()
	s := e.Latest()
	if s.TotalFailed > 0 {
		t.Fatalf("%d failures: %s", s.TotalFailed, s.LastError)
	}
	mu.Lock()
	defer mu.Unlock()
	rate, d := arrivalStats(starts, from, span)
	achieved := float64(countIn(actual, from, span)) / span.Seconds()
	t.Logf("scheduled %.1f req/s, sent %.1f req/s, index of dispersion %.2f", rate, achieved, d)
	if math.Abs(achieved-rate)/rate > 0.02 {
		t.Fatalf("sent %.1f req/s, scheduled %.1f", achieved, rate)
	}
	if math.Abs(achieved-200)/200 > 0.02 {
		t.Fatalf("achieved %.1f req/s, target 200", achieved)
	}
	if d > 0.2 {
		t.Fatalf("index of dispersion %.2f of a constant schedule", d)
	}
}

// TestOpenLoopStall: with MaxInFlight reached, a server that stalls for a
// second shows the stall in the intended-time latency of the arrivals that
// waited in the backlog, and not in their actual-send latency. The
// seconds are a synctest bubble's virtual time.
func TestOpenLoopStall(t *testing.T) { synctest.Test(t, testOpenLoopStall) }

func testOpenLoopStall(t *testing.T) {
	var stallFrom time.Time
	var smu sync.Mutex
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		start := time.Now()
		smu.Lock()
		from := stallFrom
		smu.Unlock()
		if !from.IsZero() && start.After(from) && start.Before(from.Add(time.Second)) {
			select { // the server stalls until the second is over
			case <-time.After(from.Add(time.Second).Sub(start)):
			case <-ctx.Done():
				return probe.Result{Start: start, Class: probe.Canceled}
			}
		} else {
			time.Sleep(5 * time.Millisecond)
		}
		e2e := time.Since(start)
		return probe.Result{Start: start, HasTTFT: true, TTFT: e2e / 2, E2E: e2e, OutputTokens: 2}
	}
	var mu sync.Mutex
	var recs []Record
	eng, err := New(Config{Do: do, Knobs: Knobs{Mode: OpenLoop, Rate: 50, PromptTokens: 4, OutputTokens: 2}, MaxInFlight: 2,
		Tick: 50 * time.Millisecond, OnResult: func(r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	time.Sleep(500 * time.Millisecond)
	smu.Lock()
	stallFrom = time.Now()
	smu.Unlock()
	waitFor(t, eng, 3*time.Second, "a backlog", func(s Snapshot) bool { return s.Backlog >= 20 })
	time.Sleep(1500 * time.Millisecond)
	cancel()
	<-done
	s := eng.Latest()
	mu.Lock()
	defer mu.Unlock()
	waited := 0
	for _, r := range recs {
		if r.Queue > 500*time.Millisecond {
			waited++
			if r.E2E > 200*time.Millisecond {
				t.Errorf("an arrival that waited %v shows %v of actual-send E2E", r.Queue, r.E2E)
			}
		}
	}
	if waited < 20 {
		t.Fatalf("only %d arrivals waited in the backlog", waited)
	}
	if s.Latency[E2EIntended].Max < 800*time.Millisecond || s.Latency[Queue].Max < 800*time.Millisecond {
		t.Fatalf("intended-time E2E max %v, queue max %v: the stall is hidden", s.Latency[E2EIntended].Max, s.Latency[Queue].Max)
	}
	if s.InFlight > 2 {
		t.Fatalf("%d in flight past MaxInFlight 2", s.InFlight)
	}
}

// TestModeSwitch: the loop opens and closes without a restart, in a
// synctest bubble's time.
func TestModeSwitch(t *testing.T) { synctest.Test(t, testModeSwitch) }

func testModeSwitch(t *testing.T) {
	e, stop := startEngine(t, Config{Do: timedDo(100 * time.Millisecond), Knobs: Knobs{Concurrency: 3, PromptTokens: 8, OutputTokens: 32}})
	defer stop()
	waitFor(t, e, 10*time.Second, "3 in flight", func(s Snapshot) bool { return s.InFlight == 3 })
	e.Update(func(k *Knobs) { k.Mode, k.Rate = OpenLoop, 40 })
	s := waitFor(t, e, 10*time.Second, "open loop", func(s Snapshot) bool {
		return s.Knobs.Mode == OpenLoop && len(s.Phases) == 2 && s.Phases[1].Completed > 10
	})
	if s.Phases[1].Knobs.Rate != 40 {
		t.Fatalf("phase 2 %+v", s.Phases[1].Knobs)
	}
	e.Update(func(k *Knobs) { k.Mode = ClosedLoop })
	waitFor(t, e, 10*time.Second, "closed again", func(s Snapshot) bool { return s.InFlight == 3 && len(s.Phases) == 3 })
}

// BenchmarkOpenLoopOverhead runs the open loop at 5,000 req/s against a
// no-op request function for 2 s and reports the achieved rate, the
// scheduler's lateness (queue p99) and the process CPU time per request:
// the whole cost of scheduling, aggregating and publishing one request.
func BenchmarkOpenLoopOverhead(b *testing.B) {
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		return probe.Result{Start: time.Now(), HasTTFT: true, TTFT: time.Microsecond, E2E: time.Microsecond, OutputTokens: 1}
	}
	for b.Loop() {
		eng, _ := New(Config{Do: do, Knobs: Knobs{Mode: OpenLoop, Rate: 5000, PromptTokens: 16, OutputTokens: 1}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		go func() { defer close(done); eng.Run(ctx) }()
		time.Sleep(2 * time.Second)
		cancel()
		<-done
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		s := eng.Latest()
		cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
		b.ReportMetric(float64(s.TotalCompleted)/s.Elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(s.Latency[Queue].P99)/1e3, "queue-p99-µs")
		b.ReportMetric(float64(cpu.Microseconds())/float64(max(s.TotalCompleted, 1)), "cpu-µs/req")
	}
}
