package load

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
)

// streamResult is a streamed result of messages output-bearing messages
// carrying tokens in all (the server's count), started at start, its first
// message at ttft and the last at last.
func streamResult(start time.Time, ttft, last time.Duration, messages, tokens int) probe.Result {
	r := probe.Result{Start: start, HasTTFT: true, TTFT: ttft, E2E: last, OutputTokens: tokens, InputTokens: 8, Messages: messages}
	for i := 1; i < messages; i++ {
		r.Chunks = append(r.Chunks, ttft+(last-ttft)*time.Duration(i)/time.Duration(messages-1))
	}
	return r
}

// TestTokensByArrival: eight streams in lock-step, each streaming for 3 s,
// half of them one token a message and half in batches the server counts
// apart from the messages. The tokens land in the seconds they arrived in:
// no empty second while the streams flow, and the series sums to the total.
// The 6 s are a synctest bubble's virtual time.
func TestTokensByArrival(t *testing.T) { synctest.Test(t, testTokensByArrival) }

func testTokensByArrival(t *testing.T) {
	var n atomic.Int64
	do := func(ctx context.Context, _ probe.Request) probe.Result {
		start := time.Now()
		kind := n.Add(1) % 2
		tm := time.NewTimer(3 * time.Second)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return probe.Result{Class: probe.Canceled}
		}
		// The messages stop at 2.8 s, so that the second round's last
		// ones fall before the run's sixth second however late it starts.
		if kind == 0 {
			return streamResult(start, 100*time.Millisecond, 2800*time.Millisecond, 128, 128)
		}
		return streamResult(start, 100*time.Millisecond, 2800*time.Millisecond, 40, 130)
	}
	// The default tick: snapshots, not the streams, cost real time here.
	s := runFor(t, Config{Do: do, Knobs: Knobs{Concurrency: 8, PromptTokens: 8, OutputTokens: 128}, MaxRequests: 16, Tick: DefaultTick}, 20*time.Second)
	if s.TotalCompleted != 16 || s.TotalOutTokens != 8*128+8*130 {
		t.Fatalf("%d completed, %d tokens", s.TotalCompleted, s.TotalOutTokens)
	}
	if len(s.Series) < 6 {
		t.Fatalf("%d seconds in the series, want 6 (ended at %v)", len(s.Series), s.Elapsed)
	}
	var sum int64
	for _, p := range s.Series {
		sum += p.OutTokens
		if p.Sec < 6 && p.OutTokens == 0 {
			t.Errorf("second %d has no tokens while eight streams flowed: %+v", p.Sec, s.Series)
		}
	}
	if sum != s.TotalOutTokens {
		t.Errorf("the series sums to %d tokens, the run to %d: %+v", sum, s.TotalOutTokens, s.Series)
	}
	// The whole seconds in the middle of the streams carry about as much.
	lo, hi := s.Series[1].OutTokens, s.Series[1].OutTokens
	for _, p := range s.Series[1:5] {
		lo, hi = min(lo, p.OutTokens), max(hi, p.OutTokens)
	}
	if float64(hi) > 1.5*float64(lo) {
		t.Errorf("seconds 1-4 range from %d to %d tokens: %+v", lo, hi, s.Series)
	}
}

// TestTokensCorrectSealedSeconds: a request ending seconds after its
// messages arrived adds its tokens to those sealed seconds, in the series
// and the window alike; seconds older than the ring are lost to the series,
// never to the totals.
func TestTokensCorrectSealedSeconds(t *testing.T) {
	t0 := time.Now()
	a := newAggregator(t0, 10*time.Second)
	ph := &phaseInfo{id: 1}
	ph.outstanding.Add(2)
	a.snapshot(3500*time.Millisecond, ph, 1) // seconds 0-2 sealed, empty
	// 31 messages, 100 tokens, from 0.5 s to 3.5 s: one message every
	// 100 ms, 5 in second 0, then 10 a second, 6 in second 3.
	a.add(outcome{res: streamResult(t0, 500*time.Millisecond, 3500*time.Millisecond, 31, 100), phase: ph}, 3500*time.Millisecond)
	ph.outstanding.Add(-1)
	s := a.snapshot(4200*time.Millisecond, ph, 0)
	want := []int64{100 * 5 / 31, 100*15/31 - 100*5/31, 100*25/31 - 100*15/31, 100 - 100*25/31}
	if len(s.Series) != 4 {
		t.Fatalf("series %+v", s.Series)
	}
	for i, p := range s.Series {
		if p.OutTokens != want[i] {
			t.Fatalf("second %d: %d tokens, want %d (series %+v)", i, p.OutTokens, want[i], s.Series)
		}
	}
	if got := s.OutTokPerSec * s.Covered.Seconds(); got < 99.999 || got > 100.001 {
		t.Fatalf("the window holds %v tokens, want 100", got)
	}
	if s.TotalOutTokens != 100 || s.Run.OutTokens != 100 || s.Phases[0].OutTokens != 100 {
		t.Fatalf("totals %d %d %d", s.TotalOutTokens, s.Run.OutTokens, s.Phases[0].OutTokens)
	}
	// A request whose stream began before the ring's oldest second.
	now := time.Duration(ringSeconds+10) * time.Second
	a.add(outcome{res: streamResult(t0, 0, now, 2, 50), phase: ph}, now)
	ph.outstanding.Add(-1)
	s = a.snapshot(now+1500*time.Millisecond, ph, 0) // the last message's second sealed
	var sum int64
	for _, p := range s.Series {
		sum += p.OutTokens
	}
	if sum != 25 || s.TotalOutTokens != 150 {
		t.Fatalf("series %d tokens (want the 25 of the last message), total %d", sum, s.TotalOutTokens)
	}
}
