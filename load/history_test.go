package load

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// The whole-run record agrees with the totals: every completion and output
// token in some second, and the run's encoded TTFT histogram decodes to
// the run's count; it stays readable after Run is over. Its seconds are a
// synctest bubble's virtual time: the requests are streams of 8 tokens in
// 40 ms (TTFT 10 ms), stamped on the bubble's clock.
func TestHistory(t *testing.T) { synctest.Test(t, testHistory) }

// streams is an engine of four streams of 8 tokens in 40 ms (TTFT 10
// ms), stamped on the clock (a synctest bubble's), not yet run.
func streams(t *testing.T) *Engine {
	t.Helper()
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		start := time.Now()
		tm := time.NewTimer(40 * time.Millisecond)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return probe.Result{Class: probe.Canceled}
		}
		return streamResult(start, 10*time.Millisecond, 40*time.Millisecond, 8, 8)
	}
	eng, err := New(Config{Do: do, Knobs: Knobs{Concurrency: 4, PromptTokens: 64, OutputTokens: 8}, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// running runs eng until the stop it returns (which may be called twice).
func running(eng *Engine) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); eng.Run(ctx) }()
	return func() { cancel(); <-ran }
}

func testHistory(t *testing.T) {
	eng := streams(t)
	stop := running(eng)
	defer stop()
	waitFor(t, eng, 20*time.Second, "2 s and requests", func(s Snapshot) bool { return s.Elapsed > 2200*time.Millisecond && s.TotalCompleted > 10 })
	eng.Update(func(k *Knobs) { k.Concurrency = 2 }) // a second phase
	time.Sleep(1200 * time.Millisecond)
	eng.SetPaused(true)
	waitFor(t, eng, 10*time.Second, "drain", func(s Snapshot) bool { return s.InFlight == 0 })
	time.Sleep(1100 * time.Millisecond) // the last second sealed
	live, err := eng.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Seconds) < 3 {
		t.Fatalf("%d seconds", len(live.Seconds))
	}
	stop()
	h, err := eng.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := eng.Latest()
	var done, out int64
	for i, sec := range h.Seconds {
		if sec.Sec != int64(i) {
			t.Fatalf("second %d is numbered %d", i, sec.Sec)
		}
		done += int64(sec.Completed)
		out += int64(sec.OutTokens)
		if sec.Completed > 0 && (sec.E2E[0] == 0 || sec.E2E[0] > sec.E2E[2]) {
			t.Fatalf("second %d: E2E %v", i, sec.E2E)
		}
	}
	// The last second may still be open at the stop.
	if done > s.Run.Completed || done < s.Run.Completed-int64(4) {
		t.Fatalf("seconds hold %d completions, the run %d", done, s.Run.Completed)
	}
	if out > s.Run.OutTokens {
		t.Fatalf("seconds hold %d output tokens, the run %d", out, s.Run.OutTokens)
	}
	if len(h.Phases) < 2 {
		t.Fatalf("%d phases", len(h.Phases))
	}
	paused := map[int]bool{}
	for _, ph := range s.Phases {
		paused[ph.ID] = ph.Knobs.Paused
	}
	for _, ph := range append(h.Phases, h.Run) {
		if ph.Hist[TTFT] == nil && !paused[ph.ID] { // a pause is a phase of no request
			t.Fatalf("phase %d: no TTFT histogram", ph.ID)
		}
	}
	dec, err := hdr.Decode(h.Run.Hist[TTFT])
	if err != nil {
		t.Fatal(err)
	}
	if dec.TotalCount() != s.Run.Latency[TTFT].Count {
		t.Fatalf("decoded %d TTFTs, the run has %d", dec.TotalCount(), s.Run.Latency[TTFT].Count)
	}
}

// The record is bounded: past its limit the oldest go.
func TestHistoryBounded(t *testing.T) {
	a := newAggregator(time.Now(), 30*time.Second)
	a.hist.limit = 100
	a.advance(105 * time.Second)
	h := a.history()
	if len(h.Seconds) > 100 || h.Dropped == 0 {
		t.Fatalf("%d seconds kept, %d dropped", len(h.Seconds), h.Dropped)
	}
	if last := h.Seconds[len(h.Seconds)-1].Sec; last != 104 {
		t.Fatalf("the newest second is %d", last)
	}
}
