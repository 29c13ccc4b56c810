package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// synth feeds secs seconds of perSec requests a side into s: log-normal
// latencies with a factor shared by the requests of one second (a batch),
// the canary's scaled by slow; failures with probability errB and errC.
func synth(s *Samples, rng *rand.Rand, t0 time.Time, from, secs, perSec int, slow, errB, errC float64) {
	for sec := from; sec < from+secs; sec++ {
		for side := range 2 {
			batch := math.Exp(0.1 * rng.NormFloat64())
			scale, errP := 1.0, errB
			if side == 1 {
				scale, errP = slow, errC
			}
			for range perSec {
				v := 100 * time.Millisecond.Seconds() * batch * math.Exp(0.15*rng.NormFloat64()) * scale
				ttft := time.Duration(v * float64(time.Second))
				res := probe.Result{HasTTFT: true, TTFT: ttft, E2E: 10 * ttft, OutputTokens: 128}
				if rng.Float64() < errP {
					res.Class = probe.HTTP5xx
				}
				now := t0.Add(time.Duration(sec)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
				s.Observe(Side(side), load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, now)
			}
		}
	}
}

func worse(c Comparison) bool { return c.Worse() }

// TestSyntheticFalsePositives: two sides drawn from one distribution (60 s
// at 6 requests a second, the default sim's load) are called worse in at
// most 5 of 100 seeded runs, at the end and at every look every 5 s.
func TestSyntheticFalsePositives(t *testing.T) {
	if raceDetector {
		t.Skip("pure arithmetic: make test runs it without -race")
	}
	t0 := time.Now()
	final, ever := 0, 0
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := NewSamples(DefaultStats(), 0, t0)
		said := false
		for at := 0; at < 60; at += 5 {
			synth(s, rng, t0, at, 5, 6, 1, 0.01, 0.01)
			c := s.Compare(Options{Seed: seed, Resamples: 500})
			said = said || worse(c)
			if at == 55 && worse(c) {
				final++
				t.Logf("seed %d: %s", seed, c.Line())
			}
		}
		if said {
			ever++
		}
	}
	t.Logf("false positives: %d of 100 at the end, %d of 100 at any look", final, ever)
	if final > 5 {
		t.Errorf("%d false positives of 100 at the end", final)
	}
}

// TestSyntheticDetection: a canary 20 % slower is called slower.
func TestSyntheticDetection(t *testing.T) {
	t0 := time.Now()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		s := NewSamples(DefaultStats(), 0, t0)
		at := -1
		for sec := 0; sec < 60 && at < 0; sec++ {
			synth(s, rng, t0, sec, 1, 6, 1.2, 0, 0)
			if sec >= MinSeconds && worse(s.Compare(Options{Seed: seed, Resamples: 500})) {
				at = sec
			}
		}
		if at < 0 {
			t.Errorf("seed %d: not called in 60 s", seed)
		}
		t.Logf("seed %d: called at %d s", seed, at)
	}
}
