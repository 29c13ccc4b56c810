package load

import (
	"testing"
	"time"
)

// TestBacklogCounted: an open loop above what --max-in-flight lets out
// counts every arrival. While it runs, the backlog's arrivals are
// waiting, neither sent nor in flight (a report saved then says so); at
// the end those never sent are dropped, in the run's and their phase's
// figures: scheduled = sent + dropped, sent = completed + failed +
// incomplete. The seconds are a synctest bubble's virtual time.
func TestBacklogCounted(t *testing.T) {
	k := Knobs{Mode: OpenLoop, Rate: 400, PromptTokens: 8, OutputTokens: 4}
	t.Run("while it runs", virtual(func(t *testing.T) {
		e := startFake(t, Config{Do: fakeDo(50 * time.Millisecond), Knobs: k, MaxInFlight: 2})
		s := waitFor(t, e, 10*time.Second, "a backlog", func(s Snapshot) bool { return s.Run.Waiting >= 20 })
		// At most the two out, and the results handed on but not yet
		// counted: never the backlog.
		if s.Run.Pending > 4 || s.InFlight > 2 {
			t.Fatalf("pending %d, in flight %d, with --max-in-flight 2 (backlog %d): the backlog counted as sent", s.Run.Pending, s.InFlight, s.Backlog)
		}
		if s.Run.Sent() >= s.Scheduled-s.Run.Waiting+1 || s.Run.Scheduled() != s.Run.Sent()+s.Run.Waiting {
			t.Fatalf("sent %d, waiting %d, scheduled %d", s.Run.Sent(), s.Run.Waiting, s.Scheduled)
		}
	}))
	t.Run("at the end", virtual(func(t *testing.T) {
		s := runFor(t, Config{Do: fakeDo(50 * time.Millisecond), Knobs: k, MaxInFlight: 2, Duration: 300 * time.Millisecond}, 10*time.Second)
		run := s.Run
		if run.Sent() != run.Completed+run.Failed+run.Incomplete {
			t.Fatalf("sent %d = %d + %d + %d", run.Sent(), run.Completed, run.Failed, run.Incomplete)
		}
		if run.Dropped < 50 || s.Dropped != run.Dropped || s.Scheduled != run.Sent()+run.Dropped || s.ArrivalsSent() != run.Sent() || run.Waiting != 0 {
			t.Fatalf("scheduled %d, sent %d, dropped %d (snapshot %d), waiting %d", s.Scheduled, run.Sent(), run.Dropped, s.Dropped, run.Waiting)
		}
		var phases int64
		for _, p := range s.Phases {
			phases += p.Dropped
		}
		if phases != run.Dropped || s.DroppedEver != run.Dropped || s.ScheduledEver != s.Scheduled {
			t.Fatalf("dropped: phases %d, run %d, ever %d; scheduled ever %d", phases, run.Dropped, s.DroppedEver, s.ScheduledEver)
		}
	}))
}
