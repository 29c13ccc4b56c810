package engines

// field is a Reading's figure a table's metric fills.
type field uint8

const (
	// counters
	fRequests field = iota
	fFailed
	fAborted
	fRejected
	fPrompt
	fGen
	fCached
	fPreempt
	fSpecDraft
	fSpecAccepted
	// gauges
	fRunning
	fWaiting
	fKV
	fHitRate
	// histograms
	fTTFT
	fITL
	fE2E
	fQueue
	nFields
)

// firstGauge and firstHist split the fields by kind.
const (
	firstGauge = fRunning
	firstHist  = fTTFT
	nValues    = int(firstHist)
	nHists     = int(nFields - firstHist)
)

// isCounter says whether a field is a counter (a delta in Since).
func (f field) isCounter() bool { return f < firstGauge }

// isHist says whether a field is a histogram.
func (f field) isHist() bool { return f >= firstHist }

// averaged says whether the field's series are averaged rather than
// summed: a fraction per engine rank (KV use, a hit rate) summed over two
// ranks would read past 1.
func (f field) averaged() bool { return f == fKV || f == fHitRate }

// cond selects a family's series by one label (named one of labels:
// engines and their simulators spell some two ways): those whose value is
// one of values, or with not, every other (a series without the label
// has the value "").
type cond struct {
	labels []string
	values []string
	not    bool
}

// on says whether k is the label the condition reads.
func (c *cond) on(k []byte) bool {
	for _, l := range c.labels {
		if string(k) == l {
			return true
		}
	}
	return false
}

// finished selects vLLM's and TensorRT-LLM's series of requests that
// finished for one of these reasons.
func finished(reasons ...string) cond {
	return cond{labels: []string{"finished_reason", "finish_reason"}, values: reasons}
}

// metric is one family of an engine's exposition and the field it fills.
type metric struct {
	// name is the family as the engine names it; a counter without its
	// _total, which the page may or may not add.
	name  string
	field field
	// rank orders alternatives of one field: where a page has two (an
	// old name and its rename), the lowest rank is read, never their sum.
	rank uint8
	// when, if its label is set, selects the series read.
	when cond
	// scale turns the engine's unit into the Reading's (ms to s); 0 is 1.
	scale float64
	// sumOf reads a histogram's sum as the field's counter: TGI and
	// Dynamo count tokens only as histograms of tokens per request.
	sumOf bool
}

// table is one engine's names.
type table struct {
	engine, display string
	metrics         []metric
}

// maxRank is one more than the highest rank any table uses.
const maxRank = 3

