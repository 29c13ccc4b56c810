package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestSteadyState: the steady-state window is in the JSON beside the
// run's, within the schema, and in the text summary; one never reached
// says so in both; none sought (the open loop) is in neither.
func TestSteadyState(t *testing.T) {
	ms := time.Millisecond
	reached := load.SteadyState{Target: 64, Reached: true, Start: 2 * time.Second, End: 62 * time.Second, Completed: 1200, OutTokens: 153600,
		ReqPerSec: 20, OutTokPerSec: 2560}
	for _, m := range []load.Metric{load.TTFT, load.TPOT, load.ITL, load.E2E} {
		reached.Latency[m] = load.Dist{Count: 1200, P50: 100 * ms, P99: 300 * ms, Max: 400 * ms}
	}
	for _, c := range []struct {
		name string
		s    load.SteadyState
		text string // in the summary ("": no line)
	}{
		{"reached", reached, "steady state (95 % of 64 in flight) from 2s to 1m2s: 1200 requests, 20.00 req/s, 2560.0 output tok/s; TTFT p50 / p99 100ms / 300ms"},
		{"never", load.SteadyState{Target: 64}, "steady state: never reached (95 % of 64 in flight)"},
		{"none sought", load.SteadyState{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := testReport()
			r.Final.Steady = c.s
			var buf bytes.Buffer
			if err := r.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			validate(t, buf.Bytes())
			var doc struct {
				Infertop struct {
					Steady *SteadyJSON `json:"steady_state"`
				} `json:"infertop"`
			}
			if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			st := doc.Infertop.Steady
			switch {
			case c.s.Target == 0:
				if st != nil {
					t.Fatalf("none sought, written: %+v", st)
				}
			case !c.s.Reached:
				if st == nil || st.Reached || st.TargetConcurrency != 64 || st.SteadyWindowJSON != nil {
					t.Fatalf("never reached: %+v", st)
				}
			default:
				if st == nil || !st.Reached || st.Share != 0.95 || st.SteadyWindowJSON == nil || st.DurationS != 60 || st.RequestThroughput != 20 ||
					st.Completed != 1200 || st.Latency["ttft"].P99 != 300 || len(st.Latency) != 4 {
					t.Fatalf("reached: %+v %+v", st, st.SteadyWindowJSON)
				}
			}
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(text.String(), "steady state"); got != (c.text != "") || c.text != "" && !strings.Contains(text.String(), c.text) {
				t.Fatalf("want %q in\n%s", c.text, text.String())
			}
		})
	}
}
