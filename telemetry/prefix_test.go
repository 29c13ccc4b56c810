package telemetry

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrefixCache: the panel's prefix hit rate is cached prompt tokens
// over prompt tokens in the window (vLLM's lookups count preempted
// requests again), else the server's own gauge (SGLang, vLLM V0).
func TestPrefixCache(t *testing.T) {
	vllm := func(prompt, cached int) string {
		return "vllm:num_requests_running{model_name=\"m\"} 1\n" +
			"vllm:prompt_tokens_total{model_name=\"m\"} " + strconv.Itoa(prompt) + "\n" +
			"vllm:prompt_tokens_cached_total{model_name=\"m\"} " + strconv.Itoa(cached) + "\n"
	}
	view := func(pages ...string) *ServerView {
		s := NewScraper(Config{Every: time.Second})
		t0 := time.Now().Add(-time.Minute)
		for i, p := range pages {
			if err := s.readServer(strings.NewReader(p), t0.Add(time.Duration(i)*10*time.Second)); err != nil {
				t.Fatalf("%q: %v", p, err)
			}
		}
		return s.View(time.Minute).Server
	}
	if v := view(vllm(1000, 200), vllm(3000, 1700)); !v.HasPrefix || math.Abs(v.PrefixHitRate-0.75) > 1e-9 {
		t.Errorf("vLLM's cached tokens: %v %v, want 1500 cached of 2000 in the window, 0.75", v.PrefixHitRate, v.HasPrefix)
	}
	if v := view(vllm(3000, 1700), vllm(3000, 1700)); v.HasPrefix {
		t.Error("no prompt in the window: no hit rate")
	}
	if v := view(vllm(3000, 1700), vllm(100, 90)); v.HasPrefix || v.PromptTokPerSec != 0 {
		t.Errorf("a restart in the window: rate %v, prompt %v/s", v.PrefixHitRate, v.PromptTokPerSec)
	}
	if v := view("sglang:num_running_reqs 2\nsglang:cache_hit_rate 0.4\n"); !v.HasPrefix || v.PrefixHitRate != 0.4 {
		t.Errorf("SGLang's gauge: %v %v", v.PrefixHitRate, v.HasPrefix)
	}
	if v := view("vllm:num_requests_running 1\nvllm:gpu_prefix_cache_hit_rate 0.25\n"); !v.HasPrefix || v.PrefixHitRate != 0.25 {
		t.Errorf("vLLM V0's gauge: %v %v", v.PrefixHitRate, v.HasPrefix)
	}
	if v := view("vllm:num_requests_running 1\n"); v.HasPrefix {
		t.Errorf("no prefix metrics: %v", v.PrefixHitRate)
	}
}
