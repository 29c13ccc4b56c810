package engines_test

import (
	"fmt"
	"strings"

	"github.com/infertop/infertop/engines"
)

// Two scrapes of one vLLM server, a second apart: what happened between
// them, and the bucket its median TTFT lies in.
func Example() {
	first := `vllm:request_success_total{finished_reason="stop"} 100
vllm:prompt_tokens_total 50000
vllm:prompt_tokens_cached_total 10000
vllm:time_to_first_token_seconds_bucket{le="0.1"} 60
vllm:time_to_first_token_seconds_bucket{le="0.25"} 95
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 100
`
	second := `vllm:request_success_total{finished_reason="stop"} 110
vllm:request_success_total{finished_reason="abort"} 1
vllm:prompt_tokens_total 55000
vllm:prompt_tokens_cached_total 12500
vllm:time_to_first_token_seconds_bucket{le="0.1"} 62
vllm:time_to_first_token_seconds_bucket{le="0.25"} 105
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 111
`
	prev, _ := engines.Parse(strings.NewReader(first))
	cur, _ := engines.Parse(strings.NewReader(second))
	d, reset := engines.Since(prev, cur)
	lo, hi, _ := d.TTFT.Quantile(0.5)
	rate, _ := d.PrefixHitRate()
	fmt.Printf("%s: %v requests, %v aborted, restart %v\n", engines.Display(d.Engine), d.Requests.V, d.Aborted.V, reset)
	fmt.Printf("TTFT p50 in (%v, %v] s of %v; prefix cache %.0f%%\n", lo, hi, d.TTFT.Total(), rate*100)
	// Output:
	// vLLM: 11 requests, 1 aborted, restart false
	// TTFT p50 in (0.1, 0.25] s of 11; prefix cache 50%
}
