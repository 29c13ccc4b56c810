package compare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// fullGroups is a split at its worst for Compare: probe.MaxGroups named
// groups and other, every ring full (DefaultSamples of each statistic).
func fullGroups(b *testing.B) (*Groups, time.Time) {
	b.Helper()
	regs, err := ParseRegressions([]string{"ttft_p99<+10%", "e2el_p50<+10%"})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	g := NewGroups(Stats(regs), 0, 0, t0)
	rng := rand.New(rand.NewPCG(1, 2))
	slots := probe.MaxGroups + 1
	for i := range DefaultSamples * slots {
		ttft := time.Duration(20+rng.IntN(20)) * time.Millisecond
		res := probe.Result{Group: fmt.Sprintf("fp_%d", i%slots), HasTTFT: true, TTFT: ttft, E2E: 10 * ttft, OutputTokens: 8}
		g.Observe(load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0.Add(time.Duration(i/200)*time.Second))
	}
	return g, t0
}

// BenchmarkGroupsCompare is the live comparison's whole cost, once a
// second for a split.
func BenchmarkGroupsCompare(b *testing.B) {
	g, _ := fullGroups(b)
	for b.Loop() {
		g.Compare(Options{})
	}
}

// BenchmarkGroupsObserveWhileComparing is what the engine's aggregator
// sees: Observe's latency while Compare runs without pause on another
// goroutine (the live comparison does once a second). Its tail is the
// time Compare holds the lock: p99 and max are reported.
func BenchmarkGroupsObserveWhileComparing(b *testing.B) {
	g, t0 := fullGroups(b)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				g.Compare(Options{Resamples: 100})
			}
		}
	})
	rec := load.Record{Result: probe.Result{Group: "fp_1", HasTTFT: true, TTFT: 30 * time.Millisecond, E2E: 300 * time.Millisecond, OutputTokens: 8},
		Phase: 1, Knobs: load.Knobs{Concurrency: 8}}
	now := t0.Add(time.Minute)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		g.Observe(rec, now)
		lat = append(lat, time.Since(start))
		// About the pace of a busy aggregator (thousands of results a
		// second), so each Compare meets a few hundred Observes.
		time.Sleep(50 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// BenchmarkGroupsLockHeld is how long Compare holds the lock Observe
// takes: the copy of every sample (the buffer is made before, outside
// the lock and the timer, as Compare does).
func BenchmarkGroupsLockHeld(b *testing.B) {
	g, _ := fullGroups(b)
	g.mu.Lock()
	n := g.heldLocked()
	g.mu.Unlock()
	for b.Loop() {
		b.StopTimer()
		buf := make([]sample, 0, n)
		b.StartTimer()
		g.mu.Lock()
		g.copyLocked(buf, false)
		g.mu.Unlock()
	}
}
