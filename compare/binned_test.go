package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestBinnedIsSamples: the same requests given request by request
// (Samples) and as counts by second (Binned, one value a bucket) make
// the same comparison, interval for interval (the error rate's within
// resampling's noise); a canary twice as slow is
// worse on both.
func TestBinnedIsSamples(t *testing.T) {
	t0 := time.Now()
	for _, slow := range []float64{1, 2} {
		rng := rand.New(rand.NewPCG(7, 1))
		s := NewSamples(DefaultStats(), 0, t0)
		b := NewBinned(DefaultStats(), 0, 0)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		for sec := range 30 {
			for side := range 2 {
				var ok, failed int64
				for range 20 {
					scale := 1.0
					if side == 1 {
						scale = slow
					}
					ttft := time.Duration(float64(50*time.Millisecond) * scale * math.Exp(0.2*rng.NormFloat64()))
					res := probe.Result{HasTTFT: true, TTFT: ttft, E2E: 5 * ttft, OutputTokens: 32}
					if rng.Float64() < 0.02 {
						res.Class = probe.HTTP5xx
					}
					rec := load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 4}}
					s.Observe(Side(side), rec, t0.Add(time.Duration(sec)*time.Second+500*time.Millisecond))
					one := []int64{1}
					b.Latency(Side(side), load.TTFT, int32(sec), []float64{ms(ttft)}, one)
					if !rec.OK() {
						failed++
						continue
					}
					ok++
					b.Latency(Side(side), load.E2E, int32(sec), []float64{ms(res.E2E)}, one)
					if tpot, has := rec.TPOT(); has {
						b.Latency(Side(side), load.TPOT, int32(sec), []float64{ms(tpot)}, one)
					}
				}
				b.Outcomes(Side(side), int32(sec), ok, failed)
			}
		}
		o := Options{Seed: 3, Resamples: 300}
		want, got := s.Compare(o), b.Compare(o)
		for i, w := range want.Results {
			g := got.Results[i]
			if w.Stat.ErrorRate {
				// 0s and 1s: their order, and so the blocks' numbering
				// that the draws pick by, is the sort's; the same
				// intervals within resampling's noise.
				if math.Abs(g.Lo-w.Lo) < 0.01 && math.Abs(g.Hi-w.Hi) < 0.01 {
					g.Lo, g.Hi = w.Lo, w.Hi
				}
			}
			if g.NBaseline != w.NBaseline || g.NCanary != w.NCanary || g.Delta != w.Delta || g.Lo != w.Lo || g.Hi != w.Hi || g.Verdict != w.Verdict {
				t.Errorf("slow %g, %s: binned %+v, samples %+v", slow, w.Stat.Name, g, w)
			}
		}
		if got.Worse() != (slow > 1) {
			t.Errorf("slow %g: worse %v: %s", slow, got.Worse(), got.Line())
		}
	}
}

// TestBinnedLimit: a side takes at most its limit of a metric's samples;
// a second past the room left is thinned alike bucket by bucket, the
// error rate's outcomes too.
func TestBinnedLimit(t *testing.T) {
	b := NewBinned(DefaultStats(), 100, 1)
	b.Latency(Baseline, load.TTFT, 9, []float64{10, 20}, []int64{3000, 1000})
	b.Latency(Baseline, load.TTFT, 8, []float64{30}, []int64{1 << 40}) // no room left
	b.Outcomes(Baseline, 9, 900, 100)
	sd := &b.sides[Baseline]
	var n10, n20 int
	for _, s := range sd.lat[load.TTFT] {
		switch s.v {
		case 10:
			n10++
		case 20:
			n20++
		default:
			t.Errorf("a sample of %g", s.v)
		}
	}
	if n10 != 75 || n20 != 25 {
		t.Errorf("thinned to %d and %d, want 75 and 25", n10, n20)
	}
	var fails int
	for _, s := range sd.errs {
		fails += int(s.v)
	}
	if len(sd.errs) != 100 || fails != 10 {
		t.Errorf("outcomes: %d held, %d failed; want 100 and 10", len(sd.errs), fails)
	}
	if b.Full(Baseline) || b.Full(Canary) {
		t.Error("full without every metric's samples")
	}
}

// TestBinnedTail: seconds past their share keep their tail: a bucket of
// one slow value is kept with the chance of its share, so over the
// seconds a side spans the slow hundredth stays a hundredth; every
// second gives its share whole (none thinned to nothing), and a full
// side spans the seconds asked for however many values each holds.
func TestBinnedTail(t *testing.T) {
	b := NewBinned(DefaultStats(), 4000, 40)
	ms, counts := []float64{10}, []int64{9900}
	for i := range 100 {
		ms, counts = append(ms, float64(100+i)), append(counts, 1)
	}
	secs := 0
	for sec := int32(100); !b.Full(Baseline) && sec > 0; sec-- { // the newest first
		before := len(b.sides[Baseline].lat[load.TTFT])
		for _, m := range []load.Metric{load.TTFT, load.TPOT, load.E2E} {
			b.Latency(Baseline, m, sec, ms, counts)
		}
		b.Outcomes(Baseline, sec, 9900, 100)
		if got := len(b.sides[Baseline].lat[load.TTFT]) - before; got != 100 {
			t.Fatalf("second %d gave %d samples, want its share, 100", sec, got)
		}
		secs++
	}
	slow, fails := 0, 0
	for _, s := range b.sides[Baseline].lat[load.TTFT] {
		if s.v >= 100 {
			slow++
		}
	}
	for _, s := range b.sides[Baseline].errs {
		fails += int(s.v)
	}
	if secs != 40 || slow < 20 || slow > 60 || fails != 40 {
		t.Errorf("%d seconds, %d slow of 4000 (want about 40), %d failures (want 40)", secs, slow, fails)
	}
}

// TestBinnedAnytime: a side full of the bootstrap's samples is never full
// for the confidence sequences, which count every second added.
func TestBinnedAnytime(t *testing.T) {
	b := NewBinned(DefaultStats(), 10, 1)
	for _, m := range []load.Metric{load.TTFT, load.TPOT, load.E2E} {
		b.Latency(Baseline, m, 1, []float64{10}, []int64{100})
	}
	b.Outcomes(Baseline, 1, 100, 0)
	if !b.Full(Baseline) {
		t.Fatal("not full at its limit")
	}
	b.SetAnytime(true)
	if b.Full(Baseline) {
		t.Error("full for the confidence sequences")
	}
}
