package htmlreport

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/infertop/infertop/report"
)

// TestSteadyState: a closed loop's steady-state window is drawn beside
// the whole run's figures; a load never steady says "not steady"; a run
// where none was sought (the open loop) draws neither.
func TestSteadyState(t *testing.T) {
	page := func(s *report.SteadyJSON) string {
		t.Helper()
		var res report.File
		if err := json.Unmarshal([]byte(minimal), &res); err != nil {
			t.Fatal(err)
		}
		res.Infertop.Run.DurationS, res.Infertop.Run.Completed, res.Infertop.Run.RequestThroughput, res.Infertop.Run.OutputThroughput = 31.2, 400, 12.82, 1641.6
		res.Infertop.Run.Latency = map[string]report.DistJSON{"ttft": {Count: 400, P50: 2950, P99: 3300}, "e2el": {Count: 400, P50: 4950, P99: 5400}}
		res.Infertop.SteadyState = s
		doc, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Write(&out, []Run{{Name: "a", JSON: doc}}); err != nil {
			t.Fatal(err)
		}
		return html.UnescapeString(out.String())
	}
	steady := &report.SteadyJSON{TargetConcurrency: 64, Share: 0.95, Reached: true, SteadyWindowJSON: &report.SteadyWindowJSON{
		StartS: 0.253, EndS: 29.753, DurationS: 29.5, Completed: 380, DeliveredTokens: 49152, RequestThroughput: 12.88, OutputThroughput: 1666,
		Latency: map[string]report.DistJSON{"ttft": {Count: 380, P50: 2891.78, P99: 3059.71}, "tpot": {Count: 380, P50: 15.2}, "itl": {Count: 380, P50: 15.1},
			"e2el": {Count: 380, P50: 4911.1, P99: 5115.9}}}}
	p := page(steady)
	for _, want := range []string{"<h3>Steady state</h3>", "from 0.3 s to 29.8 s of the run, the requests in flight at 95 % of the concurrency, 64 or more",
		"<tr><td>steady state</td><td>29.5</td><td>380</td><td>12.88</td><td>1666.0</td><td>2892 ms</td><td>3060 ms</td><td>15.2 ms</td><td>15.1 ms</td><td>4911 ms</td><td>5116 ms</td></tr>",
		"<tr><td>whole run</td><td>31.2</td><td>400</td><td>12.82</td><td>1641.6</td><td>2950 ms</td><td>3300 ms</td>"} {
		if !strings.Contains(p, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(p, "Not steady") {
		t.Error("a steady run said not steady")
	}
	p = page(&report.SteadyJSON{TargetConcurrency: 64, Share: 0.95})
	if !strings.Contains(p, `<p class="steady bad">Not steady: the requests in flight at 95 % of the concurrency, 64 was never reached`) || strings.Contains(p, "<td>steady state</td>") {
		t.Error("a load never steady: no \"not steady\", or a window's row")
	}
	if p := page(nil); strings.Contains(p, "Steady state") || strings.Contains(p, "Not steady") {
		t.Error("none sought, and the page speaks of a steady state")
	}
}