// tables are the engines known, each with every family read of it. The
// names are the engines' current ones and the renames still in the field.
var tables = []table{
	{engine: "vllm", display: "vLLM", metrics: []metric{
		// request_success counts every finished request by its reason:
		// stop, length, abort, error.
		{name: "vllm:request_success", field: fRequests},
		{name: "vllm:request_success", field: fAborted, when: finished("abort")},
		{name: "vllm:request_success", field: fFailed, when: finished("error")},
		{name: "vllm:prompt_tokens", field: fPrompt},
		{name: "vllm:generation_tokens", field: fGen},
		{name: "vllm:prompt_tokens_cached", field: fCached},
		{name: "vllm:num_preemptions", field: fPreempt},
		{name: "vllm:spec_decode_num_draft_tokens", field: fSpecDraft},
		{name: "vllm:spec_decode_num_accepted_tokens", field: fSpecAccepted},
		{name: "vllm:num_requests_running", field: fRunning},
		{name: "vllm:num_requests_waiting", field: fWaiting},
		{name: "vllm:num_requests_waiting_by_reason", field: fWaiting, rank: 1},
		{name: "vllm:kv_cache_usage_perc", field: fKV},
		{name: "vllm:gpu_cache_usage_perc", field: fKV, rank: 1},  // V0, hidden in V1
		{name: "vllm:gpu_prefix_cache_hit_rate", field: fHitRate}, // V0
		{name: "vllm:time_to_first_token_seconds", field: fTTFT},
		{name: "vllm:inter_token_latency_seconds", field: fITL},
		{name: "vllm:request_time_per_output_token_seconds", field: fITL, rank: 1},
		{name: "vllm:time_per_output_token_seconds", field: fITL, rank: 2}, // before the split into ITL and TPOT
		{name: "vllm:e2e_request_latency_seconds", field: fE2E},
		{name: "vllm:request_queue_time_seconds", field: fQueue},
	}},
	{engine: "sglang", display: "SGLang", metrics: []metric{
		// "sglang:" names; some releases and routers write "sglang_",
		// which the index reads as the same (canon).
		{name: "sglang:num_requests", field: fRequests},
		{name: "sglang:num_aborted_requests", field: fAborted},
		{name: "sglang:prompt_tokens", field: fPrompt},
		{name: "sglang:generation_tokens", field: fGen},
		{name: "sglang:cached_tokens", field: fCached}, // by cache_source: device, host, storage
		{name: "sglang:num_running_reqs", field: fRunning},
		{name: "sglang:num_queue_reqs", field: fWaiting},
		{name: "sglang:token_usage", field: fKV},
		{name: "sglang:cache_hit_rate", field: fHitRate},
		{name: "sglang:time_to_first_token_seconds", field: fTTFT},
		{name: "sglang:inter_token_latency_seconds", field: fITL},
		{name: "sglang:time_per_output_token_seconds", field: fITL, rank: 1},
		{name: "sglang:e2e_request_latency_seconds", field: fE2E},
		{name: "sglang:queue_time_seconds", field: fQueue},
	}},
	{engine: "tgi", display: "TGI", metrics: []metric{
		// Text Generation Inference's router. Tokens are histograms of
		// tokens per request (their sums the counters); no TTFT histogram.
		{name: "tgi_request_count", field: fRequests},
		{name: "tgi_request_failure", field: fFailed, when: cond{labels: []string{"err"}, values: []string{"overloaded"}, not: true}},
		{name: "tgi_request_failure", field: fRejected, when: cond{labels: []string{"err"}, values: []string{"overloaded"}}},
		{name: "tgi_request_input_length", field: fPrompt, sumOf: true},
		{name: "tgi_request_generated_tokens", field: fGen, sumOf: true},
		{name: "tgi_batch_current_size", field: fRunning},
		{name: "tgi_queue_size", field: fWaiting},
		{name: "tgi_request_mean_time_per_token_duration", field: fITL},
		{name: "tgi_batch_forward_duration", field: fITL, rank: 1, when: cond{labels: []string{"method"}, values: []string{"decode"}}},
		{name: "tgi_request_duration", field: fE2E},
		{name: "tgi_request_queue_duration", field: fQueue},
	}},
	{engine: "trtllm", display: "TensorRT-LLM", metrics: []metric{
		// trtllm-serve's /prometheus/metrics (and Dynamo's pass-through).
		{name: "trtllm_request_success", field: fRequests},
		{name: "trtllm_request_success", field: fAborted, when: finished("cancelled", "abort")},
		{name: "trtllm_request_success", field: fFailed, when: finished("error")},
		{name: "trtllm_num_requests_running", field: fRunning},
		{name: "trtllm_num_requests_waiting", field: fWaiting},
		{name: "trtllm_kv_cache_utilization", field: fKV},
		{name: "trtllm_kv_cache_hit_rate", field: fHitRate},
		{name: "trtllm_time_to_first_token_seconds", field: fTTFT},
		{name: "trtllm_time_per_output_token_seconds", field: fITL},
		{name: "trtllm_e2e_request_latency_seconds", field: fE2E},
		{name: "trtllm_request_queue_time_seconds", field: fQueue},
	}},
	{engine: "triton", display: "Triton", metrics: []metric{
		// Triton's own counters (failures by reason since 24.x) and the
		// TensorRT-LLM backend's batch manager gauges. Its latencies are
		// cumulative microseconds, not histograms, but for the first
		// response's, in milliseconds.
		{name: "nv_inference_request_success", field: fRequests},
		{name: "nv_inference_request_failure", field: fRequests},
		{name: "nv_inference_request_failure", field: fFailed, when: cond{labels: []string{"reason"}, values: []string{"REJECTED", "CANCELED"}, not: true}},
		{name: "nv_inference_request_failure", field: fRejected, when: cond{labels: []string{"reason"}, values: []string{"REJECTED"}}},
		{name: "nv_inference_request_failure", field: fAborted, when: cond{labels: []string{"reason"}, values: []string{"CANCELED"}}},
		{name: "nv_llm_input_token_len", field: fPrompt, sumOf: true},
		{name: "nv_llm_output_token_len", field: fGen, sumOf: true},
		{name: "nv_trt_llm_request_metrics", field: fRunning, when: cond{labels: []string{"request_type"}, values: []string{"scheduled"}}},
		{name: "nv_trt_llm_request_metrics", field: fWaiting, when: cond{labels: []string{"request_type"}, values: []string{"waiting"}}},
		{name: "nv_inference_pending_request_count", field: fWaiting, rank: 1},
		{name: "nv_trt_llm_kv_cache_block_metrics", field: fKV, when: cond{labels: []string{"kv_cache_block_type"}, values: []string{"fraction"}}},
		{name: "nv_inference_first_response_histogram_ms", field: fTTFT, scale: 1e-3},
	}},
	{engine: "llamacpp", display: "llama.cpp", metrics: []metric{
		// llama-server --metrics: no request counter, no latency histogram.
		{name: "llamacpp:prompt_tokens", field: fPrompt},
		{name: "llamacpp:tokens_predicted", field: fGen},
		{name: "llamacpp:requests_processing", field: fRunning},
		{name: "llamacpp:requests_deferred", field: fWaiting},
		{name: "llamacpp:kv_cache_usage_ratio", field: fKV},
	}},
	{engine: "dynamo", display: "Dynamo", metrics: []metric{
		// Dynamo's HTTP frontend: every request by status, tokens as
		// histograms per request (and a counter of output tokens).
		{name: "dynamo_frontend_requests", field: fRequests},
		{name: "dynamo_frontend_requests", field: fFailed, when: cond{labels: []string{"status"}, values: []string{"error"}}},
		{name: "dynamo_frontend_input_sequence_tokens", field: fPrompt, sumOf: true},
		{name: "dynamo_frontend_output_tokens", field: fGen},
		{name: "dynamo_frontend_output_sequence_tokens", field: fGen, rank: 1, sumOf: true},
		{name: "dynamo_frontend_inflight_requests", field: fRunning},
		{name: "dynamo_frontend_queued_requests", field: fWaiting},
		{name: "dynamo_frontend_time_to_first_token_seconds", field: fTTFT},
		{name: "dynamo_frontend_inter_token_latency_seconds", field: fITL},
		{name: "dynamo_frontend_request_duration_seconds", field: fE2E},
	}},
	{engine: "llmd", display: "llm-d", metrics: []metric{
		// llm-d's router (the endpoint picker): the pool as its requests
		// pass; the Gateway API Inference Extension's names before 0.9.
		{name: "llm_d_epp_request", field: fRequests},
		{name: "inference_objective_request", field: fRequests, rank: 1},
		{name: "llm_d_epp_request_error", field: fFailed},
		{name: "inference_objective_request_error", field: fFailed, rank: 1},
		{name: "llm_d_epp_request_input_tokens", field: fPrompt, sumOf: true},
		{name: "inference_objective_input_tokens", field: fPrompt, rank: 1, sumOf: true},
		{name: "llm_d_epp_request_output_tokens", field: fGen, sumOf: true},
		{name: "inference_objective_output_tokens", field: fGen, rank: 1, sumOf: true},
		{name: "llm_d_epp_request_cached_tokens", field: fCached, sumOf: true},
		{name: "llm_d_epp_request_running", field: fRunning},
		{name: "inference_objective_running_requests", field: fRunning, rank: 1},
		{name: "llm_d_epp_flow_control_queue_size", field: fWaiting},
		{name: "llm_d_epp_average_kv_cache_utilization", field: fKV},
		{name: "inference_pool_average_kv_cache_utilization", field: fKV, rank: 1},
		{name: "llm_d_epp_request_ttft_seconds", field: fTTFT},
		{name: "llm_d_epp_request_streaming_itl_seconds", field: fITL},
		{name: "llm_d_epp_request_streaming_tpot_seconds", field: fITL, rank: 1},
		{name: "llm_d_epp_request_duration_seconds", field: fE2E},
		{name: "inference_objective_request_duration_seconds", field: fE2E, rank: 1},
		{name: "llm_d_epp_flow_control_request_queue_duration_seconds", field: fQueue},
	}},
}

// Display is an engine's name as shown ("vLLM" for "vllm"), "" for none
// known.
func Display(engine string) string {
	for _, t := range tables {
		if t.engine == engine {
			return t.display
		}
	}
	return ""
}
