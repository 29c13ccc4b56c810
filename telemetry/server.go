// Package telemetry reads the server's side of the load: the serving
// engine's own Prometheus metrics (vLLM, SGLang, TGI, llama.cpp's server)
// and GPU telemetry (a DCGM exporter, or nvidia-smi on this machine), and
// turns power into energy per output token. It never touches the load: a
// source that fails is marked stale with its age and retried with backoff.
package telemetry

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Server is one reading of a serving engine's own metrics. Counters are
// cumulative; the Scraper turns them into rates.
type Server struct {
	// Kind is the engine recognised: vllm, sglang, tgi or llamacpp.
	Kind string
	// Running and Waiting are requests in the batch and in the queue.
	Running, Waiting float64
	// KVUsage is the KV-cache use, 0..1 (HasKV false when not reported).
	KVUsage float64
	HasKV   bool
	// PromptTokens, GenTokens and Preemptions are counters (HasPreempt
	// false when not reported).
	PromptTokens, GenTokens, Preemptions float64
	HasPreempt                           bool
	// TTFT and ITL are the server's histograms, in seconds (nil when not
	// reported).
	TTFT, ITL *Histogram
	// Prefix is the prefix cache's reading (vLLM's counters, SGLang's hit
	// rate), its zero value when not reported.
	Prefix prefixCache
}

// Histogram is a cumulative Prometheus histogram.
type Histogram struct {
	Bounds []float64 // upper bounds, ascending, +Inf last
	Counts []float64 // cumulative counts
}

// names maps each engine's metric names onto the fields.
var names = []struct {
	kind, prefix                    string
	running, waiting, kv, kvOld     string
	prompt, gen, preempt, ttft, itl string
	kvIsPercent                     bool
}{
	{kind: "vllm", prefix: "vllm:", running: "vllm:num_requests_running", waiting: "vllm:num_requests_waiting",
		kv: "vllm:kv_cache_usage_perc", kvOld: "vllm:gpu_cache_usage_perc", prompt: "vllm:prompt_tokens_total",
		gen: "vllm:generation_tokens_total", preempt: "vllm:num_preemptions_total",
		ttft: "vllm:time_to_first_token_seconds", itl: "vllm:inter_token_latency_seconds"},
	{kind: "sglang", prefix: "sglang:", running: "sglang:num_running_reqs", waiting: "sglang:num_queue_reqs",
		kv: "sglang:token_usage", prompt: "sglang:prompt_tokens_total", gen: "sglang:generation_tokens_total",
		preempt: "sglang:num_retracted_reqs", ttft: "sglang:time_to_first_token_seconds", itl: "sglang:inter_token_latency_seconds"},
	{kind: "tgi", prefix: "tgi_", running: "tgi_batch_current_size", waiting: "tgi_queue_size",
		prompt: "tgi_request_input_length", gen: "tgi_request_generated_tokens", ttft: "", itl: "tgi_batch_forward_duration"},
	{kind: "llamacpp", prefix: "llamacpp:", running: "llamacpp:requests_processing", waiting: "llamacpp:requests_deferred",
		kv: "llamacpp:kv_cache_usage_ratio", prompt: "llamacpp:prompt_tokens_total", gen: "llamacpp:tokens_predicted_total"},
}

// parse reads the families wanted of a Prometheus text page, within the
// bounds of filterPage.
func parse(r io.Reader, wanted func(string) bool) (map[string]*dto.MetricFamily, error) {
	page, err := filterPage(r, wanted)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("metrics page: %w", err)
	}
	return fams, nil
}

// sum adds a family's values over all its label sets (a gauge, a counter,
// or an untyped value); ok is false when the family is absent. A value
// that cannot be true (NaN, infinite, negative, past maxCount) is set
// aside: one 1.7e308 made the sum +Inf, and no report could be written.
func sum(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	f, ok := fams[name]
	if !ok || name == "" {
		return 0, false
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		case m.Histogram != nil: // TGI reports token counts as histograms: their sum
			v = m.GetHistogram().GetSampleSum()
		}
		if plausible(v) {
			total += v
		}
	}
	return total, true
}

// hist merges a histogram family over its label sets; one with a number
// that cannot be true (a NaN bound, a finite one past maxBoundSeconds, a
// count past maxCount) or more than maxBuckets bounds is set aside (nil).
func hist(fams map[string]*dto.MetricFamily, name string) *Histogram {
	f, ok := fams[name]
	if !ok || name == "" {
		return nil
	}
	byBound := map[float64]float64{}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			return nil
		}
		hasInf := false
		for _, b := range h.GetBucket() {
			ub, n := b.GetUpperBound(), float64(b.GetCumulativeCount())
			if math.IsNaN(ub) || !math.IsInf(ub, 1) && math.Abs(ub) > maxBoundSeconds || !plausible(n) {
				return nil
			}
			byBound[ub] += n
			hasInf = hasInf || math.IsInf(ub, 1)
		}
		if !hasInf {
			byBound[math.Inf(1)] += float64(h.GetSampleCount())
		}
		if len(byBound) > maxBuckets {
			return nil
		}
	}
	out := &Histogram{}
	for b := range byBound {
		out.Bounds = append(out.Bounds, b)
	}
	sort.Float64s(out.Bounds)
	for _, b := range out.Bounds {
		out.Counts = append(out.Counts, byBound[b])
	}
	return out
}

// ParseServer reads a serving engine's metrics page. ok is false for an
// engine it does not know: then nothing is shown rather than wrong figures.
func ParseServer(r io.Reader) (s Server, ok bool, err error) {
	fams, err := parse(r, serverFamilies())
	if err != nil {
		return s, false, err
	}
	for _, n := range names {
		running, has := sum(fams, n.running)
		if !has {
			continue
		}
		s.Kind, s.Running = n.kind, running
		s.Waiting, _ = sum(fams, n.waiting)
		if v, ok := sum(fams, n.kv); ok {
			s.KVUsage, s.HasKV = v, true
		} else if v, ok := sum(fams, n.kvOld); ok {
			s.KVUsage, s.HasKV = v, true
		}
		s.PromptTokens, _ = sum(fams, n.prompt)
		s.GenTokens, _ = sum(fams, n.gen)
		s.Preemptions, s.HasPreempt = sum(fams, n.preempt)
		s.TTFT, s.ITL = hist(fams, n.ttft), hist(fams, n.itl)
		s.Prefix = readPrefix(fams, n.kind)
		return s, true, nil
	}
	return s, false, nil
}

// serverFamilies is the set of every family ParseServer reads.
func serverFamilies() func(string) bool {
	var all []string
	for _, n := range names {
		all = append(all, n.running, n.waiting, n.kv, n.kvOld, n.prompt, n.gen, n.preempt, n.ttft, n.itl)
	}
	all = append(all, prefixFamilies()...)
	return wantedSet(all...)
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
func KindName(kind string) string {
	return map[string]string{"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI", "llamacpp": "llama.cpp"}[strings.ToLower(kind)]
}
