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
	{engine: "llamacpp", display: "llama.cpp", metrics: []metric{
		// llama-server --metrics: no request counter, no latency histogram.
		{name: "llamacpp:prompt_tokens", field: fPrompt},
		{name: "llamacpp:tokens_predicted", field: fGen},
		{name: "llamacpp:requests_processing", field: fRunning},
		{name: "llamacpp:requests_deferred", field: fWaiting},
		{name: "llamacpp:kv_cache_usage_ratio", field: fKV},
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
