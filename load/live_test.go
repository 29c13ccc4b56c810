package load

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

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
