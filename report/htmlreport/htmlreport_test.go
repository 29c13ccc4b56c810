package htmlreport

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// minimal is a result with a manifest and little else, as a hand-made
// JSON (or one from before the series existed) would be.
const minimal = `{"infertop":{"manifest":{"tool":"infertop","model":"<script>alert(1)</script>","knobs":{"mode":"closed"}},
"run":{"id":0,"knobs":{"mode":"closed"},"latency":{}},"phases":[]}}`

// A capacity search and a comparison are drawn when present; text from
// the endpoint is escaped; a result with no series still draws.
func TestCapacityCompareEscaping(t *testing.T) {
	var res map[string]any
	json.Unmarshal([]byte(minimal), &res)
	inf := res["infertop"].(map[string]any)
	inf["capacity"] = map[string]any{"over": "concurrency", "max_load": 16, "objectives": []string{"ttft_p99<=500ms"},
		"steps": []map[string]any{
			{"load": 4, "req_per_s": 10, "output_tok_per_s": 900, "goodput": 10, "ttft_p50_ms": 50, "ttft_p99_ms": 90, "e2e_p50_ms": 800, "e2e_p99_ms": 900, "error_rate": 0, "held": true},
			{"load": 16, "req_per_s": 30, "output_tok_per_s": 2500, "goodput": 29, "ttft_p50_ms": 150, "ttft_p99_ms": 400, "e2e_p50_ms": 1200, "e2e_p99_ms": 1500, "error_rate": 0, "held": true},
			{"load": 32, "req_per_s": 31, "output_tok_per_s": 2600, "goodput": 12, "ttft_p50_ms": 900, "ttft_p99_ms": 2400, "e2e_p50_ms": 3000, "e2e_p99_ms": 5000, "error_rate": 0.01, "held": false},
		}}
	inf["compare"] = map[string]any{"metrics": []map[string]any{
		{"name": "ttft_p99_ms", "baseline": 120, "canary": 180, "delta": 60, "low": 40, "high": 80, "verdict": "worse"}}}
	doc, _ := json.Marshal(res)
	var b bytes.Buffer
	if err := Write(&b, []Run{{Name: "a", JSON: doc}, {Name: "b", JSON: []byte(minimal)}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`id="capacity-latency-0" data-lines="4"`, `id="capacity-throughput-0"`, "most concurrency that held: 16",
		"Baseline against canary", `class="bad">worse`, "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("the endpoint's text went into the page unescaped")
	}
	if err := Write(&b, []Run{{Name: "x", JSON: []byte(`{"date":"x"}`)}}); err == nil {
		t.Error("a JSON that is not a result drew")
	}
}

// TestLonePointDrawn: a series of one point (a run of one second) draws
// no line, so it gets a dot; a series of several gets none.
func TestLonePointDrawn(t *testing.T) {
	nan := math.NaN()
	c := chart{ID: "x", Lines: []line{{Name: "one", X: []float64{0}, Y: []float64{3}}, {Name: "gap", X: []float64{0, 1, 2, 3}, Y: []float64{1, nan, 2, 2}}}}
	svg := string(c.svg())
	if n := strings.Count(svg, "<circle"); n != 2 { // "one" and the lone first point of "gap"
		t.Fatalf("%d dots, want 2:\n%s", n, svg)
	}
}
