package compare

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// BenchmarkAnytimeLook: one look of the live comparison at 4,096
// requests a side and the five default statistics (Samples.Compare, the
// confidence sequences, Options.Anytime; the bound: under 1 ms, so the dashboard
// can look every tick).
func BenchmarkAnytimeLook(b *testing.B) {
	s := filledSamples(4096)
	b.ResetTimer()
	for range b.N {
		c := s.Compare(Options{Anytime: true})
		if !c.Anytime {
			b.Fatal("not the confidence sequences")
		}
	}
}

// BenchmarkBootstrapLook is the same look with the bootstrap, for the
// note (the default: the bootstrap, 1,000 resamples).
func BenchmarkBootstrapLook(b *testing.B) {
	s := filledSamples(4096)
	b.ResetTimer()
	for range b.N {
		if s.Compare(Options{}).Anytime {
			b.Fatal("not the bootstrap")
		}
	}
}

// filledSamples is Samples holding n requests a side over n/20 seconds,
// lognormal, the canary 10 % slower.
func filledSamples(n int) *Samples {
	t0 := time.Unix(0, 0)
	s := NewSamples(DefaultStats(), 0, t0)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range n {
		for sd, sl := range []side{{ttft: 1, tpot: 1, errP: 0.01}, {ttft: 1.1, tpot: 1.1, errP: 0.01}} {
			ttft, _, e2e, failed := sl.request(rng, 1)
			res := probe.Result{HasTTFT: true, TTFT: ms(ttft), E2E: ms(e2e), OutputTokens: 128}
			if failed {
				res.Class = probe.HTTP5xx
			}
			now := t0.Add(time.Duration(i) * time.Second / perSecond)
			s.Observe(Side(sd), load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, now)
		}
	}
	return s
}

// BenchmarkDesignEffect: one side's design effect over a full ring (a
// look makes one for each statistic and side).
func BenchmarkDesignEffect(b *testing.B) {
	r := newRing(DefaultSamples)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range DefaultSamples {
		r.add(sample{int32(i / perSecond), rng.ExpFloat64()})
	}
	b.ResetTimer()
	for range b.N {
		ringDeff(r, 1)
	}
}
