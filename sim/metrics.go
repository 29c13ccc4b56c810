package sim

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Bucket bounds (seconds) of the server-side latency histograms, vLLM's
// (vllm/v1/metrics/loggers.py).
func ttftBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
}

func e2eBuckets() []float64 {
	return []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
}

func tpotBuckets() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
}

// fineBuckets are bounds 4 % apart from 1 ms to 10 min (Params.FineBuckets):
// a server built with buckets fine enough to resolve a 10 % margin (two
// quantiles in neighbouring buckets differ by at most 1.04² - 1, 8.2 %),
// which vLLM's, 25-50 % wide below a few seconds, cannot.
func fineBuckets() []float64 {
	var out []float64
	for b := 0.001; b < 600; b *= 1.04 {
		out = append(out, float64(float32(b)))
	}
	return out
}

type histogram struct {
	bounds []float64
	counts []atomic.Int64 // one per bound, plus +Inf
	sumUS  atomic.Int64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Int64, len(bounds)+1)}
}

func (h *histogram) observe(sec float64) {
	i := 0
	for i < len(h.bounds) && sec > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumUS.Add(int64(sec * 1e6))
}

func (h *histogram) write(w *bufio.Writer, name, labels string) {
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{%sle=\"%s\"} %d\n", name, labels, strconv.FormatFloat(b, 'f', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{%sle=\"+Inf\"} %d\n", name, labels, cum)
	fmt.Fprintf(w, "%s_sum{%s} %g\n", name, trimComma(labels), float64(h.sumUS.Load())/1e6)
	// The +Inf bucket's count, not h.count: read at another moment it
	// may differ from the buckets' by an observation in flight.
	fmt.Fprintf(w, "%s_count{%s} %d\n", name, trimComma(labels), cum)
}

func trimComma(s string) string {
	if len(s) > 0 && s[len(s)-1] == ',' {
		return s[:len(s)-1]
	}
	return s
}

type serverMetrics struct {
	success, failed, cancelled atomic.Int64
	// specAccepted and specDrafted are speculative decoding's counts
	// (Params.SpecDecode), summed over the answers that reported them.
	specAccepted, specDrafted atomic.Int64
	ttft, e2e, tpot, queue    *histogram
}

func newServerMetrics(fine bool) *serverMetrics {
	if fine {
		return &serverMetrics{ttft: newHistogram(fineBuckets()), e2e: newHistogram(fineBuckets()),
			tpot: newHistogram(fineBuckets()), queue: newHistogram(fineBuckets())}
	}
	return &serverMetrics{ttft: newHistogram(ttftBuckets()), e2e: newHistogram(e2eBuckets()),
		tpot: newHistogram(tpotBuckets()), queue: newHistogram(e2eBuckets())}
}

func (m *serverMetrics) observe(r *Record) {
	switch {
	case r.Cancelled:
		m.cancelled.Add(1)
	case r.Status == http.StatusOK:
		m.success.Add(1)
		m.ttft.observe(r.TTFT().Seconds())
		m.e2e.observe(r.E2E().Seconds())
		if !r.Admitted.IsZero() {
			m.queue.observe(r.Queued().Seconds())
		}
		if r.OutputTokens > 1 && r.LastToken.After(r.FirstToken) {
			m.tpot.observe(r.LastToken.Sub(r.FirstToken).Seconds() / float64(r.OutputTokens-1))
		}
	}
}

// handleMetrics writes Prometheus text format with vLLM's metric names.
// With a canary the page is the endpoint's as a whole, both pods summed
// (running, waiting and the KV usage over both budgets; every counter;
// the latency histograms already hold every request): a client reading
// one /metrics behind one URL sees the service it loads, in the same
// series as without a canary. Which build served what is told per
// answer (BackendHeader, system_fingerprint), not here.
func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	l := fmt.Sprintf(`model_name=%q,`, s.p.Model)
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %g\n", name, help, name, name, trimComma(l), v)
	}
	counter := func(name, help, extra string, v int64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n%s{%s%s} %d\n", name, help, name, name, l, extra, v)
	}
	var running, waiting, kvUsed, prompt, gen, steps, queries, hits, resets int64
	pods := s.pods()
	for _, sc := range pods {
		running += sc.nRunning.Load()
		waiting += sc.nWaiting.Load()
		kvUsed += sc.kvUsedG.Load()
		prompt += sc.promptTotal.Load()
		gen += sc.genTotal.Load()
		steps += sc.steps.Load()
		if sc.prefix != nil {
			queries += sc.prefix.queries.Load()
			hits += sc.prefix.hits.Load()
			resets = sc.prefix.resets.Load() // every pod's emptied together: once
		}
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", float64(kvUsed)/(float64(s.p.KVTokens)*float64(len(pods))))
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", `source="sim"`, prompt)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", `source="sim"`, gen)
	// vLLM counts every finished request here, by how it finished: the
	// sim's answers end at max_tokens; its injected errors and the
	// requests their clients left end "error" and "abort".
	counter("vllm:request_success_total", "Count of successfully processed requests.", `finished_reason="length"`, s.metrics.success.Load())
	fmt.Fprintf(bw, "vllm:request_success_total{%sfinished_reason=\"error\"} %d\n", l, s.metrics.failed.Load())
	fmt.Fprintf(bw, "vllm:request_success_total{%sfinished_reason=\"abort\"} %d\n", l, s.metrics.cancelled.Load())
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", `source="sim"`, 0)
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", `source="sim"`, queries)
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", `source="sim"`, hits)
	counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local prefix cache hits).", `source="sim"`, hits)
	if s.p.SpecDecode.Draft > 0 {
		counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", `source="sim"`, s.metrics.specDrafted.Load())
		counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", `source="sim"`, s.metrics.specAccepted.Load())
	}
	counter("infertop_sim_prefix_cache_resets_total", "Times the prefix cache was emptied (POST /reset_prefix_cache).", `source="sim"`, resets)
	counter("infertop_sim_requests_failed_total", "Requests answered with an injected error.", `source="sim"`, s.metrics.failed.Load())
	counter("infertop_sim_requests_cancelled_total", "Requests the client abandoned.", `source="sim"`, s.metrics.cancelled.Load())
	counter("infertop_sim_steps_total", "Engine steps run.", `source="sim"`, steps)
	fmt.Fprintf(bw, "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n# TYPE vllm:time_to_first_token_seconds histogram\n")
	s.metrics.ttft.write(bw, "vllm:time_to_first_token_seconds", l)
	fmt.Fprintf(bw, "# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.\n# TYPE vllm:e2e_request_latency_seconds histogram\n")
	s.metrics.e2e.write(bw, "vllm:e2e_request_latency_seconds", l)
	fmt.Fprintf(bw, "# HELP vllm:request_time_per_output_token_seconds Histogram of time_per_output_token_seconds per request.\n# TYPE vllm:request_time_per_output_token_seconds histogram\n")
	s.metrics.tpot.write(bw, "vllm:request_time_per_output_token_seconds", l)
	fmt.Fprintf(bw, "# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.\n# TYPE vllm:request_queue_time_seconds histogram\n")
	s.metrics.queue.write(bw, "vllm:request_queue_time_seconds", l)
}
