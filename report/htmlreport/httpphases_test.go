package htmlreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/infertop/infertop/report"
)

// TestHTTPPhasesTable: a result with the run's HTTP phases shows them in
// a request's order; one without shows no table.
func TestHTTPPhasesTable(t *testing.T) {
	var res struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	if err := json.Unmarshal([]byte(minimal), &res); err != nil {
		t.Fatal(err)
	}
	res.Infertop.Run.HTTP = map[string]report.DistJSON{}
	for i, k := range report.HTTPPhaseKeys() {
		res.Infertop.Run.HTTP[k] = report.DistJSON{Count: 7, P50: float64(i + 1), P99: 40}
	}
	res.Infertop.Run.TTFTSplit = map[string]report.DistJSON{"connection": {Count: 7}, "queue": {Count: 7}, "prefill": {Count: 7}, "rest": {Count: 7}, "gap": {Count: 7}}
	doc, _ := json.Marshal(res)
	var out bytes.Buffer
	if err := Write(&out, []Run{{Name: "a", JSON: doc}}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	at := -1
	for _, k := range report.HTTPPhaseKeys() {
		i := strings.Index(page, `<td class="text">`+k+`</td>`)
		if i < at {
			t.Fatalf("%s missing or out of order", k)
		}
		at = i
	}
	if !strings.Contains(page, "Where the time went: HTTP phases") || !strings.Contains(page, "Where TTFT went, by the server") || !strings.Contains(page, `<td class="text">prefill</td>`) {
		t.Error("no heading, or no TTFT split")
	}
	out.Reset()
	if err := Write(&out, []Run{{Name: "b", JSON: []byte(minimal)}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "http_req_blocked") || strings.Contains(out.String(), "Where TTFT went") {
		t.Error("a result without HTTP phases drew their table")
	}
}

// TestServerPerfTable: the server's /perf_metrics spans (TensorRT-LLM)
// are shown, labelled the server's and unjoined; a result without them
// shows none.
func TestServerPerfTable(t *testing.T) {
	var res struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	if err := json.Unmarshal([]byte(minimal), &res); err != nil {
		t.Fatal(err)
	}
	res.Infertop.ServerPerf = &report.ServerPerfJSON{Source: "TensorRT-LLM /perf_metrics", Offered: true, Entries: 12,
		Spans: map[string]report.DistJSON{}, KVReusedBlocks: 3, KVMissedBlocks: 1, SpecAcceptedTokens: 1, SpecDraftTokens: 4}
	for i, k := range report.ServerPerfKeys() {
		res.Infertop.ServerPerf.Spans[k] = report.DistJSON{Count: 12, P50: float64(i + 1), P99: 40}
	}
	doc, _ := json.Marshal(res)
	var out bytes.Buffer
	if err := Write(&out, []Run{{Name: "a", JSON: doc}}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{"The server's own timings: TensorRT-LLM /perf_metrics", "Not joined to infertop's requests",
		`<td class="text">generation</td>`, "reused 75.0 % of the KV blocks", "accepted 25.0 % of the draft tokens"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	res.Infertop.ServerPerf.JoinedRequests, res.Infertop.ServerPerf.TTFTSplit = 9, map[string]report.DistJSON{}
	for _, k := range report.SplitKeys() {
		res.Infertop.ServerPerf.TTFTSplit[k] = report.DistJSON{Count: 9}
	}
	doc, _ = json.Marshal(res)
	out.Reset()
	if err := Write(&out, []Run{{Name: "a", JSON: doc}}); err != nil {
		t.Fatal(err)
	}
	if page := out.String(); !strings.Contains(page, "Where TTFT went for the 9 requests joined") || !strings.Contains(page, `<td class="text">gap</td>`) || strings.Contains(page, "Not joined") {
		t.Error("joined: no split table, or said unjoined")
	}
	out.Reset()
	if err := Write(&out, []Run{{Name: "b", JSON: []byte(minimal)}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "/perf_metrics") {
		t.Error("a result without the server's perf metrics drew them")
	}
}
