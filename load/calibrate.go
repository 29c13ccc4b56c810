package load

import (
	"math"
	"sync"
)

// calibrator learns how the server counts the prompt generator's words:
// tokens = a·words + b (b is a chat template's overhead), fitted by least
// squares over the last 64 requests whose server reported prompt tokens,
// so the prompt lengths asked for are the lengths the server sees.
type calibrator struct {
	mu     sync.Mutex
	xs, ys [64]float64
	n      int // observations kept (up to 64)
	next   int
}

// words is how many words make target tokens.
func (c *calibrator) words(target int) int {
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
	mx /= float64(c.n)
	my /= float64(c.n)
	var sxx, sxy float64
	for i := range c.n {
		dx := c.xs[i] - mx
		sxx += dx * dx
		sxy += dx * (c.ys[i] - my)
	}
	a, b := my/mx, 0.0 // one length seen so far: a plain ratio
	if sxx > 1e-9*mx*mx && c.n >= 3 {
		if fa := sxy / sxx; fa > 0.2 && fa < 5 {
			a, b = fa, my-fa*mx
		}
	}
	// A server whose count does not follow the words (a fixed usage, an API
	// that counts something else) must not send the prompts to extremes:
	// outside a plausible tokens-per-word the words stay as asked, and the
	// correction is bounded to a factor of three either way.
	if a < 0.2 || a > 5 || math.IsNaN(a) || math.IsNaN(b) {
		return target
	}
	w := int(math.Round((float64(target) - b) / a))
	return min(max(w, target/3, 1), 3*target+3)
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
