package load

import (
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 1 hour at 3 significant digits, so percentiles
// are within 0.1 % of exact.
const (
	histMin    = 1
	histMax    = int64(time.Hour / time.Microsecond)
	histDigits = 3
)

func newHist() *hdr.Histogram { return hdr.New(histMin, histMax, histDigits) }

// NewHistogram is an empty histogram of the engine's geometry (1 µs to an
// hour at 3 significant digits, values in microseconds): one whose
// buckets add up exactly with the engine's.
func NewHistogram() *hdr.Histogram { return newHist() }

// SameGeometry says h's buckets are the engine's (NewHistogram's), so
// that adding h's buckets to one of the engine's is exact.
func SameGeometry(h *hdr.Histogram) bool {
	return h.LowestTrackableValue() == histMin && h.HighestTrackableValue() == histMax && h.SignificantFigures() == histDigits
}

// DistOf summarises h alone, its moments from its buckets (within its
// precision), as Snapshot's figures do: what a sum of histograms from
// elsewhere (several engines' seconds) yields.
func DistOf(h *hdr.Histogram) Dist {
	n := h.TotalCount()
	if n == 0 {
		return Dist{}
	}
	mean, std := h.Mean(), h.StdDev()
	fn := float64(n)
	return summarise(h, moments{n: n, sum: mean * fn, sumSq: fn * (std*std + mean*mean), min: h.Min(), max: h.Max()})
}

// us converts a duration to whole microseconds, clamped to the histogram's
// range; overflowed reports whether it had to clamp from above.
func us(d time.Duration) (v int64, overflowed bool) {
	v = int64(d / time.Microsecond)
	if v < histMin {
		return histMin, false
	}
	if v > histMax {
		return histMax, true
	}
	return v, false
}

// moments are the exact count, sum, sum of squares, minimum and maximum of
// a set of values in microseconds: exact mean, deviation and extremes
// beside the histogram's percentiles.
type moments struct {
	n          int64
	sum, sumSq float64
	min, max   int64
}

func (m *moments) add(v int64) {
	if m.n == 0 || v < m.min {
		m.min = v
	}
	if v > m.max {
		m.max = v
	}
	m.n++
	f := float64(v)
	m.sum += f
	m.sumSq += f * f
}

func (m *moments) merge(o moments) {
	if o.n == 0 {
		return
	}
	if m.n == 0 || o.min < m.min {
		m.min = o.min
	}
	if o.max > m.max {
		m.max = o.max
	}
	m.n += o.n
	m.sum += o.sum
	m.sumSq += o.sumSq
}

// sparse is a sealed histogram: only its non-empty buckets, as the lowest
// value of each bucket and its count. A second of ITLs at high load has a
// few hundred buckets; the dense form has 23,552.
type sparse struct {
	values []int64
	counts []int64
}

func sparsify(h *hdr.Histogram) sparse {
	var s sparse
	if h.TotalCount() == 0 {
		return s
	}
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			s.values = append(s.values, b.From)
			s.counts = append(s.counts, b.Count)
		}
	}
	return s
}

func (s sparse) addTo(h *hdr.Histogram) {
	for i, v := range s.values {
		_ = h.RecordValues(v, s.counts[i]) // in range: it came from a histogram of the same range
	}
}

// Dist summarises one metric's distribution. Durations are zero when Count
// is zero.
type Dist struct {
	Count                         int64
	Mean, Std, Min                time.Duration
	P50, P90, P95, P99, P999, Max time.Duration
}

var distQuantiles = []float64{50, 90, 95, 99, 99.9}

func summarise(h *hdr.Histogram, m moments) Dist {
	if m.n == 0 {
		return Dist{}
	}
	d := Dist{Count: m.n}
	mean := m.sum / float64(m.n)
	d.Mean = time.Duration(mean * float64(time.Microsecond))
	if m.n > 1 {
		v := (m.sumSq - float64(m.n)*mean*mean) / float64(m.n) // population deviation, as numpy's std
		d.Std = time.Duration(math.Sqrt(max(v, 0)) * float64(time.Microsecond))
	}
	d.Min = time.Duration(m.min) * time.Microsecond
	d.Max = time.Duration(m.max) * time.Microsecond
	q := h.ValueAtPercentilesSlice(distQuantiles)
	clampQ := func(v int64) time.Duration {
		// A bucket's highest value can lie past the exact maximum.
		return time.Duration(min(max(v, m.min), m.max)) * time.Microsecond
	}
	d.P50, d.P90, d.P95, d.P99, d.P999 = clampQ(q[0]), clampQ(q[1]), clampQ(q[2]), clampQ(q[3]), clampQ(q[4])
	return d
}
