package load

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// TestLiveMatchesSim: two streams of 2,000 tokens against the sim, which
// takes about 15 s to send them. Long before they end, every first token
// is in the window within a tick of its arrival (on the engine's clock),
// every output message is counted as it comes (what OnProgress, the
// exporter's feed, is told), and the tokens of every whole second are
// those the sim itself records flushing in that second, within 2 % or 2
// messages, whichever is larger.
func TestLiveMatchesSim(t *testing.T) {
	p, _ := sim.Preset("default")
	var told atomic.Int64 // tokens told to OnProgress
	var ttfts atomic.Int64
	tick := 50 * time.Millisecond
	r := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 16, OutputTokens: 2000}, func(c *Config) {
		c.Tick = tick
		c.OnProgress = func(p Progress) {
			told.Add(p.Tokens)
			if p.HasTTFT {
				ttfts.Add(1)
			}
		}
	})
	r.sim.RecordTokens(30 * time.Second)
	snaps, cancel := r.eng.Subscribe()
	defer cancel()
	// The first message of each stream, as the stream's Live has it: read
	// by the test beside the aggregator, as the Live allows.
	arrivals := map[*flight]time.Duration{}
	var seen []Snapshot
	deadline := time.After(60 * time.Second)
	for len(seen) == 0 || seen[len(seen)-1].Elapsed < 4200*time.Millisecond {
		select {
		case s := <-snaps:
			seen = append(seen, s)
		case <-deadline:
			t.Fatal("no snapshot 4.2 s into the run within 60 s")
		}
		r.eng.board.flying(func(f *flight) {
			if _, ok := arrivals[f]; !ok && f.live.Len() > 0 {
				arrivals[f], _ = f.live.At(0)
			}
		})
	}
	last := seen[len(seen)-1]
	if last.TotalCompleted != 0 {
		t.Fatalf("%d requests completed 4.2 s in: the streams were to be longer", last.TotalCompleted)
	}
	if len(arrivals) != 2 {
		t.Fatalf("%d first messages seen, want 2", len(arrivals))
	}
	for _, s := range seen {
		due := int64(0)
		for _, at := range arrivals {
			if at+tick <= s.Elapsed-time.Millisecond {
				due++
			}
		}
		if s.Latency[TTFT].Count < due {
			t.Errorf("at %v the window holds %d TTFTs, %d arrived a tick before (at %v)", s.Elapsed, s.Latency[TTFT].Count, due, arrivals)
		}
	}
	if ttfts.Load() != 2 || last.Streams.Generating != 2 || last.Streams.Waiting != 0 {
		t.Errorf("%d TTFTs told, streams %+v", ttfts.Load(), last.Streams)
	}
	var series int64
	for _, pt := range last.Series {
		series += pt.OutTokens
	}
	if told.Load() < series || last.Run.DeliveredTokens < series || series == 0 {
		t.Errorf("%d tokens told, %d delivered, %d in the sealed seconds: want them counted as they came", told.Load(), last.Run.DeliveredTokens, series)
	}
	sent := r.sim.TokensSent(r.eng.Started(), time.Second, 4)
	for sec := 1; sec <= 3; sec++ { // the whole seconds: not the first, nor the one in progress
		got, want := last.Series[sec].OutTokens, sent[sec]
		if tol := max(math.Ceil(0.02*float64(want)), 2); math.Abs(float64(got-want)) > tol {
			t.Errorf("second %d: %d tokens counted, the sim flushed %d (±%v): %v", sec, got, want, tol, sent)
		}
	}
	t.Logf("tokens by second: counted %v, the sim's %v", last.Series, sent)
}

// TestStreamsWaitingGeneratingStalled: one request that waits 1 s for its
// first message and one that streams a message every 10 ms for 200 ms and
// then goes silent; the snapshots tell them apart, with the oldest of
// each, and call the silent one stalled once it has been silent past
// StallAfter of its own pace (2 s here), not before. A failure after that
// keeps the TTFT and the delivered tokens. The streaming one reasons for
// five messages before it answers: its TTFO is in the window as it
// arrives too. Virtual time (synctest).
func TestStreamsWaitingGeneratingStalled(t *testing.T) { synctest.Test(t, testStreams) }

