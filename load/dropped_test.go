package load

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
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
		do := func(ctx context.Context, r probe.Request) probe.Result { // fakeDo, with its start
			start := time.Now()
			res := fakeDo(50*time.Millisecond)(ctx, r)
			res.Start = start
			return res
		}
		e := startFake(t, Config{Do: do, Knobs: k, MaxInFlight: 2})
		s := waitFor(t, e, 10*time.Second, "a backlog", func(s Snapshot) bool { return s.Run.Waiting >= 20 })
		// At most the two out, and the results handed on but not yet
		// counted: never the backlog.
		if s.Run.Pending > 4 || s.InFlight > 2 {
			t.Fatalf("pending %d, in flight %d, with --max-in-flight 2 (backlog %d): the backlog counted as sent", s.Run.Pending, s.InFlight, s.Backlog)
		}
		if a := s.Arrivals(); a.Sent != s.Run.Sent() || a.Waiting != s.Run.Waiting || a.Scheduled != a.Sent+a.Waiting {
			t.Fatalf("arrivals %+v, run: sent %d, waiting %d", a, s.Run.Sent(), s.Run.Waiting)
		}
		// Each second's starred figures, for the charts: the backlog's
		// wait on top of the service time.
		s = waitFor(t, e, 10*time.Second, "a second sealed", func(s Snapshot) bool { return len(s.Series) >= 2 })
		if p := s.Series[1]; p.E2EIntendedP99 <= p.E2EP99 || p.TTFTIntendedP50 <= p.TTFTP50 || p.E2EIntendedP50 == 0 || p.E2EIntendedP95 == 0 || p.TTFTIntendedP99 == 0 {
			t.Fatalf("second 1: %+v", p)
		}
	}))
	t.Run("at the end", virtual(func(t *testing.T) {
		s := runFor(t, Config{Do: fakeDo(50 * time.Millisecond), Knobs: k, MaxInFlight: 2, Duration: 300 * time.Millisecond}, 10*time.Second)
		run := s.Run
		if run.Sent() != run.Completed+run.Failed+run.Incomplete {
			t.Fatalf("sent %d = %d + %d + %d", run.Sent(), run.Completed, run.Failed, run.Incomplete)
		}
		if run.Dropped < 50 || s.Dropped != run.Dropped || s.Scheduled != run.Sent()+run.Dropped || s.Arrivals() != (ArrivalCounts{Scheduled: s.Scheduled, Sent: run.Sent(), Dropped: run.Dropped}) || run.Waiting != 0 {
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

// TestMixedWalkArrivals: a stage walk that mixes the loops counts as
// arrivals only its open-loop stages' requests (the issue's "400 arrivals
// scheduled, 616 sent" counted the closed stages' too).
func TestMixedWalkArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := []Stage{{Concurrency: 4, Duration: 200 * time.Millisecond}, {Rate: 100, Duration: 200 * time.Millisecond}}
		s := runFor(t, Config{Do: fakeDo(5 * time.Millisecond), Knobs: Knobs{Concurrency: 4, PromptTokens: 8, OutputTokens: 4}, Stages: st, EndAfterStages: true}, 10*time.Second)
		a := s.Arrivals()
		if a.Scheduled != s.Scheduled || a.Sent >= s.Run.Sent() || a.Sent+a.Dropped != s.Scheduled || a.Sent < 15 {
			t.Fatalf("arrivals %+v, scheduled %d, run sent %d", a, s.Scheduled, s.Run.Sent())
		}
	})
}

// TestUnstreamedCounted: the requests answered whole though streamed
// was asked, and those whose output count was estimated, are counted in
// their phase and the run.
func TestUnstreamedCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		do := func(ctx context.Context, r probe.Request) probe.Result {
			res := fakeDo(5*time.Millisecond)(ctx, r)
			res.Unstreamed, res.OutputEstimated, res.HasTTFT = true, true, false
			return res
		}
		s := runFor(t, Config{Do: do, Knobs: Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, MaxRequests: 10}, 10*time.Second)
		if s.Run.Unstreamed != 10 || s.Run.EstimatedOutput != 10 || s.Phases[0].Unstreamed != 10 {
			t.Fatalf("run: %d unstreamed, %d estimated; phase 1: %d", s.Run.Unstreamed, s.Run.EstimatedOutput, s.Phases[0].Unstreamed)
		}
	})
}

// TestTraceSummaryPasses: a replay's summary counts its passes in
// English ("over 1 passes" read as a slip).
func TestTraceSummaryPasses(t *testing.T) {
	for pass, want := range map[int]string{1: " over 1 pass of 2s", 2: " over 2 passes of 2s"} {
		s := TraceStatus{On: true, Name: "t", Format: "jsonl", Speed: 1, Pass: pass, Total: 10, Span: 2 * time.Second}
		if got := s.Summary(); !strings.Contains(got, want) {
			t.Errorf("pass %d: %q, want %q in it", pass, got, want)
		}
	}
}
