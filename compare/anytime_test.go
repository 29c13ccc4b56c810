package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// countsOf is xs as exact counts per value.
func countsOf(xs []float64) Counts {
	s := slices.Sorted(slices.Values(xs))
	var c Counts
	for _, x := range s {
		if n := len(c.Values); n > 0 && c.Values[n-1] == x {
			c.N[n-1]++
			continue
		}
		c.Values, c.N = append(c.Values, x), append(c.N, 1)
	}
	return c
}

func lognormal(rng *rand.Rand, n int, median, sigma, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * median * math.Exp(sigma*rng.NormFloat64())
	}
	return out
}

// TestQuantileIntervalCovers: the interval of a known ratio holds it, and
// narrows around it as the requests grow; a clear difference is
// excluded both ways.
func TestQuantileIntervalCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, q := range []float64{0.5, 0.99} {
		prevW := math.Inf(1)
		for _, n := range []int{500, 2000, 8000} {
			b := countsOf(lognormal(rng, n, 100, 0.4, 1))
			c := countsOf(lognormal(rng, n, 100, 0.4, 1.3))
			iv, ok := QuantileInterval(b, c, q, 0.01)
			if !ok {
				t.Fatalf("q %v n %d: not judged", q, n)
			}
			if iv.Lo > 0.3 || iv.Hi < 0.3 {
				t.Errorf("q %v n %d: %+.3f (%+.3f…%+.3f) misses +0.30", q, n, iv.Delta, iv.Lo, iv.Hi)
			}
			if w := iv.Hi - iv.Lo; w >= prevW && !math.IsInf(w, 1) {
				t.Errorf("q %v n %d: width %.3f, not below %.3f", q, n, w, prevW)
			} else {
				prevW = w
			}
			t.Logf("q %v n %d: %+.3f (%+.3f…%+.3f)", q, n, iv.Delta, iv.Lo, iv.Hi)
		}
		b := countsOf(lognormal(rng, 4000, 100, 0.4, 1))
		c := countsOf(lognormal(rng, 4000, 100, 0.4, 1.3))
		if !quantileExcludes(b, c, q, 0.01, 0.1, below) || quantileExcludes(b, c, q, 0.01, 0.4, below) {
			t.Errorf("q %v: +30%% should exclude +10%% from below, and not +40%%", q)
		}
		if !quantileExcludes(b, c, q, 0.01, 0.6, above) || quantileExcludes(b, c, q, 0.01, 0.2, above) {
			t.Errorf("q %v: +30%% should exclude +60%% from above, and not +20%%", q)
		}
	}
}

// TestQuantileIntervalFew: with few requests a p99's upper end is
// unbounded, and its lower end is the least a latency can be.
func TestQuantileIntervalFew(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := countsOf(lognormal(rng, 50, 100, 0.4, 1))
	c := countsOf(lognormal(rng, 50, 100, 0.4, 1))
	iv, ok := QuantileInterval(b, c, 0.99, 0.01)
	if !ok || !math.IsInf(iv.Hi, 1) || iv.Lo != -1 {
		t.Errorf("50 requests a side: %+v, want -1…+Inf", iv)
	}
}

// TestQuantileBuckets: a server's buckets give an interval that holds
// the truth; two sides in one bucket wider than the margin are not
// resolvable.
func TestQuantileBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	edges := []float64{25, 50, 100, 250, 500, 1000, 2500}
	bucket := func(xs []float64) Counts {
		c := Counts{Values: edges, N: make([]int64, len(edges)), Lower: append([]float64{0}, edges[:len(edges)-1]...)}
		for _, x := range xs {
			i, _ := slices.BinarySearch(edges, x)
			c.N[min(i, len(edges)-1)]++
		}
		return c
	}
	b := bucket(lognormal(rng, 20000, 120, 0.3, 1))
	c := bucket(lognormal(rng, 20000, 120, 0.3, 1.03))
	iv, ok := QuantileInterval(b, c, 0.5, 0.01)
	if !ok || iv.Lo > 0.03 || iv.Hi < 0.03 {
		t.Errorf("buckets: %+v misses +3%%", iv)
	}
	_, jb, _ := b.Quantile(0.5)
	_, jc, _ := c.Quantile(0.5)
	if r := resolution(b, c, jb, jc); r < 1 {
		t.Errorf("one bucket 100…250 ms: resolution %v, want 1.5", r)
	}
	res := judgeAnytime(mustStat(t, "ttft_p50"), [2]tally{{c: b, first: 0, last: 60}, {c: c, first: 0, last: 60}}, 0.01, 20)
	if m := margin(res, 0.10); m != NotResolvable {
		t.Errorf("margin +10%% inside a 100…250 ms bucket: %v, want not resolvable", m)
	}
}

func mustStat(t *testing.T, name string) Stat {
	t.Helper()
	s, err := ParseStat(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRateInterval: the interval of two error rates holds their
// difference and excludes zero once it is clear.
func TestRateInterval(t *testing.T) {
	iv, ok := RateInterval(10, 1000, 60, 1000, 0.01)
	if !ok || iv.Lo <= 0 || iv.Lo > 0.05 || iv.Hi < 0.05 {
		t.Errorf("1%% against 6%% of 1000: %+v", iv)
	}
	iv, _ = RateInterval(10, 1000, 12, 1000, 0.01)
	if iv.Lo >= 0 || iv.Hi <= 0 {
		t.Errorf("1%% against 1.2%%: %+v, want zero inside", iv)
	}
	iv, _ = RateInterval(0, 5000, 0, 5000, 0.01)
	if iv.Lo >= 0 || iv.Hi <= 0 || iv.Hi > 0.01 {
		t.Errorf("no failures: %+v", iv)
	}
}
