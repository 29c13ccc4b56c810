package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestJSONHTTPPhases: the HTTP phases are written by k6's names where
// known, within the schema, and left out where not.
func TestJSONHTTPPhases(t *testing.T) {
	r := testReport()
	for i := range probe.NumHTTPPhases {
		d := time.Duration(i+1) * time.Millisecond
		r.Final.Run.HTTP[i] = load.Dist{Count: 200, Mean: d, Min: d, P50: d, P90: d, P95: d, P99: d, P999: d, Max: d}
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	var doc struct {
		Infertop struct {
			Run    PhaseJSON   `json:"run"`
			Phases []PhaseJSON `json:"phases"`
		} `json:"infertop"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Infertop.Run.HTTP["http_req_waiting"]; got.Count != 200 || got.P50 != 5 {
		t.Errorf("run's http_req_waiting %+v, want 200 at 5 ms", got)
	}
	if len(doc.Infertop.Run.HTTP) != int(probe.NumHTTPPhases) {
		t.Errorf("run's phases %v", doc.Infertop.Run.HTTP)
	}
	for _, p := range doc.Infertop.Phases {
		if p.HTTP != nil {
			t.Errorf("phase %d: HTTP phases %v where none was measured", p.ID, p.HTTP)
		}
	}
}

// TestRequestsLogServerTimings: a request's server timings are logged
// where the server gave them, with the client-server TTFT gap; none are
// where it gave none.
func TestRequestsLogServerTimings(t *testing.T) {
	var line RequestLine
	r := probe.Result{HasTTFT: true, TTFT: 30 * time.Millisecond, Server: probe.ServerTimings{
		Queue: 5 * time.Millisecond, HasQueue: true, TTFT: 20 * time.Millisecond, HasTTFT: true, CachedTokens: 16, HasCached: true}}
	line.server(&r)
	if line.ServerQueue == nil || *line.ServerQueue != 5 || *line.ServerTTFT != 20 || *line.ServerPrefill != 15 || *line.TTFTGap != 10 ||
		*line.CachedTokens != 16 || line.ServerGeneration != nil || line.ServerMeanITL != nil {
		t.Fatalf("%+v", line)
	}
	var none RequestLine
	none.server(&probe.Result{HasTTFT: true, TTFT: time.Millisecond})
	if none.ServerTTFT != nil || none.TTFTGap != nil || none.CachedTokens != nil {
		t.Fatalf("without the server's timings: %+v", none)
	}
}
