package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/telemetry"
)

// TestServerPerf: TensorRT-LLM's /perf_metrics figures are written in
// infertop.server_perf, within the schema and labelled unjoined, and
// said in the text summary; a server without it says so once.
func TestServerPerf(t *testing.T) {
	r := testReport()
	p := &telemetry.PerfRun{Offered: true, Entries: 40, Before: 3, Refused: 1}
	for i := range telemetry.NumPerfParts {
		d := time.Duration(i+1) * time.Millisecond
		p.Parts[i] = load.Dist{Count: 40, Mean: d, Min: d, P50: d, P90: d, P95: d, P99: 2 * d, P999: 2 * d, Max: 2 * d}
	}
	p.ReusedBlocks, p.MissedBlocks, p.SpecAccepted, p.SpecDrafted = 30, 10, 6, 8
	r.ServerPerf = p
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	var doc struct {
		Infertop struct {
			ServerPerf *ServerPerfJSON `json:"server_perf"`
		} `json:"infertop"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	sp := doc.Infertop.ServerPerf
	if sp == nil || sp.Joined || !sp.Offered || sp.Source != telemetry.PerfSource || sp.Entries != 40 || sp.EntriesBeforeRun != 3 {
		t.Fatalf("server_perf %+v", sp)
	}
	if q := sp.Spans["prefill"]; q.Count != 40 || q.P50 != 2 || q.P99 != 4 {
		t.Errorf("prefill %+v, want 40 at 2 ms, p99 4 ms", q)
	}
	if sp.KVReusedBlocks != 30 || sp.KVMissedBlocks != 10 || sp.SpecAcceptedTokens != 6 || sp.SpecDraftTokens != 8 {
		t.Errorf("counts %+v", sp)
	}

	r.Manifest.Settings = map[string]string{"server-timings": "true"}
	buf.Reset()
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the server's own timings (TensorRT-LLM /perf_metrics, 40 requests it finished in the run, its distribution",
		"queue 1ms / 2ms · prefill 2ms / 4ms", "30 of 40 KV blocks reused (75.0 %)", "6 of 8 draft tokens accepted (75.0 %)",
		"not joined to our requests: the server names its answers by no request number"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "not offered") {
		t.Errorf("offered, yet the text says not:\n%s", buf.String())
	}
	// Not streamed: nothing could join, whatever the server's version.
	r.Manifest.Stream = false
	buf.Reset()
	if err := r.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "these were not streamed (--no-stream)") {
		t.Errorf("a run not streamed (%v):\n%s", err, buf.String())
	}
	r.Manifest.Stream = true

	// Joined: the requests' TTFTs split, in the JSON and the text.
	p.Joined = 12
	for i := range load.NumSplitParts {
		p.Split[i] = load.Dist{Count: 12, P50: time.Duration(i+1) * time.Millisecond, P99: 9 * time.Millisecond}
	}
	buf.Reset()
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	doc.Infertop.ServerPerf = nil
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if sp := doc.Infertop.ServerPerf; !sp.Joined || sp.JoinedRequests != 12 || sp.TTFTSplit["rest"].P50 != 4 || len(sp.TTFTSplit) != int(load.NumSplitParts) {
		t.Errorf("joined: %+v", sp)
	}
	buf.Reset()
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if want := "where TTFT went (p50 / p99 of the 12 of our requests joined to their entries by the server's request number): connection 1ms / 9ms · server queue 2ms / 9ms"; !strings.Contains(buf.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, buf.String())
	}

	r.ServerPerf = &telemetry.PerfRun{Err: "scrape: HTTP 404"}
	buf.Reset()
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Count(got, "not offered") != 1 || strings.Contains(got, "server's own timings") {
		t.Errorf("not offered: want one line saying so:\n%s", got)
	}
	buf.Reset()
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
}
