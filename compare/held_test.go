package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestHeldNarrow: each look's interval is the running intersection of
// the looks before; a disjoint one leaves them; reset forgets.
func TestHeldNarrow(t *testing.T) {
	var h held
	for _, c := range []struct{ lo, hi, wantLo, wantHi float64 }{
		{-1, math.Inf(1), -1, math.Inf(1)},
		{0.1, 0.5, 0.1, 0.5},
		{-0.2, 0.4, 0.1, 0.4},        // a wider look keeps the narrower
		{0.2, math.Inf(1), 0.2, 0.4}, // each end on its own
		{0.6, 0.9, 0.2, 0.4},         // disjoint: the call made stands
	} {
		if lo, hi := h.narrow("ttft_p99", c.lo, c.hi); lo != c.wantLo || hi != c.wantHi {
			t.Errorf("narrow(%v, %v) = %v, %v; want %v, %v", c.lo, c.hi, lo, hi, c.wantLo, c.wantHi)
		}
	}
	if lo, hi := h.narrow("tpot_p50", -0.5, 0.5); lo != -0.5 || hi != 0.5 {
		t.Errorf("another statistic narrowed by the first's: %v, %v", lo, hi)
	}
	h.reset()
	if lo, hi := h.narrow("ttft_p99", -1, 1); lo != -1 || hi != 1 {
		t.Errorf("after a reset: %v, %v", lo, hi)
	}
}

// TestAnytimeKeepsACall: a canary 50 % slower for its first 40 s, then
// the same as the baseline for 25 minutes. A look at 40 s calls it worse,
// and every later look still does, though their intervals soon miss the
// first's (the load changed under the sequence): the call a --fail-fast
// gate acted on is the conclusion's. The same
// data read once at the end, with no look before, call no difference:
// the slow stretch is 3 % of the requests. A new setting starts over.
func TestAnytimeKeepsACall(t *testing.T) {
	o := Options{Anytime: true}
	feed := func(s *Samples, look func(Comparison)) {
		rng := rand.New(rand.NewPCG(7, 8))
		t0 := time.Unix(0, 0)
		synth(s, rng, t0, 0, 40, 20, 1.5, 0, 0)
		look(s.Compare(o))
		for from := 40; from < 40+25*60; from += 300 {
			synth(s, rng, t0, from, 300, 20, 1, 0, 0)
			look(s.Compare(o))
		}
	}
	ttft := func(c Comparison) Result {
		for _, r := range c.Results {
			if r.Stat.Name == "ttft_p50" {
				return r
			}
		}
		t.Fatalf("no ttft_p50 in %v", c.Results)
		return Result{}
	}
	s, looks := NewSamples(DefaultStats(), 0, time.Unix(0, 0)), 0
	feed(s, func(c Comparison) {
		looks++
		if r := ttft(c); r.Verdict != Worse {
			t.Errorf("look %d: TTFT p50 %v (%+.3f…%+.3f), want worse kept", looks, r.Verdict, r.Lo, r.Hi)
		}
	})
	once := NewSamples(DefaultStats(), 0, time.Unix(0, 0))
	feed(once, func(Comparison) {})
	once.held.reset() // a fresh look at the end
	if r := ttft(once.Compare(o)); r.Verdict == Worse {
		t.Errorf("read once at the end: TTFT p50 worse (%+.3f…%+.3f): the test's slow stretch is too long to need the looks", r.Lo, r.Hi)
	}
	s.SetKnobs(load.Knobs{Concurrency: 4})
	synth(s, rand.New(rand.NewPCG(9, 9)), time.Unix(0, 0), 2000, 60, 20, 1, 0, 0)
	if r := ttft(s.Compare(o)); r.Verdict == Worse {
		t.Errorf("a new setting kept the old one's call: %+.3f…%+.3f", r.Lo, r.Hi)
	}
}
