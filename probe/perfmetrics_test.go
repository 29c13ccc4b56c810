package probe

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/readlimit"
	"github.com/infertop/infertop/readlimit/limittest"
)

// TestReadPerfMetricsFixture reads TensorRT-LLM's /perf_metrics as its
// source writes it (testdata/tensorrt-llm, written from openai_server.py).
func TestReadPerfMetricsFixture(t *testing.T) {
	f, err := os.Open("testdata/tensorrt-llm/perf_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadPerfMetrics(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 3 || got.Refused != 0 || got.Past != 0 {
		t.Fatalf("read %d entries, %d refused, %d past; want 3, 0, 0", len(got.Entries), got.Refused, got.Past)
	}
	near := func(name string, d time.Duration, has bool, wantMS float64) {
		t.Helper()
		if !has {
			t.Errorf("%s: unknown, want %.3f ms", name, wantMS)
			return
		}
		if w := time.Duration(wantMS * float64(time.Millisecond)); d < w-2*time.Microsecond || d > w+2*time.Microsecond {
			t.Errorf("%s = %v, want %.3f ms", name, d, wantMS)
		}
	}
	e := got.Entries[0]
	near("queue", e.Queue, e.HasQueue, 6.435)
	near("prefill", e.Prefill, e.HasPrefill, 41.607)
	near("ttft", e.TTFT, e.HasTTFT, 48.042)
	near("generation", e.Generation, e.HasGeneration, 638.641)
	if !e.HasBlocks || e.ReusedBlocks != 8 || e.MissedBlocks != 1 || e.HasSpec {
		t.Errorf("first entry's blocks %d/%d (%v), spec %v; want 8 reused, 1 missed, no spec", e.ReusedBlocks, e.MissedBlocks, e.HasBlocks, e.HasSpec)
	}
	if e := got.Entries[1]; !e.HasSpec || e.SpecAccepted != 72 || e.SpecDrafted != 120 {
		t.Errorf("second entry's spec %d of %d (%v), want 72 of 120", e.SpecAccepted, e.SpecDrafted, e.HasSpec)
	}
	e = got.Entries[2] // disaggregated: kv_cache_transfer_*, ctx_request_id, no server_* times
	near("disaggregated queue", e.Queue, e.HasQueue, 11.376)
	near("disaggregated ttft", e.TTFT, e.HasTTFT, 27.807)
}

