package load

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestPausedWindowHolds: paused with nothing out, the window's figures
// stay as the pause found them (they drifted, 6.5 → 8.0 req/s while
// nothing was sent, then fell to nothing as the window slid off the
// measured seconds onto the pause); resumed, they move again. The
// seconds are a synctest bubble's virtual time.
func TestPausedWindowHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startFake(t, Config{Do: fakeDo(50 * time.Millisecond), Knobs: Knobs{Concurrency: 4, PromptTokens: 8, OutputTokens: 4}, Window: 10 * time.Second, Tick: 250 * time.Millisecond})
		waitFor(t, e, time.Minute, "6 s of load", func(s Snapshot) bool { return s.Elapsed >= 6*time.Second })
		e.SetPaused(true)
		held := waitFor(t, e, time.Minute, "the pause's last request in", func(s Snapshot) bool { return s.Knobs.Paused && s.InFlight == 0 })
		if held.ReqPerSec <= 0 || held.Completed == 0 {
			t.Fatalf("the window at the pause: %.1f req/s, %d completed", held.ReqPerSec, held.Completed)
		}
		later := waitFor(t, e, time.Minute, "15 s of pause", func(s Snapshot) bool { return s.Elapsed >= held.Elapsed+15*time.Second })
		if later.ReqPerSec != held.ReqPerSec || later.Completed != held.Completed || later.Latency[E2E] != held.Latency[E2E] || later.Covered != held.Covered {
			t.Fatalf("paused, the window moved: %.2f req/s (%d) at the pause, %.2f (%d) 15 s on", held.ReqPerSec, held.Completed, later.ReqPerSec, later.Completed)
		}
		e.SetPaused(false)
		waitFor(t, e, time.Minute, "the load back in the window", func(s Snapshot) bool { return !s.Knobs.Paused && s.Completed > held.Completed+20 })
	})
}
