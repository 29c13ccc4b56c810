// Package telemetry reads the server's side of the load: the serving
// engine's own Prometheus metrics (through package engines: vLLM, SGLang,
// TGI, TensorRT-LLM, Triton, llama.cpp, Dynamo, llm-d) and GPU telemetry (a DCGM exporter, or nvidia-smi on this machine), and
// turns power into energy per output token. It never touches the load: a
// source that fails is marked stale with its age and retried with backoff.
package telemetry

import (
	"errors"
	"io"
	"math"
	"strings"

	"github.com/infertop/infertop/engines"
)

// Server is one reading of a serving engine's own metrics, as package
// engines reads it: counters cumulative (the Scraper turns them into
// rates), gauges, the server's histograms.
type Server = engines.Reading

// Histogram is a cumulative Prometheus histogram, in seconds.
type Histogram = engines.Histogram

// ParseServer reads a serving engine's metrics page. ok is false for an
// engine it does not know: then nothing is shown rather than wrong figures.
func ParseServer(r io.Reader) (s Server, ok bool, err error) {
	s, err = engines.Parse(r)
	if errors.Is(err, engines.ErrUnknown) {
		return s, false, nil
	}
	return s, err == nil, err
}

// Quantile estimates the q-quantile (0..1) of the observations between
// two readings of a histogram (prev may be nil: since the start), by
// linear interpolation inside the bucket, as Prometheus' histogram_quantile.
func Quantile(cur, prev *Histogram, q float64) (float64, bool) {
	est, _, ok := quantile(cur, prev, q)
	return est, ok
}

// Bucket is the histogram bucket a quantile lies in: (Lo, Hi], Hi +Inf
// past the last finite bound. All the histogram says of the quantile is
// that it lies there: an interpolated point inside a wide bucket (vLLM's
// TTFT buckets go 2.5 s, 5 s, 7.5 s) can be far from every observation.
type Bucket struct{ Lo, Hi float64 }

// Narrow reports whether the bucket is tight enough (its bounds within
// 10 %) for a point inside it to stand for the quantile.
func (b Bucket) Narrow() bool { return !math.IsInf(b.Hi, 1) && b.Hi <= 1.1*b.Lo }

// QuantileBucket is the bucket the q-quantile lies in (see Quantile).
func QuantileBucket(cur, prev *Histogram, q float64) (Bucket, bool) {
	_, b, ok := quantile(cur, prev, q)
	return b, ok
}

// quantile is Quantile's estimate and the bucket it lies in.
func quantile(cur, prev *Histogram, q float64) (float64, Bucket, bool) {
	if cur == nil || len(cur.Counts) == 0 {
		return 0, Bucket{}, false
	}
	counts := append([]float64(nil), cur.Counts...)
	if prev != nil && len(prev.Counts) == len(counts) && prev.Counts[len(prev.Counts)-1] <= counts[len(counts)-1] {
		for i := range counts {
			counts[i] -= prev.Counts[i]
		}
	}
	total := counts[len(counts)-1]
	if total <= 0 {
		return 0, Bucket{}, false
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, c := range counts {
		upper := cur.Bounds[i]
		if c >= rank {
			b := Bucket{lower, upper}
			if math.IsInf(upper, 1) {
				return lower, b, true // past the last finite bound: its lower edge
			}
			inBucket := c - below
			if inBucket <= 0 {
				return upper, b, true
			}
			return lower + (upper-lower)*(rank-below)/inBucket, b, true
		}
		lower, below = upper, c
	}
	return lower, Bucket{lower, math.Inf(1)}, true
}

// KindName is the engine's name as shown.
func KindName(kind string) string { return engines.Display(strings.ToLower(kind)) }