func testStreams(t *testing.T) {
	var n atomic.Int64
	do := func(ctx context.Context, req probe.Request) probe.Result {
		start := time.Now()
		req.Live.Begin(start)
		wait := func(d time.Duration) bool {
			tm := time.NewTimer(d)
			defer tm.Stop()
			select {
			case <-tm.C:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if n.Add(1) == 1 { // waits for its first token
			if !wait(time.Second) {
				return probe.Result{Start: start, Class: probe.Canceled}
			}
			req.Live.Add(start, time.Since(start), probe.Answer)
			wait(time.Hour)
			return probe.Result{Start: start, Class: probe.Canceled}
		}
		for i := range 20 {
			if !wait(10 * time.Millisecond) {
				return probe.Result{Start: start, Class: probe.Canceled}
			}
			mark := probe.Answer // reasoning first, then the answer
			if i < 5 {
				mark = probe.Output
			}
			req.Live.Add(start, time.Since(start), mark)
		}
		if !wait(5 * time.Second) {
			return probe.Result{Start: start, Class: probe.Canceled}
		}
		return probe.Result{Start: start, HasTTFT: true, TTFT: 10 * time.Millisecond, E2E: 5200 * time.Millisecond,
			Class: probe.StreamCut, Err: "stream ended before the answer was complete", Messages: 20}
	}
	e := startFake(t, Config{Do: do, Knobs: Knobs{Concurrency: 2, PromptTokens: 4, OutputTokens: 64}, Tick: 50 * time.Millisecond, MaxRequests: 2})
	at := func(d time.Duration) Snapshot {
		time.Sleep(d - e.Latest().Elapsed)
		synctest.Wait()
		return e.Latest()
	}
	s := at(500 * time.Millisecond)
	if st := s.Streams; st.Waiting != 1 || st.Generating != 1 || st.Stalled != 0 || st.OldestWaiting < 400*time.Millisecond {
		t.Errorf("at %v: %+v", s.Elapsed, st)
	}
	if s.Latency[TTFT].Count != 1 || s.Latency[ITL].Count != 19 || s.Run.DeliveredTokens != 20 {
		t.Errorf("at %v: %d TTFTs, %d gaps, %d tokens", s.Elapsed, s.Latency[TTFT].Count, s.Latency[ITL].Count, s.Run.DeliveredTokens)
	}
	// The answer's first token, after five of reasoning, as it arrived.
	if d := s.Latency[TTFO]; d.Count != 1 || d.Max < 55*time.Millisecond || d.Max > 65*time.Millisecond || s.Latency[TTFT].Max > 15*time.Millisecond {
		t.Errorf("at %v: TTFO %+v, TTFT %+v", s.Elapsed, d, s.Latency[TTFT])
	}
	if s = at(2100 * time.Millisecond); s.Streams.Stalled != 0 || s.Streams.Generating != 2 {
		t.Errorf("at %v, 1.9 s silent: %+v", s.Elapsed, s.Streams)
	}
	if s = at(2400 * time.Millisecond); s.Streams.Stalled != 1 || s.Streams.LongestStall < 2*time.Second {
		t.Errorf("at %v, 2.2 s silent: %+v", s.Elapsed, s.Streams)
	}
	s = at(5500 * time.Millisecond) // the silent one failed
	if s.TotalFailed != 1 || s.Latency[TTFT].Count != 2 || s.Run.FailedOutTokens != 20 || s.Run.DeliveredTokens != 21 || s.Run.OutTokens != 0 {
		t.Errorf("after the failure: %d failed, %d TTFTs, %d failed tokens of %d delivered, %d completed's", s.TotalFailed, s.Latency[TTFT].Count,
			s.Run.FailedOutTokens, s.Run.DeliveredTokens, s.Run.OutTokens)
	}
}

// TestReusedFlightStartsEmpty: a flight the aggregator released comes back
// to its slot's next request with nothing of the last one's stream, so a
// look between its publication and its request's first message takes
// nothing twice (and reads nothing its writer is about to overwrite).
func TestReusedFlightStartsEmpty(t *testing.T) {
	t0 := time.Now()
	sl := new(slot)
	f := sl.take(t0)
	f.live.Replay(t0, time.Millisecond, 2*time.Millisecond, 3*time.Millisecond)
	f.release()
	g := sl.take(t0)
	if g != f || g.live.Len() != 0 {
		t.Fatalf("the reused flight shows %d messages of its last request", g.live.Len())
	}
	if _, ok := g.live.Start(); ok {
		t.Fatal("the reused flight shows the last request's start")
	}
}
