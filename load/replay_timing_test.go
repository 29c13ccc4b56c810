package load

import (
	"os"
	"slices"
	"testing"
	"time"
)

// TestReplayTiming: a dense trace of 1,000 arrivals (2 ms apart) replayed
// at 1× reaches the sim with each arrival within 5 ms of its intended
// time, by the sim's own receive times (when its first byte was read),
// not infertop's. A bound of milliseconds needs a machine to itself and
// no race detector: it runs in a stage of its own (make test-trace);
// TestReplayAgainstSim is its behavioural half in make test.
func TestReplayTiming(t *testing.T) {
	if os.Getenv("INFERTOP_TRACE_TIMING") == "" {
		t.Skip("the timing stage: INFERTOP_TRACE_TIMING=1 (make test-trace)")
	}
	const n, bound = 1000, 5 * time.Millisecond
	tr, want := denseTrace(t, n, 8, 2*time.Millisecond)
	eng, srv, stop := startTraceRig(t, cachedSim(), tr)
	s := waitFor(t, eng, 2*time.Minute, "the replay's end", func(s Snapshot) bool { return s.Done })
	stop()
	recs := srv.Sim.Records()
	if len(recs) != n || s.TotalCompleted != n {
		t.Fatalf("%d records, %d completed, want %d", len(recs), s.TotalCompleted, n)
	}
	at := make([]time.Time, n)
	for i, r := range recs {
		at[i] = r.Arrived
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	// The sim's clock and the trace's differ by an offset: the median of
	// their differences (sorted to sorted: the matching with the least
	// largest difference).
	diffs := make([]time.Duration, n)
	for i := range at {
		diffs[i] = at[i].Sub(at[0]) - tr.Entries[i].At
	}
	sorted := slices.Clone(diffs)
	slices.Sort(sorted)
	off := sorted[n/2]
	var worst time.Duration
	late := 0
	for i, d := range diffs {
		dev := d - off
		if dev < 0 {
			dev = -dev
		}
		worst = max(worst, dev)
		if dev > bound {
			late++
			if late <= 5 {
				t.Errorf("arrival %d at %v of the trace reached the sim %v off its intended time", i, tr.Entries[i].At, dev)
			}
		}
	}
	t.Logf("%d arrivals: worst %v off the intended time (median offset %v, p99 %v); %s", n, worst, off, sorted[n*99/100]-off, s.Trace.Summary())
	if late > 0 {
		t.Errorf("%d of %d arrivals more than %v off", late, n, bound)
	}
	var hits int
	for _, r := range recs {
		hits += r.CachedTokens
	}
	wantHits := 0
	for _, w := range want {
		wantHits += w[1]
	}
	if hits != wantHits {
		t.Errorf("the sim's prefix-cache hits: %d tokens, the trace's %d", hits, wantHits)
	}
}
