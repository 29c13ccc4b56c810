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
