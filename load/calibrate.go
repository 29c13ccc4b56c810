package load

import (
	"math"
	"sync"
)

// calibrator learns how the server counts the prompt generator's words,
// from the last 64 requests whose server reported prompt tokens, so the
// prompt lengths asked for are the lengths the server sees.
//
// Two models, the safer one chosen for each target: the plain ratio of
// tokens to words over what was seen (a scale, right at any length for a
// tokenizer without a fixed overhead), and a least-squares line tokens =
// a·words + b (b is a chat template's overhead), used only where its own
// uncertainty says it is better than 1 %. A line fitted to prompts of one
// length is a slope fitted to that length's noise: extrapolated from 256
// tokens to 32,768 it sent 48,764 tokens, past the server's context.
type calibrator struct {
	mu     sync.Mutex
	xs, ys [64]float64
	n      int // observations kept (up to 64)
	next   int
}

// lineTrust is the largest relative standard error of the line's
// prediction at a target for the line to be used there rather than the
// ratio.
const lineTrust = 0.01

// contextMargin is the share of the context kept free of a prompt's
// expected tokens: a few estimates' errors.
const contextMargin = 0.02

// words is how many words make target tokens. When limit > 0 (the most
// tokens the prompt may have: the server's context less the output) and
// target fits under it, the words are kept to what is expected to make
// limit less contextMargin, so that a prompt asked to fit is not sent
// past the context by the estimate's own error.
func (c *calibrator) words(target, limit int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return target
	}
	var mx, my float64
	for i := range c.n {
		mx += c.xs[i]
		my += c.ys[i]
	}
	n := float64(c.n)
	mx /= n
	my /= n
	a, b := my/mx, 0.0 // the ratio
	if la, lb, ok := c.line(target, mx, my); ok {
		a, b = la, lb
	}
	// A server whose count does not follow the words (a fixed usage, an API
	// that counts something else) must not send the prompts to extremes:
	// outside a plausible tokens-per-word the words stay as asked, and the
	// correction is bounded to a factor of three either way.
	if a < 0.2 || a > 5 || math.IsNaN(a) || math.IsNaN(b) {
		return target
	}
	w := int(math.Round((float64(target) - b) / a))
	if limit > 0 && target <= limit {
		w = min(w, int((float64(limit)*(1-contextMargin)-b)/a))
	}
	return min(max(w, target/3, 1), 3*target+3)
}

// line is the least-squares line's slope and intercept; ok when its
// prediction at target is trusted (lineTrust). mx and my are the
// observations' means.
func (c *calibrator) line(target int, mx, my float64) (a, b float64, ok bool) {
	if c.n < 3 {
		return 0, 0, false
	}
	var sxx, sxy float64
	for i := range c.n {
		dx := c.xs[i] - mx
		sxx += dx * dx
		sxy += dx * (c.ys[i] - my)
	}
	if sxx <= 1e-9*mx*mx {
		return 0, 0, false
	}
	a = sxy / sxx
	if a <= 0.2 || a >= 5 {
		return 0, 0, false
	}
	b = my - a*mx
	var rss float64
	for i := range c.n {
		e := c.ys[i] - (a*c.xs[i] + b)
		rss += e * e
	}
	// The prediction's standard error at the target's words, with the
	// rounding of the counts (±0.5) as the least noise.
	n := float64(c.n)
	s2 := max(rss/max(n-2, 1), 1.0/12)
	x := (float64(target) - b) / a
	se := math.Sqrt(s2 * (1/n + (x-mx)*(x-mx)/sxx))
	return a, b, se <= lineTrust*float64(target)
}

// observe records that words made tokens as the server counted them.
func (c *calibrator) observe(words, tokens int) {
	if words <= 0 || tokens <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.xs[c.next], c.ys[c.next] = float64(words), float64(tokens)
	c.next = (c.next + 1) % len(c.xs)
	c.n = min(c.n+1, len(c.xs))
}
