package engines

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// vllmPage is a vLLM v1 page as a server of several models writes it:
// every histogram it exposes (those read and those not), its counters
// and gauges, with the _created samples the Python client adds; n
// scales the counts, so two pages are two scrapes of one server.
func vllmPage(models, n int) []byte {
	lat := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	req := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	tok := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
	hists := []struct {
		name   string
		bounds []float64
	}{
		{"vllm:time_to_first_token_seconds", lat}, {"vllm:inter_token_latency_seconds", lat},
		{"vllm:request_time_per_output_token_seconds", lat}, {"vllm:e2e_request_latency_seconds", req},
		{"vllm:request_queue_time_seconds", req}, {"vllm:request_inference_time_seconds", req},
		{"vllm:request_prefill_time_seconds", req}, {"vllm:request_decode_time_seconds", req},
		{"vllm:request_prompt_tokens", tok}, {"vllm:request_generation_tokens", tok},
		{"vllm:iteration_tokens_total", tok}, {"vllm:request_max_num_generation_tokens", tok},
		{"vllm:request_params_max_tokens", tok}, {"vllm:request_params_n", tok},
	}
	var b bytes.Buffer
	for m := range models {
		l := fmt.Sprintf(`engine="0",model_name="org/model-%d"`, m)
		for _, g := range []string{"num_requests_running", "num_requests_waiting", "kv_cache_usage_perc", "engine_sleep_state"} {
			fmt.Fprintf(&b, "# HELP vllm:%s help\n# TYPE vllm:%s gauge\nvllm:%s{%s} %d\n", g, g, g, l, n%7)
		}
		for _, c := range []string{"num_preemptions", "prompt_tokens", "prompt_tokens_cached", "generation_tokens",
			"prefix_cache_queries", "prefix_cache_hits", "spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"} {
			fmt.Fprintf(&b, "# HELP vllm:%s_total help\n# TYPE vllm:%s_total counter\nvllm:%s_total{%s} %d\nvllm:%s_created{%s} 1.7646e+09\n", c, c, c, l, 1000*n, c, l)
		}
		for _, r := range []string{"stop", "length", "abort", "error"} {
			fmt.Fprintf(&b, "vllm:request_success_total{%s,finished_reason=%q} %d\n", l, r, 10*n)
		}
		for _, h := range hists {
			fmt.Fprintf(&b, "# HELP %s help\n# TYPE %s histogram\n", h.name, h.name)
			for i, ub := range h.bounds {
				fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", h.name, l, strconv.FormatFloat(ub, 'f', -1, 64), (i+1)*n)
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_count{%s} %d\n%s_sum{%s} %g\n%s_created{%s} 1.7646e+09\n",
				h.name, l, (len(h.bounds)+1)*n, h.name, l, (len(h.bounds)+1)*n, h.name, l, 12.5*float64(n), h.name, l)
		}
	}
	return b.Bytes()
}

// BenchmarkParseSince: one scrape of a vLLM server of four models (its
// ~56 histograms, about 1,300 lines), read and taken from the last. The
// watch follows 50 servers at 1 Hz under 2 % of a core: 0.4 ms each.
func BenchmarkParseSince(b *testing.B) {
	prev, err := Parse(bytes.NewReader(vllmPage(4, 10)))
	if err != nil {
		b.Fatal(err)
	}
	page := vllmPage(4, 11)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		cur, err := Parse(bytes.NewReader(page))
		if err != nil {
			b.Fatal(err)
		}
		if d, reset := Since(prev, cur); reset || d.TTFT == nil {
			b.Fatal("no delta")
		}
	}
}

// TestBenchPage: the benchmark's page reads as what it wrote.
func TestBenchPage(t *testing.T) {
	r, err := Parse(bytes.NewReader(vllmPage(4, 10)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != "vllm" || r.Requests != has(4*4*100) || r.Aborted != has(400) || r.TTFT.Total() != 4*23*10 || r.Running != has(12) {
		t.Errorf("%+v", r)
	}
}
