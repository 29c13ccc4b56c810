package load

import (
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
)

// TestSteadyAcc: the window starts at the first snapshot with 95 % of the
// target in flight (what came before is the ramp's), ends at the last
// (what came after, the drain, stays out), keeps what happened between,
// and starts over when the target changes.
func TestSteadyAcc(t *testing.T) {
	s := newSteadyAcc()
	sec := time.Second
	s.complete() // the ramp's
	s.deliver(10)
	s.record(TTFT, 900_000)
	s.tick(1*sec, 60, 64) // 60 < 60.8: not yet
	if f := s.figures(); f.Reached || f.Target != 64 {
		t.Fatalf("below 95 %%: %+v", f)
	}
	s.tick(2*sec, 61, 64) // steady from here
	for i := range 20 {
		s.complete()
		s.deliver(100)
		s.record(TTFT, int64(100_000+i))
		s.record(TTFB, 5) // not a metric the window keeps
	}
	s.tick(3*sec, 64, 64)
	s.complete()
	s.deliver(100)
	s.tick(4*sec, 63, 64)
	s.complete() // the drain's
	s.deliver(7)
	s.record(TTFT, 5_000_000)
	s.tick(5*sec, 10, 64)
	f := s.figures()
	if !f.Reached || f.Start != 2*sec || f.End != 4*sec || f.Completed != 21 || f.OutTokens != 2100 || f.ReqPerSec != 10.5 || f.OutTokPerSec != 1050 {
		t.Fatalf("window %+v", f)
	}
	if d := f.Latency[TTFT]; d.Count != 20 || d.Max > 101*time.Millisecond || f.Latency[TTFB].Count != 0 {
		t.Fatalf("TTFT %+v, TTFB %+v", d, f.Latency[TTFB])
	}
	s.tick(6*sec, 64, 128) // a new setting: not steady at it yet
	if f := s.figures(); f.Reached || f.Target != 128 || f.Completed != 0 {
		t.Fatalf("a new target: %+v", f)
	}
	s.tick(7*sec, 10, 0) // the open loop, a pause: none sought
	if f := s.figures(); f.Reached || f.Target != 0 {
		t.Fatalf("none sought: %+v", f)
	}
}

// TestSteadyAgainstSim: a closed loop on the sim reaches its steady
// state; the window's requests are some of the run's, inside it, and
// the drain at the end (the last requests back, fewer in flight) is out.
func TestSteadyAgainstSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("small")
	r := startRig(t, p, Knobs{Concurrency: 16, PromptTokens: 16, OutputTokens: 4}, func(c *Config) { c.MaxRequests = 160 })
	s := waitFor(t, r.eng, 60*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	st := s.Steady
	if !st.Reached || st.Target != 16 || st.Completed == 0 || st.Completed >= s.Run.Completed || st.End <= st.Start || st.End > s.Elapsed {
		t.Fatalf("steady %+v; run completed %d in %v", st, s.Run.Completed, s.Elapsed)
	}
	if st.Latency[TTFT].Count == 0 || st.Latency[E2E].Count != st.Completed || st.ReqPerSec <= 0 {
		t.Fatalf("steady figures %+v", st)
	}
	t.Logf("steady %v..%v: %d requests, %.1f req/s (run %.1f), TTFT p50 %v (run %v)", st.Start, st.End, st.Completed, st.ReqPerSec, s.Run.ReqPerSec,
		st.Latency[TTFT].P50, s.Run.Latency[TTFT].P50)
}
