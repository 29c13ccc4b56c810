package engines

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// read parses a file of testdata.
func read(t *testing.T, name string) Reading {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// families parses a file of testdata with Prometheus' own text parser.
func families(t *testing.T, name string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return fams
}

// has is a Value that is reported.
func has(v float64) Value { return Value{V: v, Has: true} }

// checkValues compares the counters and gauges of a reading with want's.
func checkValues(t *testing.T, name string, got, want Reading) {
	t.Helper()
	if got.Engine != want.Engine {
		t.Errorf("%s: engine %q, want %q", name, got.Engine, want.Engine)
	}
	gv, wv := got.values(), want.values()
	for f := range nValues {
		if gv[f].Has != wv[f].Has || math.Abs(gv[f].V-wv[f].V) > 1e-9 {
			t.Errorf("%s: field %d is %+v, want %+v", name, f, *gv[f], *wv[f])
		}
	}
}

// checkQuantile holds a histogram's q-quantile to its bucket.
func checkQuantile(t *testing.T, name string, h *Histogram, q, lo, hi, total float64) {
	t.Helper()
	if h == nil {
		t.Errorf("%s: no histogram", name)
		return
	}
	l, u, ok := h.Quantile(q)
	if !ok || l != lo || u != hi || h.Total() != total {
		t.Errorf("%s: p%v in (%v, %v] of %v, want (%v, %v] of %v", name, q*100, l, u, h.Total(), lo, hi, total)
	}
}

func TestParseVLLM(t *testing.T) {
	r := read(t, "vllm.txt")
	checkValues(t, "vllm.txt", r, Reading{Engine: "vllm",
		Requests: has(186), Aborted: has(5), Failed: has(1),
		PromptTokens: has(80000), GenTokens: has(36000), CachedPromptTokens: has(32000), Preemptions: has(5),
		SpecDraftTokens: has(1500), SpecAcceptedTokens: has(900),
		Running: has(8), Waiting: has(3), KVUsage: has(0.4)})
	// 30 under 40 ms, 60 more under 60 ms: the median (rank 90) is in
	// (0.04, 0.06]; p99 (rank 178.2) in (0.25, 0.5].
	checkQuantile(t, "ttft p50", r.TTFT, 0.5, 0.04, 0.06, 180)
	checkQuantile(t, "ttft p99", r.TTFT, 0.99, 0.25, 0.5, 180)
	if math.Abs(r.TTFT.Sum-13.8) > 1e-9 {
		t.Errorf("ttft sum %v", r.TTFT.Sum)
	}
	// inter_token_latency is read, not the per-request TPOT beside it.
	checkQuantile(t, "itl p50", r.ITL, 0.5, 0.01, 0.025, 35820)
	checkQuantile(t, "e2e p99", r.E2E, 0.99, 2.5, 5, 184)
	checkQuantile(t, "queue p50", r.Queue, 0.5, 0, 0.3, 186)
	if rate, ok := r.PrefixHitRate(); !ok || rate != 0.4 {
		t.Errorf("prefix hit rate %v %v", rate, ok)
	}
}

// TestParseVLLMSim: the recording of llm-d-inference-sim, a simulator
// that speaks vLLM's names (and spells finished_reason finish_reason).
func TestParseVLLMSim(t *testing.T) {
	r := read(t, "vllm-sim.txt")
	checkValues(t, "vllm-sim.txt", r, Reading{Engine: "vllm", Requests: has(4), PromptTokens: has(32), GenTokens: has(24),
		Running: has(0), Waiting: has(0), KVUsage: has(0)})
	checkQuantile(t, "ttft", r.TTFT, 1, 0.04, 0.06, 4)
	checkQuantile(t, "itl", r.ITL, 1, 0, 0.01, 20)
	checkQuantile(t, "e2e", r.E2E, 1, 0, 0.3, 4)
	if _, ok := r.PrefixHitRate(); ok {
		t.Error("a prefix hit rate without cached tokens counted")
	}
}

// TestRenames: where a page has an old name and its rename, the current
// one is read, never their sum; a counter with or without _total; the
// names as escaping scrapers and newer clients write them.
func TestRenames(t *testing.T) {
	for _, tt := range []struct {
		name, page string
		check      func(Reading) bool
	}{
		{"v0 KV name", "vllm:gpu_cache_usage_perc 0.25\n", func(r Reading) bool { return r.KVUsage == has(0.25) }},
		{"both KV names", "vllm:gpu_cache_usage_perc 0.25\nvllm:kv_cache_usage_perc 0.5\n", func(r Reading) bool { return r.KVUsage == has(0.5) }},
		{"no _total", "vllm:num_preemptions 3\n", func(r Reading) bool { return r.Preemptions == has(3) }},
		{"waiting by reason only", "vllm:num_requests_waiting_by_reason{reason=\"capacity\"} 2\nvllm:num_requests_waiting_by_reason{reason=\"deferred\"} 1\n",
			func(r Reading) bool { return r.Waiting == has(3) }},
		{"tpot only", "vllm:time_per_output_token_seconds_bucket{le=\"0.1\"} 3\nvllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 4\n",
			func(r Reading) bool { return r.ITL.Total() == 4 }},
		{"underscores", "vllm_num_requests_running 7\n", func(r Reading) bool { return r.Running == has(7) }},
		{"value escaping", "U__vllm_3a_num__requests__running 7\n", func(r Reading) bool { return r.Running == has(7) }},
		{"utf-8 quoted", "{\"vllm:num_requests_running\",model_name=\"m\"} 7\n{\"vllm:num_requests_running\"} 1\n", func(r Reading) bool { return r.Running == has(8) }},
		{"openmetrics", "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total 9 1700000000.5 # {trace_id=\"x\"} 1\nvllm:prompt_tokens_created 1.7e9\n# EOF\n",
			func(r Reading) bool { return r.PromptTokens == has(9) }},
		{"error reason", "vllm:request_success_total{finished_reason=\"error\"} 2\nvllm:request_success_total{finished_reason=\"stop\"} 5\n",
			func(r Reading) bool { return r.Requests == has(7) && r.Failed == has(2) && r.Aborted == Value{} }},
	} {
		r, err := Parse(strings.NewReader(tt.page))
		if err != nil || r.Engine != "vllm" || !tt.check(r) {
			t.Errorf("%s: %+v, %v", tt.name, r, err)
		}
	}
}

// TestFromFamilies: the families client_model holds read the same as the
// text they came from.
func TestFromFamilies(t *testing.T) {
	// (sglang.txt is OpenMetrics, which expfmt's text parser does not read.)
	for _, name := range []string{"vllm.txt", "vllm-sim.txt", "llamacpp.txt", "tgi.txt", "trtllm.txt", "triton.txt", "dynamo.txt", "llmd.txt"} {
		got, err := FromFamilies(families(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if want := read(t, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: from families %+v\nfrom the text %+v", name, got, want)
		}
	}
	if _, err := FromFamilies(nil); err != ErrUnknown {
		t.Errorf("no families: %v", err)
	}
}

func TestWantedNames(t *testing.T) {
	for _, n := range []string{"vllm:prompt_tokens_total", "vllm:prompt_tokens", "vllm_prompt_tokens_total",
		"vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_bucket", "vllm:kv_cache_usage_perc"} {
		if !Wanted(n) {
			t.Errorf("%s not wanted", n)
		}
	}
	for _, n := range []string{"vllm:cache_config_info", "vllm:prompt_tokens_created", "process_cpu_seconds_total", "", "vllm:"} {
		if Wanted(n) {
			t.Errorf("%s wanted", n)
		}
	}
	names := Names()
	for _, n := range names {
		if !Wanted(n) {
			t.Errorf("Names has %s, not Wanted", n)
		}
	}
	for _, n := range []string{"vllm:prompt_tokens_total", "vllm_prompt_tokens_total", "vllm:time_to_first_token_seconds", "tgi_request_count"} {
		if !slicesContains(names, n) {
			t.Errorf("Names lacks %s", n)
		}
	}
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestUnknown(t *testing.T) {
	for _, page := range []string{"", "not a { metrics page", "process_cpu_seconds_total 3\n# TYPE x gauge\nx 1\n"} {
		if _, err := Parse(strings.NewReader(page)); err != ErrUnknown {
			t.Errorf("%q: %v", page, err)
		}
	}
	if _, err := Parse(strings.NewReader("vllm:num_requests_running{ garbage\n")); err == nil || err == ErrUnknown {
		t.Errorf("a garbled sample of a family read: %v", err)
	}
}

// TestParseLlamaCpp: the recording of llama-server --metrics.
func TestParseLlamaCpp(t *testing.T) {
	r := read(t, "llamacpp.txt")
	checkValues(t, "llamacpp.txt", r, Reading{Engine: "llamacpp", PromptTokens: has(80), GenTokens: has(24), Running: has(0), Waiting: has(0)})
	if r.TTFT != nil || r.ITL != nil || r.E2E != nil || r.Queue != nil {
		t.Errorf("histograms llama.cpp has not: %+v", r)
	}
}

// TestParseEngines: each engine's page, recorded or built from its
// vendor's documented shape (testdata/README.md), read into the figures
// it holds.
func TestParseEngines(t *testing.T) {
	for _, tt := range []struct {
		file  string
		want  Reading
		hists [4]float64 // TTFT, ITL, E2E, queue observations; -1 for none
		ttft  [2]float64 // the bucket of the TTFT median
	}{
		{"sglang.txt", Reading{Engine: "sglang", Requests: has(100), Aborted: has(4), PromptTokens: has(51200), GenTokens: has(20480),
			CachedPromptTokens: has(15360), Running: has(12), Waiting: has(3), KVUsage: has(0.42), CacheHitRate: has(0.31)},
			[4]float64{100, 20380, 100, 100}, [2]float64{0.1, 0.2}},
		{"tgi.txt", Reading{Engine: "tgi", Requests: has(120), Failed: has(6), Rejected: has(4), PromptTokens: has(42000), GenTokens: has(15000),
			Running: has(16), Waiting: has(4)},
			[4]float64{-1, 110, 110, 110}, [2]float64{}},
		{"trtllm.txt", Reading{Engine: "trtllm", Requests: has(100), Aborted: has(5), Running: has(6), Waiting: has(2), KVUsage: has(0.55)},
			[4]float64{100, 100, 100, 100}, [2]float64{0.06, 0.08}},
		{"triton.txt", Reading{Engine: "triton", Requests: has(206), Failed: has(1), Rejected: has(3), Aborted: has(2),
			PromptTokens: has(61800), GenTokens: has(20600), Running: has(7), Waiting: has(1), KVUsage: has(0.25)},
			[4]float64{206, -1, -1, -1}, [2]float64{0.01, 0.1}},
		{"dynamo.txt", Reading{Engine: "dynamo", Requests: has(100), Failed: has(3), PromptTokens: has(31000), GenTokens: has(9700),
			Running: has(5), Waiting: has(2)},
			[4]float64{97, 9603, 97, -1}, [2]float64{0.047, 0.1}},
		{"llmd.txt", Reading{Engine: "llmd", Requests: has(300), Failed: has(6), PromptTokens: has(120000), GenTokens: has(36000),
			CachedPromptTokens: has(60000), Running: has(14), Waiting: has(4), KVUsage: has(0.35)},
			[4]float64{294, 35700, 294, 294}, [2]float64{0.1, 0.2}},
	} {
		r := read(t, tt.file)
		checkValues(t, tt.file, r, tt.want)
		for i, h := range []*Histogram{r.TTFT, r.ITL, r.E2E, r.Queue} {
			if tt.hists[i] < 0 && h != nil || tt.hists[i] >= 0 && h.Total() != tt.hists[i] {
				t.Errorf("%s: histogram %d of %v observations, want %v", tt.file, i, h.Total(), tt.hists[i])
			}
		}
		if tt.hists[0] > 0 {
			checkQuantile(t, tt.file+" ttft p50", r.TTFT, 0.5, tt.ttft[0], tt.ttft[1], tt.hists[0])
		}
		if Display(r.Engine) == "" {
			t.Errorf("%s: no display name for %q", tt.file, r.Engine)
		}
	}
	// Triton's first-response histogram is in milliseconds: read in seconds.
	if r := read(t, "triton.txt"); r.TTFT.Bounds[0] != 0.001 || math.Abs(r.TTFT.Sum-9) > 1e-9 {
		t.Errorf("triton ttft in seconds: %+v", r.TTFT)
	}
}

// TestFromFlatFamilies: families as a Prometheus API source builds them
// from its answers (each sample name a family of untyped values, a
// bucket's bound in its le label) read as the page they came from.
func TestFromFlatFamilies(t *testing.T) {
	fams := families(t, "vllm.txt")
	flat := map[string]*dto.MetricFamily{}
	put := func(name string, labels []*dto.LabelPair, v float64) {
		if flat[name] == nil {
			flat[name] = &dto.MetricFamily{Name: ptr(name), Type: dto.MetricType_UNTYPED.Enum()}
		}
		flat[name].Metric = append(flat[name].Metric, &dto.Metric{Label: labels, Untyped: &dto.Untyped{Value: ptr(v)}})
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				put(name, m.GetLabel(), m.GetCounter().GetValue()+m.GetGauge().GetValue()+m.GetUntyped().GetValue())
				continue
			}
			for _, bk := range h.GetBucket() {
				le := &dto.LabelPair{Name: ptr("le"), Value: ptr(strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64))}
				put(name+"_bucket", append(slices.Clone(m.GetLabel()), le), float64(bk.GetCumulativeCount()))
			}
			put(name+"_sum", m.GetLabel(), h.GetSampleSum())
			put(name+"_count", m.GetLabel(), float64(h.GetSampleCount()))
		}
	}
	got, err := FromFamilies(flat)
	if err != nil {
		t.Fatal(err)
	}
	if want := read(t, "vllm.txt"); !reflect.DeepEqual(got, want) {
		t.Errorf("from flat families %+v\nfrom the text %+v", got, want)
	}
}

func ptr[T any](v T) *T { return &v }
