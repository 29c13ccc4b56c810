package load

import (
	"context"
	"math"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// TestOpenLoopRate runs the open loop at 200 req/s against the sim for
// 10 s. The requests actually sent keep to the schedule within 2 %; for
// constant arrivals the schedule is the target, so the achieved rate is
// within 2 % of 200. A Poisson schedule's own count over 10 s has a
// standard deviation of 2.2 % (1/sqrt(2000)), so it is held to 3 sigma of
// the target, and its dispersion in 100 ms bins is about 1 (near 0 for
// constant arrivals).
func TestOpenLoopRate(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s")
	}
	for _, kind := range []string{"constant", "poisson"} {
		t.Run(kind, func(t *testing.T) {
			p, _ := sim.Preset("fast")
			var mu sync.Mutex
			var starts, actual []time.Duration
			r := startRig(t, p, Knobs{Mode: OpenLoop, Rate: 200, PromptTokens: 4, OutputTokens: 2}, func(c *Config) {
				c.Arrivals = Arrivals{Kind: kind}
				c.OnResult = func(rec Record) {
					mu.Lock()
					starts = append(starts, rec.At-rec.Queue) // the intended send time
					actual = append(actual, rec.At)
					mu.Unlock()
				}
			})
			waitFor(t, r.eng, 15*time.Second, "11 s of arrivals", func(s Snapshot) bool { return s.Elapsed > 11*time.Second+300*time.Millisecond })
			r.stop()
			s := r.eng.Latest()
			if s.TotalFailed > 0 {
				t.Fatalf("%d failures: %s", s.TotalFailed, s.LastError)
			}
			mu.Lock()
			defer mu.Unlock()
			bins := make([]float64, 100) // 100 ms bins over [1 s, 11 s)
			n := 0
			for _, at := range starts {
				if at >= time.Second && at < 11*time.Second {
					n++
					bins[int((at-time.Second)/(100*time.Millisecond))]++
				}
			}
			sent := 0
			for _, at := range actual {
				if at >= time.Second && at < 11*time.Second {
					sent++
				}
			}
			rate, achieved := float64(n)/10, float64(sent)/10
			if math.Abs(achieved-rate)/rate > 0.02 {
				t.Fatalf("%s: sent %.1f req/s, scheduled %.1f", kind, achieved, rate)
			}
			bound := 0.02
			if kind == "poisson" {
				bound = 3 / math.Sqrt(2000)
			}
			if math.Abs(achieved-200)/200 > bound {
				t.Fatalf("%s: achieved %.1f req/s, target 200 (bound %.1f %%)", kind, achieved, bound*100)
			}
			mean, vr := 0.0, 0.0
			for _, b := range bins {
				mean += b / float64(len(bins))
			}
			for _, b := range bins {
				vr += (b - mean) * (b - mean) / float64(len(bins)-1)
			}
			d := vr / mean
			t.Logf("%s: scheduled %.1f req/s, sent %.1f req/s, index of dispersion %.2f", kind, rate, achieved, d)
			if kind == "poisson" && (d < 0.7 || d > 1.4) || kind == "constant" && d > 0.2 {
				t.Fatalf("%s: index of dispersion %.2f", kind, d)
			}
		})
	}
}

// TestOpenLoopStall: with MaxInFlight reached, a server that stalls for a
// second shows the stall in the intended-time latency of the arrivals that
// waited in the backlog, and not in their actual-send latency.
func TestOpenLoopStall(t *testing.T) {
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
		return probe.Result{Start: start, HasTTFT: true, TTFT: e2e / 2, E2E: e2e, OutputTokens: 2, Chunks: []time.Duration{e2e}}
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

// TestModeSwitch: the loop opens and closes without a restart.
func TestModeSwitch(t *testing.T) {
	p, _ := sim.Preset("default")
	r := startRig(t, p, Knobs{Concurrency: 3, PromptTokens: 8, OutputTokens: 32})
	waitFor(t, r.eng, 2*time.Second, "3 in flight", func(s Snapshot) bool { return s.InFlight == 3 })
	r.eng.Update(func(k *Knobs) { k.Mode, k.Rate = OpenLoop, 40 })
	s := waitFor(t, r.eng, 3*time.Second, "open loop", func(s Snapshot) bool {
		return s.Knobs.Mode == OpenLoop && len(s.Phases) == 2 && s.Phases[1].Completed > 10
	})
	if s.Phases[1].Knobs.Rate != 40 {
		t.Fatalf("phase 2 %+v", s.Phases[1].Knobs)
	}
	r.eng.Update(func(k *Knobs) { k.Mode = ClosedLoop })
	waitFor(t, r.eng, 3*time.Second, "closed again", func(s Snapshot) bool { return s.InFlight == 3 && len(s.Phases) == 3 })
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
