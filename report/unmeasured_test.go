package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
)

// pastTheKnee is a search whose last step measured nothing of its own:
// its phase's requests were all still queued when it was judged
// (over-saturated), though requests of earlier phases completed in its
// seconds (10.2 req/s).
func pastTheKnee(t *testing.T) *Report {
	r := testReport()
	res := testCapacity(t, 64, 8)
	res.Steps = append(res.Steps, capacity.Step{N: 4, Load: 32, Knobs: load.Knobs{Concurrency: 32, PromptTokens: 64, OutputTokens: 8}, WarmupPhase: 7, Phase: 8,
		Start: 6 * time.Second, Measured: time.Second, Pending: 32, ReqPerSec: 10.2, ReqKnown: true, Why: "over-saturated: the queue grew", Saturated: true})
	r.Capacity = &capacity.Outcome{Over: capacity.Concurrency, Objectives: res.Objectives, Cells: []capacity.Cell{{Prompt: 64, Output: 8, Result: res}}}
	return r
}

// TestUnmeasuredStepIsAbsent: a capacity step with nothing measured
// writes null in the JSON, empty cells in the CSV and "—" in the
// summary, never 0 ms or 0 tok/s (the issue's "10.2 req/s, 0.0 tok/s
// out, 0.0 goodput" and curves falling to zero past the knee).
func TestUnmeasuredStepIsAbsent(t *testing.T) {
	r := pastTheKnee(t)
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	validate(t, js.Bytes())
	var doc struct {
		Infertop struct {
			Capacity struct {
				Steps []map[string]any `json:"steps"`
			} `json:"capacity"`
		} `json:"infertop"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	steps := doc.Infertop.Capacity.Steps
	last := steps[len(steps)-1]
	for _, k := range []string{"output_throughput", "request_goodput", "p50_ttft_ms", "p99_ttft_ms", "p50_e2el_ms", "p99_e2el_ms", "error_rate"} {
		if v, ok := last[k]; !ok || v != nil {
			t.Errorf("%s = %v, want null", k, v)
		}
	}
	if last["request_throughput"] != 10.2 || steps[0]["p99_ttft_ms"] == nil {
		t.Errorf("measured figures lost: %v, %v", last["request_throughput"], steps[0]["p99_ttft_ms"])
	}
	rows := csvRows(t, r)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	lastRow := rows[len(rows)-1]
	for _, k := range []string{"output_throughput", "request_goodput", "p99_ttft_ms", "p50_tpot_ms", "p99_e2el_ms", "error_rate"} {
		if v := lastRow[col[k]]; v != "" {
			t.Errorf("CSV %s = %q, want empty", k, v)
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[0] == "4" && f[1] == "32" {
			if strings.Contains(l, "0.0 ") || strings.Contains(l, "0.00ms") || !strings.Contains(l, "10.2") || strings.Count(l, "—") != 7 {
				t.Errorf("step 4's row: %q", l)
			}
			return
		}
	}
	t.Errorf("no row for step 4:\n%s", text.String())
}

// TestUnstreamedMarked: a run whose server ignored "stream" says so, and
// marks its output counts estimated (it passed with neither said).
func TestUnstreamedMarked(t *testing.T) {
	r := testReport()
	r.Final.Run.Unstreamed, r.Final.Run.EstimatedOutput = 200, 200
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`200 of the 200 answers came whole though streamed was asked (the server ignored "stream": true)`,
		"200 of the 200 output counts estimated"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCapacityFirst: a capacity run's summary opens with its answer, the
// matrix's table and each search, before the phases (the table was at
// line 871 of 970).
func TestCapacityFirst(t *testing.T) {
	r := pastTheKnee(t)
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if c, p := strings.Index(out, "Capacity · prompt 64"), strings.Index(out, "\nPhase 1:"); c < 0 || p < 0 || c > p {
		t.Fatalf("capacity at %d, phase 1 at %d:\n%s", c, p, out)
	}
}

// TestSeriesIntendedColumns: the series carry the open loop's TTFT* and
// E2E* per second where it has them, and no such column in a closed loop.
func TestSeriesIntendedColumns(t *testing.T) {
	h := &load.History{Seconds: []load.Second{{Sec: 0, TTFT: [3]uint32{1000, 2000, 3000}}, {Sec: 1, TTFTIntended: [3]uint32{5000, 6000, 7000}, E2EIntended: [3]uint32{9000, 9500, 9900}}}}
	s := seriesJSON(h)
	if c := s.Latency["ttft_intended_p99"]; len(c) != 2 || c[0] != nil || c[1] == nil || *c[1] != 7 || s.Latency["e2el_intended_p50"][1] == nil {
		t.Fatalf("intended columns: %v", s.Latency)
	}
	h.Seconds = h.Seconds[:1]
	if _, ok := seriesJSON(h).Latency["ttft_intended_p99"]; ok {
		t.Fatal("a closed loop's series has an intended column")
	}
}
