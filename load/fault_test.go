package load

import (
	"runtime"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// faultRun sends n requests to a sim injecting one fault into every one,
// and returns what the engine counted.
func faultRun(t *testing.T, f sim.Faults, timeout time.Duration, n int64) Snapshot {
	t.Helper()
	p, _ := sim.Preset("fast")
	p.Faults = f
	// All n at once: none waits out another's fault (a 429's Retry-After
	// is a second, a stall is its pause).
	r := startRigTimeout(t, p, Knobs{Concurrency: int(n), PromptTokens: 8, OutputTokens: 20}, timeout, func(c *Config) {
		c.MaxRequests, c.Tick = n, 20*time.Millisecond
	})
	s := waitFor(t, r.eng, 20*time.Second, "every request", func(s Snapshot) bool { return s.TotalCompleted+s.TotalFailed >= n })
	// The knobs answer at once while the endpoint misbehaves.
	t0 := time.Now()
	r.eng.Update(func(k *Knobs) { k.OutputTokens = 21 })
	if d := time.Since(t0); d > 100*time.Millisecond {
		t.Errorf("a knob change took %v", d)
	}
	r.stop()
	return s
}

func TestFaultClasses(t *testing.T) {
	t.Parallel()
	// A second: the mid-stream stall's first token must come before it,
	// and beside the suite and a CPU hog the fast sim's TTFT reached
	// 443 ms (at 300 ms the test called the stall one before the first
	// token).
	pause := time.Second
	tests := []struct {
		name    string
		f       sim.Faults
		timeout time.Duration
		class   probe.ErrorClass
	}{
		{"500", sim.Faults{HTTP500: 1}, 0, probe.HTTP5xx},
		{"429", sim.Faults{HTTP429: 1}, 0, probe.HTTP429},
		{"reset mid-stream", sim.Faults{Reset: 1}, 0, probe.StreamCut},
		{"stall before the first byte, past the timeout", sim.Faults{Stall: 1, Pause: time.Second}, 200 * time.Millisecond, probe.Timeout},
		{"stall before the first byte", sim.Faults{Stall: 1, Pause: pause}, 0, probe.OK},
		{"stall mid-stream", sim.Faults{StallMid: 1, Pause: pause}, 0, probe.OK},
		{"malformed chunk", sim.Faults{Malformed: 1}, 0, probe.Malformed},
		{"one byte at a time", sim.Faults{Trickle: 1}, 0, probe.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each its own sim: their pauses and Retry-After overlap
			s := faultRun(t, tt.f, tt.timeout, 4)
			if tt.class == probe.OK {
				if s.TotalFailed != 0 || s.TotalCompleted != 4 {
					t.Fatalf("%d ok, %d failed (%s)", s.TotalCompleted, s.TotalFailed, s.LastError)
				}
			} else if s.TotalByClass[tt.class] != s.TotalFailed || s.TotalFailed < 4 {
				t.Fatalf("classes %v (want all %v), last error %q", s.TotalByClass, tt.class, s.LastError)
			}
			switch tt.name {
			case "stall before the first byte":
				if s.Latency[TTFB].Min < pause {
					t.Errorf("TTFB min %v: the stall is not in it", s.Latency[TTFB].Min)
				}
			case "stall mid-stream":
				// The gap the client sees is the pause less how late it read
				// the chunk before it (milliseconds on a busy machine).
				if s.Latency[ITL].Max < pause*3/4 || s.Latency[TTFT].Max > pause {
					t.Errorf("ITL max %v, TTFT max %v: the stall should be one gap, after the first token", s.Latency[ITL].Max, s.Latency[TTFT].Max)
				}
			}
		})
	}
}

// TestHugeLinesHoldMemory: lines past the limit (2 MiB, the cap 1 MiB) are refused as
// malformed, not kept.
func TestHugeLinesHoldMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := faultRun(t, sim.Faults{HugeLine: 1}, 0, 4)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if s.TotalByClass[probe.Malformed] < 4 || s.TotalByClass[probe.Malformed] != s.TotalFailed {
		t.Fatalf("classes %v", s.TotalByClass)
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB after 4 lines of 2 MiB", grew>>20)
	}
}
