package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestHeldNarrow: each look's interval is the running intersection of
// the looks before; a disjoint one starts it over; reset forgets.
func TestHeldNarrow(t *testing.T) {
	var h held
	for _, c := range []struct{ lo, hi, wantLo, wantHi float64 }{
		{-1, math.Inf(1), -1, math.Inf(1)},
		{0.1, 0.5, 0.1, 0.5},
		{-0.2, 0.4, 0.1, 0.4},        // a wider look keeps the narrower
		{0.2, math.Inf(1), 0.2, 0.4}, // each end on its own
		{0.6, 0.9, 0.6, 0.9},         // disjoint: the newest
		{-0.1, 0.7, 0.6, 0.7},        // and narrowed from there
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
// the same as the baseline for 40 s more. A look at 40 s calls it worse;
// the look at 80 s, read alone, no longer would (its interval, wider and
// lower, holds +5 %), but it overlaps the first, and their intersection
// still calls it: the call a --fail-fast gate acted on is the
// conclusion's. A new setting starts over.
func TestAnytimeKeepsACall(t *testing.T) {
	o := Options{Anytime: true}
	feed := func(s *Samples, look func(Comparison)) {
		rng := rand.New(rand.NewPCG(7, 8))
		t0 := time.Unix(0, 0)
		synth(s, rng, t0, 0, 40, 20, 1.5, 0, 0)
		look(s.Compare(o))
		synth(s, rng, t0, 40, 40, 20, 1, 0, 0)
		look(s.Compare(o))
	}
	s, looks := NewSamples(DefaultStats(), 0, time.Unix(0, 0)), 0
	feed(s, func(c Comparison) {
		looks++
		if r := ttftP50(t, c); r.Verdict != Worse {
			t.Errorf("look %d: TTFT p50 %v (%+.3f…%+.3f), want worse kept", looks, r.Verdict, r.Lo, r.Hi)
		}
	})
	once := NewSamples(DefaultStats(), 0, time.Unix(0, 0))
	feed(once, func(Comparison) {})
	once.held.reset() // a fresh look at the end
	r := ttftP50(t, once.Compare(o))
	t.Logf("read once at the end: TTFT p50 %v (%+.3f…%+.3f)", r.Verdict, r.Lo, r.Hi)
	if r.Verdict == Worse {
		t.Errorf("read once at the end: TTFT p50 worse: the test needs a look the first call holds up")
	}
	s.SetKnobs(load.Knobs{Concurrency: 4})
	synth(s, rand.New(rand.NewPCG(9, 9)), time.Unix(0, 0), 2000, 60, 20, 1, 0, 0)
	if r := ttftP50(t, s.Compare(o)); r.Verdict == Worse {
		t.Errorf("a new setting kept the old one's call: %+.3f…%+.3f", r.Lo, r.Hi)
	}
}

// TestAnytimeBetterThenWorse: a canary 40 % faster while it warms up
// (40 s), then 50 % slower for ten minutes, is called worse and breaches
// ttft_p50<+10%: the early "better" is no interval every later one must
// stay inside (the intersection starts over where they part).
func TestAnytimeBetterThenWorse(t *testing.T) {
	reg, err := ParseRegression("ttft_p50<+10%")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Anytime: true, Regressions: []Regression{reg}}
	s := NewSamples(Stats(o.Regressions), 0, time.Unix(0, 0))
	rng := rand.New(rand.NewPCG(3, 4))
	synth(s, rng, time.Unix(0, 0), 0, 40, 20, 0.6, 0, 0)
	if r := ttftP50(t, s.Compare(o)); r.Verdict != Better {
		t.Fatalf("warming up: %v (%+.3f…%+.3f), want better", r.Verdict, r.Lo, r.Hi)
	}
	var c Comparison
	for from := 40; from < 640; from += 60 {
		synth(s, rng, time.Unix(0, 0), from, 60, 20, 1.5, 0, 0)
		c = s.Compare(o)
	}
	if r := ttftP50(t, c); r.Verdict != Worse || !c.Breached() {
		t.Errorf("after ten slower minutes: %v (%+.3f…%+.3f), breached %v", r.Verdict, r.Lo, r.Hi, c.Breached())
	}
}

// ttftP50 is c's TTFT p50 result.
func ttftP50(t *testing.T, c Comparison) Result {
	t.Helper()
	for _, r := range c.Results {
		if r.Stat.Name == "ttft_p50" {
			return r
		}
	}
	t.Fatalf("no ttft_p50 in %v", c.Results)
	return Result{}
}