// TestReadPerfMetricsHostile holds a hostile /perf_metrics to its
// bounds: no panic, a clear error for a body past them, a figure out of
// bounds left unknown and an entry with none refused.
func TestReadPerfMetricsHostile(t *testing.T) {
	entry := func(timing, kv, spec string) string {
		return `{"request_id":1,"perf_metrics":{"timing_metrics":{` + timing + `},"kv_cache_metrics":{` + kv + `},"speculative_decoding":{` + spec + `}}}`
	}
	for _, c := range []struct {
		name, body         string
		err                bool
		entries, refused   int
		queue, blocks, spc bool
	}{
		{name: "empty list", body: `[]`},
		{name: "object", body: `{"perf_metrics":{}}`, err: true},
		{name: "not JSON", body: `<html>`, err: true},
		{name: "deep", body: strings.Repeat("[", 100000) + strings.Repeat("]", 100000), err: true},
		{name: "wrong types", body: `[1,"x",null,[],{"perf_metrics":"x"},{"perf_metrics":{"timing_metrics":"x","kv_cache_metrics":[1]}}]`, refused: 6},
		{name: "strings for numbers", body: `[` + entry(`"arrival_time":"1","first_scheduled_time":"2"`, `"num_reused_blocks":"1","num_missed_blocks":"2"`, ``) + `]`, refused: 1},
		{name: "negative span", body: `[` + entry(`"arrival_time":10,"first_scheduled_time":9`, `"num_reused_blocks":1,"num_missed_blocks":2`, ``) + `]`, entries: 1, blocks: true},
		{name: "zero time: not recorded", body: `[` + entry(`"arrival_time":0,"first_scheduled_time":9`, ``, ``) + `]`, refused: 1},
		{name: "past an hour", body: `[` + entry(`"arrival_time":1,"first_scheduled_time":4000`, ``, ``) + `]`, refused: 1},
		{name: "huge time", body: `[` + entry(`"arrival_time":1e300,"first_scheduled_time":1e301`, ``, ``) + `]`, refused: 1},
		{name: "NaN and Infinity", body: `[` + entry(`"arrival_time":NaN,"first_scheduled_time":Infinity`, ``, ``) + `]`, err: true},
		{name: "negative blocks", body: `[` + entry(`"arrival_time":1,"first_scheduled_time":2`, `"num_reused_blocks":-1,"num_missed_blocks":2`, ``) + `]`, entries: 1, queue: true},
		{name: "fractional blocks", body: `[` + entry(``, `"num_reused_blocks":1.5,"num_missed_blocks":2`, ``) + `]`, refused: 1},
		{name: "more accepted than drafted", body: `[` + entry(``, ``, `"total_accepted_draft_tokens":9,"total_draft_tokens":3`) + `]`, refused: 1},
		{name: "spec", body: `[` + entry(``, ``, `"total_accepted_draft_tokens":3,"total_draft_tokens":9`) + `]`, entries: 1, spc: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadPerfMetrics(strings.NewReader(c.body))
			if c.err {
				if err == nil {
					t.Fatalf("read %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Entries) != c.entries || got.Refused != c.refused {
				t.Fatalf("%d entries, %d refused; want %d, %d", len(got.Entries), got.Refused, c.entries, c.refused)
			}
			if c.entries == 1 {
				e := got.Entries[0]
				if e.HasQueue != c.queue || e.HasBlocks != c.blocks || e.HasSpec != c.spc {
					t.Errorf("queue %v, blocks %v, spec %v; want %v, %v, %v", e.HasQueue, e.HasBlocks, e.HasSpec, c.queue, c.blocks, c.spc)
				}
			}
		})
	}
}

// TestReadPerfMetricsBounds: a body past the byte bound, past the value
// bound, or longer than the entry bound, each costing a bounded heap.
func TestReadPerfMetricsBounds(t *testing.T) {
	one := `{"request_id":1,"perf_metrics":{"timing_metrics":{"arrival_time":1,"first_scheduled_time":1.5}}},`
	var many bytes.Buffer
	many.WriteByte('[')
	for range MaxPerfEntries + 10 {
		many.WriteString(one)
	}
	many.Truncate(many.Len() - 1)
	many.WriteByte(']')
	got, err := ReadPerfMetrics(&many)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != MaxPerfEntries || got.Past != 10 {
		t.Fatalf("%d entries, %d past; want %d, 10", len(got.Entries), got.Past, MaxPerfEntries)
	}

	huge := strings.Repeat(" ", MaxPerfMetricsBytes) + "[]"
	if _, err := ReadPerfMetrics(strings.NewReader(huge)); !errors.Is(err, readlimit.ErrTooLarge) {
		t.Fatalf("a body past %d bytes: %v, want ErrTooLarge", MaxPerfMetricsBytes, err)
	}
	values := "[" + strings.Repeat("{},", MaxPerfMetricsBytes/3-1) + "{}]" // within the bytes, past the values
	var verr error
	peak, _ := limittest.HeapPeak(func() { _, verr = ReadPerfMetrics(strings.NewReader(values)) })
	if verr == nil || !strings.Contains(verr.Error(), "JSON values") {
		t.Fatalf("a body of %d values: %v, want refused for its values", MaxPerfMetricsBytes/3, verr)
	}
	if peak > 200<<20 {
		t.Fatalf("heap peak %d MiB reading a hostile body, want < 200", peak>>20)
	}
	within := "[" + strings.Repeat("1,", MaxPerfMetricsValues-2) + "1]" // the most values read: all built
	peak, _ = limittest.HeapPeak(func() { got, verr = ReadPerfMetrics(strings.NewReader(within)) })
	if verr != nil || got.Refused != MaxPerfEntries || got.Past != MaxPerfMetricsValues-1-MaxPerfEntries {
		t.Fatalf("a list of %d numbers: %d refused, %d past, %v", MaxPerfMetricsValues-1, got.Refused, got.Past, verr)
	}
	if peak > 200<<20 {
		t.Fatalf("heap peak %d MiB reading %d values, want < 200", peak>>20, MaxPerfMetricsValues)
	}
	t.Logf("heap peak reading %d values: %d MiB", MaxPerfMetricsValues, peak>>20)
}

// TestPerfRequestID: an answer named as recent TensorRT-LLM versions name
// them gives the server's number; any other id none.
func TestPerfRequestID(t *testing.T) {
	for id, want := range map[string]int64{"chatcmpl-42": 42, "cmpl-7": 7, "chatcmpl-0": 0,
		"chatcmpl-9f8e7d": -1, "chatcmpl-": -1, "chatcmpl-sim3": -1, "resp_3": -1, "chatcmpl-+3": -1,
		"chatcmpl-1234567890123456": -1, "chatcmpl-3 ": -1, "": -1} {
		n, ok := PerfRequestID(id)
		if ok != (want >= 0) || (ok && int64(n) != want) {
			t.Errorf("%q: %d, %v; want %d", id, n, ok, want)
		}
	}
	f, _ := os.Open("testdata/tensorrt-llm/perf_metrics.json")
	defer f.Close()
	got, _ := ReadPerfMetrics(f)
	for i, want := range []uint64{3, 4, 5} {
		if e := got.Entries[i]; !e.HasID || e.RequestID != want {
			t.Errorf("entry %d: request_id %d (%v), want %d", i, e.RequestID, e.HasID, want)
		}
	}
}
