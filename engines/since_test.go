package engines

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// page is a vLLM page of a few figures, for Since.
func page(t *testing.T, s string) Reading {
	t.Helper()
	r, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSince(t *testing.T) {
	const before = `vllm:num_requests_running 4
vllm:prompt_tokens_total 1000
vllm:prompt_tokens_cached_total 100
vllm:request_success_total{finished_reason="stop"} 10
vllm:time_to_first_token_seconds_bucket{le="0.1"} 5
vllm:time_to_first_token_seconds_bucket{le="1"} 9
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 10
vllm:time_to_first_token_seconds_sum 3
`
	const after = `vllm:num_requests_running 2
vllm:prompt_tokens_total 1400
vllm:prompt_tokens_cached_total 400
vllm:request_success_total{finished_reason="stop"} 15
vllm:request_success_total{finished_reason="abort"} 1
vllm:time_to_first_token_seconds_bucket{le="0.1"} 6
vllm:time_to_first_token_seconds_bucket{le="1"} 14
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 16
vllm:time_to_first_token_seconds_sum 7
`
	d, reset := Since(page(t, before), page(t, after))
	if reset {
		t.Fatal("a rise read as a restart")
	}
	// The abort series came with the first abort: counted from zero.
	checkValues(t, "delta", d, Reading{Engine: "vllm", Requests: has(6), Aborted: has(1), PromptTokens: has(400),
		CachedPromptTokens: has(300), Running: has(2)})
	if want := []float64{1, 5, 6}; !reflect.DeepEqual(d.TTFT.Counts, want) || d.TTFT.Sum != 4 {
		t.Errorf("ttft delta %+v, want counts %v sum 4", d.TTFT, want)
	}
	if rate, ok := d.PrefixHitRate(); !ok || rate != 0.75 {
		t.Errorf("hit rate over the delta %v %v", rate, ok)
	}

	// A counter that fell is a restart: everything since zero.
	d, reset = Since(page(t, after), page(t, before))
	if !reset || !reflect.DeepEqual(d, page(t, before)) {
		t.Errorf("a restart: reset %v, %+v", reset, d)
	}
	// So is a bucket whose own count fell, with every total risen.
	fell := strings.Replace(after, `{le="0.1"} 6`, `{le="0.1"} 4`, 1)
	fell = strings.Replace(fell, `{le="1"} 14`, `{le="1"} 15`, 1)
	if _, reset := Since(page(t, after), page(t, strings.Replace(fell, "+Inf\"} 16", "+Inf\"} 17", 1))); !reset {
		t.Error("a bucket that fell read as a rise")
	}
	// And other bounds, or another engine.
	if _, reset := Since(page(t, after), page(t, strings.ReplaceAll(after, `le="1"`, `le="2"`))); !reset {
		t.Error("new bounds read as a rise")
	}
	other := page(t, after)
	other.Engine = "sglang"
	if _, reset := Since(page(t, after), other); !reset {
		t.Error("another engine read as a rise")
	}
	// From nothing: the reading itself.
	if d, reset := Since(Reading{}, page(t, after)); reset || !reflect.DeepEqual(d, page(t, after)) {
		t.Errorf("from the zero reading: %v %+v", reset, d)
	}
}

func TestQuantile(t *testing.T) {
	h := &Histogram{Bounds: []float64{0.1, 0.5, 1, math.Inf(1)}, Counts: []float64{10, 90, 100, 101}}
	for _, c := range []struct{ q, lo, hi float64 }{
		{0, 0, 0.1}, {0.05, 0, 0.1}, {0.5, 0.1, 0.5}, {0.95, 0.5, 1}, {0.99, 0.5, 1}, {1, 1, math.Inf(1)},
	} {
		lo, hi, ok := h.Quantile(c.q)
		if !ok || lo != c.lo || hi != c.hi {
			t.Errorf("q %v: (%v, %v] %v, want (%v, %v]", c.q, lo, hi, ok, c.lo, c.hi)
		}
	}
	// An empty first bucket: the smallest quantile is in the first one
	// with an observation.
	e := &Histogram{Bounds: []float64{0.1, 0.5, math.Inf(1)}, Counts: []float64{0, 4, 4}}
	if lo, hi, _ := e.Quantile(0); lo != 0.1 || hi != 0.5 {
		t.Errorf("p0 of an empty first bucket: (%v, %v]", lo, hi)
	}
	for _, h := range []*Histogram{nil, {}, {Bounds: []float64{math.Inf(1)}, Counts: []float64{0}}} {
		if _, _, ok := h.Quantile(0.5); ok {
			t.Errorf("a quantile of %+v", h)
		}
	}
	if _, _, ok := h.Quantile(math.NaN()); ok {
		t.Error("a quantile at NaN")
	}
}
