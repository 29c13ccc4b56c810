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
	return probe.Result{Start: start, HasTTFT: true, TTFT: ttft, E2E: last, OutputTokens: tokens, InputTokens: 8, Messages: messages}
}

// TestTokensByArrival: eight streams in lock-step, each streaming for 3 s
// and telling its Live each message as it comes, half of them one token a
// message and half in batches the server counts apart from the messages.
// The messages' tokens land in the seconds they arrived in, within a tick,
// while the streams run (no empty second); the server's correction lands
// in the second its request ended; the series sums to the total. The 6 s
// are a synctest bubble's virtual time.
func TestTokensByArrival(t *testing.T) { synctest.Test(t, testTokensByArrival) }

func testTokensByArrival(t *testing.T) {
	var n atomic.Int64
	do := func(ctx context.Context, req probe.Request) probe.Result {
		start := time.Now()
		req.Live.Begin(start)
		messages, tokens := 128, 128
		if n.Add(1)%2 == 1 {
			messages, tokens = 40, 130
		}
		// The messages stop at 2.8 s, so that the second round's last
		// ones fall before the run's sixth second however late it starts.
		ttft, last := 100*time.Millisecond, 2800*time.Millisecond
		for i := range messages {
			off := ttft + (last-ttft)*time.Duration(i)/time.Duration(messages-1)
			tm := time.NewTimer(off - time.Since(start))
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return probe.Result{Class: probe.Canceled}
			}
			req.Live.Add(start, time.Since(start), probe.Answer)
		}
		e2e := time.Since(start)
		// The usage message and the end of the stream come at 3.05 s.
		time.Sleep(3050*time.Millisecond - e2e)
		return streamResult(start, ttft, e2e, messages, tokens)
	}
	// The default tick: snapshots, not the streams, cost real time here.
	var mid Snapshot // a snapshot in the middle of the first round
	eng, err := New(Config{Do: do, Knobs: Knobs{Concurrency: 8, PromptTokens: 8, OutputTokens: 128}, MaxRequests: 16, Tick: DefaultTick})
	if err != nil {
		t.Fatal(err)
	}
	snaps, cancelSub := eng.Subscribe()
	defer cancelSub()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go eng.Run(ctx) //nolint:errcheck // ends with ctx
	var s Snapshot
	for snap := range snaps {
		if mid.Seq == 0 && snap.Elapsed >= 2*time.Second {
			mid = snap
		}
		s = snap
	}
	if mid.TotalCompleted != 0 || mid.Series[1].OutTokens < 8*40/3 {
		t.Errorf("2 s in, before any request ended: %d completed, %+v", mid.TotalCompleted, mid.Series)
	}
	if mid.Latency[TTFT].Count != 8 || mid.Latency[ITL].Count == 0 || mid.Streams.Generating != 8 {
		t.Errorf("2 s in: %d TTFTs, %d ITLs in the window, streams %+v", mid.Latency[TTFT].Count, mid.Latency[ITL].Count, mid.Streams)
	}
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
	// The second round's corrections are in the second it ended in, the
	// seventh, which the run ended in before it was whole.
	if sum+4*90 != s.TotalOutTokens || s.Run.DeliveredTokens != s.TotalOutTokens {
		t.Errorf("the series sums to %d tokens (+%d), the run delivered %d, completed %d: %+v", sum, 4*90, s.Run.DeliveredTokens, s.TotalOutTokens, s.Series)
	}
	// The seconds wholly inside a round's streams (1 and 4) carry as many
	// messages each: 4×128/2.7 + 4×40/2.7 a second, give or take one a
	// stream at the edges of the seconds; the first round's corrections
	// (4×90) are in the second it ended in, 3.
	want := int64(8 * (128 + 40) * 10 / 2 / 27)
	for _, sec := range []int{1, 4} {
		if p := s.Series[sec]; p.OutTokens < want-16 || p.OutTokens > want+16 {
			t.Errorf("second %d: %d tokens, want %d±16: %+v", sec, p.OutTokens, want, s.Series)
		}
	}
	if s.Series[3].OutTokens < 4*90 {
		t.Errorf("second 3: %d tokens, want the 360 of the first round's corrections and more: %+v", s.Series[3].OutTokens, s.Series)
	}
}

// TestTokensCorrectSealedSeconds: a request whose messages were not yet
// folded when their seconds were sealed adds their tokens to those sealed seconds, in the series
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
	a.add(finished(t0, streamResult(t0, 500*time.Millisecond, 3500*time.Millisecond, 31, 100), ph), 3500*time.Millisecond)
	ph.outstanding.Add(-1)
	s := a.snapshot(4200*time.Millisecond, ph, 0)
	// The messages' tokens in their own seconds, the server's correction
	// (100 - 31) in the one the request ended.
	want := []int64{5, 10, 10, 6 + 69}
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
	a.add(finished(t0, streamResult(t0, 0, now, 2, 50), ph), now)
	ph.outstanding.Add(-1)
	s = a.snapshot(now+1500*time.Millisecond, ph, 0) // the last message's second sealed
	var sum int64
	for _, p := range s.Series {
		sum += p.OutTokens
	}
	if sum != 49 || s.TotalOutTokens != 150 {
		t.Fatalf("series %d tokens (want the last message's and the correction, 49), total %d", sum, s.TotalOutTokens)
	}
}
