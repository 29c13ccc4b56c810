package telemetry

import (
	"math"
	"testing"
)

// TestQuantileBucket: the bucket a quantile lies in, with the point
// interpolated inside it; past the last finite bound the bucket is open.
func TestQuantileBucket(t *testing.T) {
	h := &Histogram{Bounds: []float64{1, 2.5, 5, math.Inf(1)}, Counts: []float64{10, 60, 100, 101}}
	for _, c := range []struct {
		q    float64
		want Bucket
	}{{0.05, Bucket{0, 1}}, {0.5, Bucket{1, 2.5}}, {0.99, Bucket{2.5, 5}}, {0.999, Bucket{5, math.Inf(1)}}} {
		b, ok := QuantileBucket(h, nil, c.q)
		if !ok || b != c.want {
			t.Errorf("q %v: %+v %v, want %+v", c.q, b, ok, c.want)
		}
	}
	if est, _ := Quantile(h, nil, 0.99); est < 4.9 || est > 5 {
		t.Fatalf("the point inside (2.5, 5]: %v", est)
	}
	if (Bucket{2.5, 5}).Narrow() || !(Bucket{0.015, 0.016}).Narrow() || (Bucket{5, math.Inf(1)}).Narrow() {
		t.Fatal("Narrow")
	}
}
