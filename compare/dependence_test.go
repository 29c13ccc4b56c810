package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestDesignEffect: independent requests have a design effect near one;
// requests of a second that share one factor have one well above it,
// and the sequences then need more requests to call the same difference.
func TestDesignEffect(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	fill := func(shared float64) *ring {
		r := newRing(DefaultSamples)
		for sec := range int32(200) {
			f := math.Exp(shared * rng.NormFloat64())
			for range 20 {
				r.add(sample{sec, f * math.Exp(0.4*rng.NormFloat64())})
			}
		}
		return r
	}
	// Independent: the estimate over 5 s blocks is about one (1.004 on
	// average over 400 rings), the reading an upper bound a little above.
	var sum, sumBlocks float64
	for range 40 {
		r := fill(0)
		sum += ringDeff(r, 1)
		d, _ := dispersion(r5(r))
		sumBlocks += d
	}
	if d := sumBlocks / 40; d < 0.88 || d > 1.12 {
		t.Errorf("independent requests: design effect %.2f over 5 s blocks on average, want about 1", d)
	}
	if d := sum / 40; d < 1 || d > 1.3 {
		t.Errorf("independent requests: read at %.2f on average, want a little above 1", d)
	}
	cor := fill(0.3)
	if d := ringDeff(cor, 1); d < 3 {
		t.Errorf("requests sharing their second's factor: design effect %.2f, want well above 1", d)
	}
	// One code for a ring and for counts by second (Binned's).
	items := cor.items()
	each := func(yield func(int32, float64, int64)) {
		for _, s := range items {
			yield(s.sec, s.v, 1)
		}
	}
	if a, b := ringDeff(cor, 1), designEffect(each, 1); math.Abs(a-b) > 1e-9 {
		t.Errorf("ring %v, counts by second %v", a, b)
	}
	if d := ringDeff(newRing(4), 1); d != 1 {
		t.Errorf("no samples: %v, want 1", d)
	}
	// A side read at D = 4 weighs as a quarter of its requests: a
	// difference called at once with independent requests is not.
	var base, can Counts
	for i := range 1000 {
		base.Values, can.Values = append(base.Values, float64(i+1)), append(can.Values, 1.3*float64(i+1))
		base.N, can.N = append(base.N, 1), append(can.N, 1)
	}
	if w, _ := quantileCalls(base, can, 0.5, 0.01, 0, 0); !w {
		t.Fatal("independent: a median 30 % higher over 1,000 requests a side not called")
	}
	base.DesignEffect, can.DesignEffect = 20, 20
	if w, _ := quantileCalls(base, can, 0.5, 0.01, 0, 0); w {
		t.Error("design effect 20: still called from 50 effective requests a side")
	}
}

// TestSamplesAnytimeOff: with SetAnytime(false) no request is counted
// per value (the bootstrap's rings only); with it on, the sequences judge.
func TestSamplesAnytimeOff(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, on := range []bool{false, true} {
		s := NewSamples(DefaultStats(), 0, t0)
		s.SetAnytime(on)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 2000 {
			for sd := range 2 {
				ttft := 200 * math.Exp(0.4*rng.NormFloat64())
				res := probe.Result{HasTTFT: true, TTFT: ms(ttft), E2E: ms(ttft + 1000), OutputTokens: 128}
				s.Observe(Side(sd), load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0.Add(time.Duration(i)*time.Second/perSecond))
			}
		}
		counted := s.sides[0].cnt[load.TTFT] != nil
		r := s.Compare(Options{Anytime: true}).Results[0]
		if counted != on || (r.Verdict == NotEnough) == on {
			t.Errorf("SetAnytime(%v): counted per value %v, TTFT p50 %v", on, counted, r.Verdict)
		}
	}
}

// r5 is a ring's samples counted over blocks of 5 s.
func r5(r *ring) []block {
	var out []block
	for _, s := range r.items() {
		i := int(s.sec / 5)
		for len(out) <= i {
			out = append(out, block{})
		}
		out[i].n++
		if s.v <= 1 {
			out[i].k++
		}
	}
	return out
}
