package sim

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// perfEntry is one entry of TensorRT-LLM's /perf_metrics, as its
// openai_server.py writes it (the keys the sim serves).
type perfEntry struct {
	RequestID   uint64 `json:"request_id"`
	PerfMetrics struct {
		Timing map[string]float64 `json:"timing_metrics"`
		KV     map[string]int     `json:"kv_cache_metrics"`
		Spec   *struct {
			Rate     float64 `json:"acceptance_rate"`
			Accepted int     `json:"total_accepted_draft_tokens"`
			Drafted  int     `json:"total_draft_tokens"`
		} `json:"speculative_decoding"`
	} `json:"perf_metrics"`
}

func getPerf(t *testing.T, url string) (int, []perfEntry) {
	t.Helper()
	resp, err := http.Get(url + "/perf_metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []perfEntry
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, out
}

// TestPerfMetrics: with PerfMetrics, GET /perf_metrics serves each
// answered request in TensorRT-LLM's shape, its spans the sim's own
// record's, drained as it is read and holding the newest N; without it,
// a 404.
func TestPerfMetrics(t *testing.T) {
	p := testParams()
	p.PerfMetrics, p.SpecDecode = 2, SpecDecode{Draft: 3, Accept: 0.6}
	s, url := startSim(t, p)
	var last string
	for range 3 {
		_, last = post(t, url+"/v1/chat/completions", `{"model":"sim-llama-8b","messages":[{"role":"user","content":"one two three"}],"max_tokens":8,"stream":true}`)
	}
	code, got := getPerf(t, url)
	if code != 200 || len(got) != 2 {
		t.Fatalf("HTTP %d, %d entries; want the newest 2", code, len(got))
	}
	recs := s.Records()
	byID := map[uint64]Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	for _, e := range got {
		r, ok := byID[e.RequestID]
		if !ok || r.ID == recs[0].ID {
			t.Fatalf("entry for request %d: not one of the newest two records", e.RequestID)
		}
		tm := e.PerfMetrics.Timing
		span := func(a, b string) time.Duration {
			return time.Duration(math.Round((tm[b]-tm[a])*1e6)) * time.Microsecond
		}
		if d := span("arrival_time", "first_token_time"); (d - r.TTFT()).Abs() > 2*time.Microsecond {
			t.Errorf("request %d: TTFT %v, the record's %v", r.ID, d, r.TTFT())
		}
		if d := span("first_token_time", "last_token_time"); (d - r.LastToken.Sub(r.FirstToken)).Abs() > 2*time.Microsecond {
			t.Errorf("request %d: generation %v, the record's %v", r.ID, d, r.LastToken.Sub(r.FirstToken))
		}
		if q := span("arrival_time", "first_scheduled_time"); q < 0 || q > span("arrival_time", "first_token_time") {
			t.Errorf("request %d: queue %v out of order", r.ID, q)
		}
		kv := e.PerfMetrics.KV
		if kv["num_reused_blocks"]+kv["num_missed_blocks"] != kv["num_total_allocated_blocks"] || kv["num_total_allocated_blocks"] < 1 {
			t.Errorf("request %d: blocks %v", r.ID, kv)
		}
		if sp := e.PerfMetrics.Spec; sp == nil || sp.Drafted == 0 || sp.Accepted > sp.Drafted {
			t.Errorf("request %d: speculative decoding %+v", r.ID, sp)
		}
	}
	// Its answers are named as TensorRT-LLM's: chatcmpl-<request_id>.
	if want := `"id":"chatcmpl-` + strconv.FormatUint(recs[len(recs)-1].ID, 10) + `"`; !strings.Contains(last, want) {
		t.Errorf("the last answer lacks %s: %.200s", want, last)
	}
	if _, again := getPerf(t, url); len(again) != 0 {
		t.Errorf("read again: %d entries, want none (drained)", len(again))
	}

	_, plain := startSim(t, testParams())
	if code, _ := getPerf(t, plain); code != http.StatusNotFound {
		t.Errorf("without PerfMetrics: HTTP %d, want 404", code)
	}
	p.PerfMetrics = -1
	if _, err := New(p); err == nil || !strings.Contains(err.Error(), "perf metrics") {
		t.Errorf("-1 entries: %v", err)
	}
}
