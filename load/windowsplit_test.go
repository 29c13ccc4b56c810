package load

import (
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

// TestWindowTTFTSplit: the window's TTFT split holds the timed requests
// of its seconds, the current one and the sealed ones, and lets them go
// as they leave it (the phase keeps them); a request without the
// server's timings is in none of it; a reset forgets it.
func TestWindowTTFTSplit(t *testing.T) {
	t0 := time.Now()
	ms := time.Millisecond
	a := newAggregator(t0, 10*time.Second)
	ph := &phaseInfo{id: 1, knobs: Knobs{Concurrency: 1, PromptTokens: 10, OutputTokens: 5}}
	timed := func(i int) probe.Result {
		r := okResult(t0, time.Duration(100+i)*ms, time.Second, 5)
		r.Server.Queue, r.Server.HasQueue = time.Duration(i)*ms, true
		r.Server.TTFT, r.Server.HasTTFT = time.Duration(90+i)*ms, true
		return r
	}
	for i := 1; i <= 10; i++ {
		ph.outstanding.Add(1)
		a.add(finished(t0, timed(i), ph), 500*ms)
		ph.outstanding.Add(-1)
	}
	ph.outstanding.Add(1)
	a.add(finished(t0, okResult(t0, 50*ms, time.Second, 5), ph), 600*ms) // untimed
	ph.outstanding.Add(-1)
	check := func(at time.Duration, want int64) Snapshot {
		t.Helper()
		s := a.snapshot(at, ph, 0)
		for i, d := range s.TTFTSplit {
			if d.Count != want {
				t.Fatalf("at %v: part %d counts %d, want %d", at, i, d.Count, want)
			}
		}
		return s
	}
	s := check(800*ms, 10) // the current second's
	if q, g := s.TTFTSplit[SplitQueue], s.TTFTSplit[SplitGap]; !near(q.P50, 5*ms, 0.02) || q.Max < 10*ms-100*time.Microsecond || !near(g.P50, 10*ms, 0.02) {
		t.Fatalf("queue %+v, gap %+v", q, g)
	}
	s = check(5500*ms, 10) // sealed, still in the window
	if !near(s.TTFTSplit[SplitQueue].P50, 5*ms, 0.02) {
		t.Fatalf("sealed queue p50 %v", s.TTFTSplit[SplitQueue].P50)
	}
	s = check(11500*ms, 0) // out of the window
	if s.Phases[0].TTFTSplit[SplitQueue].Count != 10 {
		t.Fatalf("the phase's split: %+v", s.Phases[0].TTFTSplit[SplitQueue])
	}
	a.setWindow(time.Minute)
	check(11600*ms, 10) // a wider window brings it back
	a.reset(12*time.Second, 1)
	ph = &phaseInfo{id: 2, gen: 1, knobs: ph.knobs, start: 12 * time.Second}
	check(12500*ms, 0)
}
