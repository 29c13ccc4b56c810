package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Length is how token counts spread around the centre the knob sets (and
// the keys move): fixed, uniform or normal. Spread is relative to the
// centre, so doubling the knob doubles the whole distribution.
type Length struct {
	// Kind is "fixed", "uniform" or "normal".
	Kind string
	// Spread is the uniform half-width, or the normal standard deviation,
	// as a fraction of the centre.
	Spread float64
}

// ParseLength reads "256" or "fixed:256", "uniform:MIN-MAX" or
// "normal:MEAN,SD", returning the centre and the shape.
func ParseLength(s string, limit int) (centre int, l Length, err error) {
	bad := func() (int, Length, error) {
		return 0, Length{}, fmt.Errorf("bad length %q: want N, uniform:MIN-MAX or normal:MEAN,SD within 1..%d", s, limit)
	}
	kind, spec, found := strings.Cut(s, ":")
	if !found {
		kind, spec = "fixed", s
	}
	switch kind {
	case "fixed":
		n, err := strconv.Atoi(spec)
		if err != nil || n < 1 || n > limit {
			return bad()
		}
		return n, Length{Kind: "fixed"}, nil
	case "uniform":
		lo, hi, ok := strings.Cut(spec, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || a < 1 || b < a || b > limit {
			return bad()
		}
		c := float64(a+b) / 2
		return int(math.Round(c)), Length{Kind: "uniform", Spread: (float64(b) - c) / c}, nil
	case "normal":
		m, sd, ok := strings.Cut(spec, ",")
		mean, err1 := strconv.Atoi(m)
		dev, err2 := strconv.ParseFloat(sd, 64)
		if !ok || err1 != nil || err2 != nil || mean < 1 || mean > limit || dev < 0 {
			return bad()
		}
		return mean, Length{Kind: "normal", Spread: dev / float64(mean)}, nil
	}
	return bad()
}

// String writes the shape around a centre, as ParseLength reads it.
func (l Length) String(centre int) string {
	switch l.Kind {
	case "uniform":
		h := l.Spread * float64(centre)
		return fmt.Sprintf("uniform:%d-%d", max(1, int(math.Round(float64(centre)-h))), int(math.Round(float64(centre)+h)))
	case "normal":
		return fmt.Sprintf("normal:%d,%d", centre, int(math.Round(l.Spread*float64(centre))))
	}
	return strconv.Itoa(centre)
}

// varies reports whether lengths are drawn (not fixed).
func (l Length) varies() bool { return l.Kind == "uniform" || l.Kind == "normal" }

// sample draws a length around centre, clamped to 1..limit.
func (l Length) sample(rng *rand.Rand, centre, limit int) int {
	c := float64(centre)
	v := c
	switch l.Kind {
	case "uniform":
		v = c + (2*rng.Float64()-1)*l.Spread*c
	case "normal":
		v = c + rng.NormFloat64()*l.Spread*c
	}
	return min(max(int(math.Round(v)), 1), limit)
}
