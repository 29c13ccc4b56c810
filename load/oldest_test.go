package load

import (
	"testing"
	"time"
)

// TestOldestInFlight: against an endpoint that never answers, the age of
// the oldest request in flight grows with the run's time, in both loops,
// and is zero once nothing is in flight. The run's time is a synctest
// bubble's virtual time.
func TestOldestInFlight(t *testing.T) {
	closed := Knobs{Concurrency: 3, PromptTokens: 8, OutputTokens: 4}
	open := closed
	open.Mode, open.Rate = OpenLoop, 20
	for _, tt := range []struct {
		name  string
		knobs Knobs
	}{{"closed loop", closed}, {"open loop", open}} {
		t.Run(tt.name, virtual(func(t *testing.T) {
			e := startFake(t, Config{Do: fakeDo(-1), Knobs: tt.knobs, Duration: 600 * time.Millisecond, Drain: 100 * time.Millisecond})
			a := waitFor(t, e, 2*time.Second, "a request in flight for 100 ms", func(s Snapshot) bool { return s.OldestInFlight >= 100*time.Millisecond })
			// Every request hangs, so the oldest is the first: as old as the run.
			if d := a.Elapsed - a.OldestInFlight; d < 0 || d > 100*time.Millisecond {
				t.Fatalf("at %v the oldest request is %v old", a.Elapsed, a.OldestInFlight)
			}
			b := waitFor(t, e, 2*time.Second, "300 ms later", func(s Snapshot) bool { return s.Elapsed >= a.Elapsed+300*time.Millisecond && s.InFlight > 0 })
			if grew := b.OldestInFlight - a.OldestInFlight; grew < 250*time.Millisecond {
				t.Fatalf("the oldest request aged %v in %v", grew, b.Elapsed-a.Elapsed)
			}
			s := waitFor(t, e, 5*time.Second, "done", func(s Snapshot) bool { return s.Done })
			if s.OldestInFlight != 0 || s.InFlight != 0 || s.Incomplete == 0 {
				t.Fatalf("done: oldest %v, in flight %d, incomplete %d", s.OldestInFlight, s.InFlight, s.Incomplete)
			}
		}))
	}
}
