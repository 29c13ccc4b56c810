package telemetry

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestPrefixCache(t *testing.T) {
	vllm := func(queries, hits int) string {
		return "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n" +
			"# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"m\"} " + strconv.Itoa(queries) + "\n" +
			"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"m\"} " + strconv.Itoa(hits) + "\n"
	}
	read := func(page string) Server {
		s, ok, err := ParseServer(strings.NewReader(page))
		if !ok || err != nil {
			t.Fatalf("%q: %v %v", page, ok, err)
		}
		return s
	}
	first, last := read(vllm(1000, 200)), read(vllm(3000, 1700))
	if r, ok := prefixHitRate(first.Prefix, last.Prefix); !ok || math.Abs(r-0.75) > 1e-9 {
		t.Errorf("vLLM's counters: %v %v, want 1500 hits of 2000 queries in the window, 0.75", r, ok)
	}
	if _, ok := prefixHitRate(last.Prefix, last.Prefix); ok {
		t.Error("no lookups in the window: no hit rate")
	}
	sglang := read("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 2\n# TYPE sglang:cache_hit_rate gauge\nsglang:cache_hit_rate 0.4\n")
	if r, ok := prefixHitRate(prefixCache{}, sglang.Prefix); !ok || r != 0.4 {
		t.Errorf("SGLang's gauge: %v %v", r, ok)
	}
	old := read("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate 0.25\n")
	if r, ok := prefixHitRate(old.Prefix, old.Prefix); !ok || r != 0.25 {
		t.Errorf("vLLM V0's gauge: %v %v", r, ok)
	}
	if none := read("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"); none.Prefix != (prefixCache{}) {
		t.Errorf("no prefix metrics: %+v", none.Prefix)
	}
}
