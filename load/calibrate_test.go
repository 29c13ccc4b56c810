package load

import (
	"math"
	"testing"

	"github.com/infertop/infertop/sim"
)

// TestCalibratorJump: prompts calibrated at 256 tokens against the sim's
// tokenizer (about 1.16 tokens a word, a few tokens of noise a prompt),
// then a jump to 32,768. The first request of the new length lands within
// 3 % of it, and so does every one after (on main the first went out with
// 48,764 tokens, the next with 38,900: a slope fitted to the noise of one
// length, extrapolated 128 times over).
func TestCalibratorJump(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		var c calibrator
		g := NewPromptGen(seed, 0)
		send := func(target int) int {
			w := c.words(target, 0)
			n := sim.CountTokens(g.Next(w))
			c.observe(w, n)
			return n
		}
		for range 60 {
			send(256)
		}
		for i := range 4 {
			if n := send(32768); math.Abs(float64(n)/32768-1) > 0.03 {
				t.Fatalf("seed %d: request %d at 32,768 went out with %d tokens", seed, i+1, n)
			}
		}
	}
}

// TestCalibratorLadder: the → key pressed sixteen times from the default,
// a few requests at each length: every request within 3 % of its target
// but the run's very first, sent before anything was learnt (on main the
// ladder ended 1.9 times over).
func TestCalibratorLadder(t *testing.T) {
	var c calibrator
	g := NewPromptGen(1, 0)
	for target := DefaultPromptTokens; target <= MaxPromptTokens; target *= 2 {
		for i := range 3 {
			w := c.words(target, 0)
			n := sim.CountTokens(g.Next(w))
			c.observe(w, n)
			first := target == DefaultPromptTokens && i == 0 // nothing learnt yet
			if !first && math.Abs(float64(n)/float64(target)-1) > 0.03 {
				t.Fatalf("request %d at %d went out with %d tokens", i+1, target, n)
			}
		}
	}
}

// TestCalibratorContext: a server whose context is known never gets a
// prompt the calibration expects past it, when the asked length fits.
func TestCalibratorContext(t *testing.T) {
	var c calibrator
	for range 10 {
		c.observe(1000, 1500) // 1.5 tokens a word
	}
	if w := c.words(19900, 20000); float64(w)*1.5 > 20000*(1-contextMargin) {
		t.Fatalf("19,900 asked under a limit of 20,000: %d words (%.0f tokens)", w, float64(w)*1.5)
	}
	if w := c.words(30000, 20000); w != 20000 { // past the limit: as asked, the server's answer the truth
		t.Fatalf("30,000 asked past a limit of 20,000: %d words, want 20000", w)
	}
	if w := c.words(12000, 20000); w != 8000 {
		t.Fatalf("12,000 under a limit of 20,000: %d words, want 8000", w)
	}
}
