package htmlreport

import (
	"bytes"
	"encoding/json"
	"html"
	"math"
	"strings"
	"testing"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/report"
)

// minimal is a result with a manifest and little else, as a hand-made
// JSON (or one from before the series existed) would be.
const minimal = `{"infertop":{"manifest":{"tool":"infertop","model":"<script>alert(1)</script>","knobs":{"mode":"closed"}},
"run":{"id":0,"knobs":{"mode":"closed"},"latency":{}},"phases":[]}}`

// A capacity search and a comparison, written with report's and
// compare's types, are drawn when present; text from the endpoint is
// escaped; a result with no series still draws.
func TestCapacityCompareEscaping(t *testing.T) {
	var res struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	if err := json.Unmarshal([]byte(minimal), &res); err != nil {
		t.Fatal(err)
	}
	inf := &res.Infertop
	maxLoad := 16.0
	f := func(v float64) *float64 { return &v }
	steps := []report.StepJSON{
		{N: 1, Load: 4, ReqPerSec: f(10), OutTokPerSec: f(900), GoodPerSec: f(10), P50TTFT: f(50), P99TTFT: f(90), P50E2E: f(800), P99E2E: f(900), Held: true},
		{N: 2, Load: 16, ReqPerSec: f(30), OutTokPerSec: f(2500), GoodPerSec: f(29), P50TTFT: f(150), P99TTFT: f(400), P50E2E: f(1200), P99E2E: f(1500), Held: true},
		{N: 3, Load: 32, ReqPerSec: f(31), OutTokPerSec: f(2600), GoodPerSec: f(12), P50TTFT: f(900), P99TTFT: f(2400), P50E2E: f(3000), P99E2E: f(5000), ErrorRate: f(0.01)},
	}
	inf.Capacity = &report.CapacityJSON{Over: "concurrency", Objectives: []string{"ttft_p99<=500ms"},
		SearchJSON: report.SearchJSON{Found: true, MaxLoad: &maxLoad, Steps: steps, At: &report.AtJSON{Step: 2, Load: 16},
			SearchRunJSON: &report.SearchRunJSON{Prompt: 64, Output: 8, Why: "resolved", BrokeAt: 32}}}
	b, c, d := 120.0, 180.0, 0.5
	inf.Compare = &report.Compare{Pair: &compare.PairJSON{ComparisonJSON: compare.ComparisonJSON{Confidence: 0.99, FamilyConfidence: 0.95, Resamples: 100,
		Metrics: []compare.ResultJSON{{Name: "ttft_p99", Unit: "ms", DeltaUnit: "relative", Baseline: &b, Canary: &c, Delta: &d,
			Interval: []float64{0.3, 0.7}, NBaseline: 300, NCanary: 310, Verdict: "canary worse"}},
		Regressions: []compare.GateJSON{{Expr: "ttft_p99<+10%", Judged: true, Breached: true, Text: "ttft_p99<+10%: breached"}}, Regressed: true}}}
	doc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, []Run{{Name: "a", JSON: doc}, {Name: "b", JSON: []byte(minimal)}}); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(out.String())
	for _, want := range []string{`id="capacity-latency-0" data-lines="4"`, `id="capacity-throughput-0" data-lines="1"`, `id="capacity-requests-0" data-lines="2"`, "the most at which ttft_p99<=500ms held: 16",
		"◀ knee", "Baseline against canary", `class="text bad">worse`, "+30%…+70%", "120ms", "+50%", "the canary regressed",
		"<script>alert(1)</script>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "<script>") {
		t.Error("the endpoint's text went into the page unescaped")
	}
	if err := Write(&out, []Run{{Name: "x", JSON: []byte(`{"date":"x"}`)}}); err == nil {
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
