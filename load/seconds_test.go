package load

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The sealed seconds agree with the whole-run record second by second,
// their histograms decode to the values recorded (every TTFT 10 ms,
// every E2E 40 ms), since N gives only the seconds after N, and they
// stay readable after Run. Virtual time (a synctest bubble).
func TestSeconds(t *testing.T) { synctest.Test(t, testSeconds) }

func testSeconds(t *testing.T) {
	eng := streams(t)
	if s, err := eng.Seconds(context.Background(), -1); err != nil || len(s.Seconds) != 0 {
		t.Fatalf("before Run: %+v, %v", s, err)
	}
	stop := running(eng)
	defer stop()
	waitFor(t, eng, 20*time.Second, "3 s", func(s Snapshot) bool { return s.Elapsed > 3200*time.Millisecond })
	eng.SetPaused(true)
	waitFor(t, eng, 10*time.Second, "drain", func(s Snapshot) bool { return s.InFlight == 0 })
	time.Sleep(1100 * time.Millisecond) // the last second with requests sealed
	all, err := eng.Seconds(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := eng.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Seconds) < 4 || len(all.Seconds) != len(h.Seconds) || all.From != 0 || all.Current <= all.Seconds[len(all.Seconds)-1].Sec {
		t.Fatalf("%d sealed seconds, %d in the record, from %d, current %d", len(all.Seconds), len(h.Seconds), all.From, all.Current)
	}
	var ttfts int64
	for i, s := range all.Seconds {
		r := h.Seconds[i]
		if s.Sec != int64(i) || s.Completed != int64(r.Completed) || s.Failed != int64(r.Failed) || s.InTokens != int64(r.InTokens) {
			t.Fatalf("second %d: %+v, the record %+v", i, s, r)
		}
		if s.Completed > 0 && (s.Good != s.Completed || s.OutTokens == 0) {
			t.Fatalf("second %d: %d good of %d, %d tokens", i, s.Good, s.Completed, s.OutTokens)
		}
		for m, want := range map[Metric]int64{TTFT: 10_000, E2E: 40_000} {
			enc := s.Encoded(m)
			if s.Count(m) == 0 {
				if enc != nil {
					t.Fatalf("second %d: an empty %v encoded", i, m)
				}
				continue
			}
			d, err := hdr.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if d.TotalCount() != s.Count(m) || !d.ValuesAreEquivalent(d.Min(), want) || !d.ValuesAreEquivalent(d.Max(), want) {
				t.Fatalf("second %d %v: %d values %d..%d, want %d of %d", i, m, d.TotalCount(), d.Min(), d.Max(), s.Count(m), want)
			}
		}
		ttfts += s.Count(TTFT)
	}
	if run := eng.Latest().Run.Latency[TTFT].Count; ttfts != run {
		t.Fatalf("the seconds hold %d TTFTs, the run %d", ttfts, run)
	}
	after, err := eng.Seconds(context.Background(), 1)
	if err != nil || len(after.Seconds) != len(all.Seconds)-2 || after.Seconds[0].Sec != 2 {
		t.Fatalf("since 1: %d seconds (of %d), %v", len(after.Seconds), len(all.Seconds), err)
	}
	stop()
	end, err := eng.Seconds(context.Background(), -1)
	if err != nil || len(end.Seconds) < len(all.Seconds) {
		t.Fatalf("after Run: %d seconds, %v", len(end.Seconds), err)
	}
}

// Seconds are bounded by the ring and start at the last reset.
func TestSealedBounded(t *testing.T) {
	a := newAggregator(time.Now(), 30*time.Second)
	a.advance((MaxSealedSeconds + 5) * time.Second)
	s := a.sealedSince(-1)
	if len(s.Seconds) != MaxSealedSeconds-1 || s.Seconds[len(s.Seconds)-1].Sec != MaxSealedSeconds+4 {
		t.Fatalf("%d seconds, the last %d", len(s.Seconds), s.Seconds[len(s.Seconds)-1].Sec)
	}
	reset := int64(MaxSealedSeconds + 6)
	a.reset(time.Duration(reset)*time.Second+300*time.Millisecond, 1)
	a.advance(time.Duration(reset+5) * time.Second)
	s = a.sealedSince(-1)
	if s.From != reset || len(s.Seconds) != 5 || s.Seconds[0].Sec != reset {
		t.Fatalf("after the reset at %d s: from %d, %d seconds", reset, s.From, len(s.Seconds))
	}
}
