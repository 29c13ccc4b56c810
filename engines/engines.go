// Package engines reads one serving engine's own Prometheus exposition
// (vLLM, SGLang, TGI, TensorRT-LLM's trtllm-serve, Triton, llama.cpp's
// server, Dynamo's frontend, llm-d's router) into one Reading: the same
// counters, gauges and latency histograms whatever the engine calls them.
// Each engine's names are one table (tables.go); the engine is told from
// the page. A page is someone else's text: its reading is bounded in
// bytes, lines, series and buckets, and a number that cannot be true is
// set aside. Nothing of the page's text (no name, no label) is returned.
package engines

import (
	"errors"
	"math"
)

// ErrUnknown is returned for a page that holds no family of any engine
// known here.
var ErrUnknown = errors.New("no serving engine's metrics recognised")

// ErrBounds marks a page past one of the bounds on what a reading may
// cost (bytes, a line, the series of a family).
var ErrBounds = errors.New("metrics page past infertop's bounds")

// Value is a reading of one counter or gauge; Has is false when the
// engine does not report it.
type Value struct {
	V   float64
	Has bool
}

// Histogram is a cumulative Prometheus histogram in seconds, summed over
// the page's series.
type Histogram struct {
	Bounds []float64 // upper bounds, ascending, +Inf last
	Counts []float64 // cumulative counts, never decreasing
	Sum    float64   // the sum of the observations, seconds
}

// Reading is one scrape of one server, summed over its series (models,
// LoRA adapters, data-parallel ranks).
//
// Requests counts every request the server finished, whatever its end,
// where the engine's counter covers them; Failed, Aborted and Rejected
// are the requests that ended so, each counted in one of them at most
// (an error, a cancel or abort, an admission refusal).
type Reading struct {
	// Engine is the engine told from the page: "vllm", "sglang", "tgi",
	// "trtllm", "triton", "llamacpp", "dynamo" or "llmd".
	Engine string

	// Counters, cumulative since the server started.
	Requests, Failed, Aborted, Rejected Value
	// PromptTokens includes CachedPromptTokens: the prompt tokens found in
	// the prefix cache. Their ratio over a delta is the prefix cache's hit
	// rate (PrefixHitRate).
	PromptTokens, GenTokens, CachedPromptTokens Value
	Preemptions                                 Value
	// SpecDraftTokens and SpecAcceptedTokens are speculative decoding's
	// proposed and accepted tokens.
	SpecDraftTokens, SpecAcceptedTokens Value

	// Gauges: requests in the batch and in the queue, the KV cache's use
	// (0..1), and the prefix cache's hit rate as the server computes it
	// (0..1; engines that keep no counter for it).
	Running, Waiting, KVUsage, CacheHitRate Value

	// The server's histograms (nil when not reported): time to first
	// token, inter-token latency (or time per output token where the
	// engine has only that), end to end, time in the queue.
	TTFT, ITL, E2E, Queue *Histogram
}

// PrefixHitRate is the share of prompt tokens found in the prefix cache
// in a delta (a Reading from Since); ok is false when the engine does not
// count cached tokens or no prompt token came. vLLM's prefix_cache_hits
// and queries count lookups, which preempted and recomputed requests
// repeat: cached prompt tokens do not.
func (r Reading) PrefixHitRate() (rate float64, ok bool) {
	if !r.CachedPromptTokens.Has || !r.PromptTokens.Has || r.PromptTokens.V <= 0 {
		return 0, false
	}
	return min(max(r.CachedPromptTokens.V/r.PromptTokens.V, 0), 1), true
}

// Quantile is the bucket the q-quantile (0..1) of the histogram lies in:
// (lo, hi], hi +Inf past the last finite bound, lo 0 in the first bucket.
// That interval is all the histogram knows; no point inside it is
// interpolated. ok is false for an empty histogram.
func (h *Histogram) Quantile(q float64) (lo, hi float64, ok bool) {
	if h == nil || len(h.Counts) == 0 || len(h.Counts) != len(h.Bounds) || math.IsNaN(q) {
		return 0, 0, false
	}
	total := h.Counts[len(h.Counts)-1]
	if !(total > 0) {
		return 0, 0, false
	}
	rank := min(max(q, 0), 1) * total
	for i, c := range h.Counts {
		if c >= rank && c > 0 {
			if i > 0 {
				lo = h.Bounds[i-1]
			}
			return lo, h.Bounds[i], true
		}
	}
	return h.Bounds[len(h.Bounds)-1], math.Inf(1), true // not reached: the last count is the total
}

// Total is the number of observations in the histogram (0 for nil).
func (h *Histogram) Total() float64 {
	if h == nil || len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}
