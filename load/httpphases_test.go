package load

import (
	"math"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// TestHTTPPhasesAgainstSim: every request that got an answer is in the
// run's and its phase's HTTP phases, the first connections' connect in
// http_req_connecting, and the phases' means add up to E2E's (each
// request's phases add up to its E2E; the moments are exact to a
// microsecond a value).
func TestHTTPPhasesAgainstSim(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	r := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 16, OutputTokens: 4}, func(c *Config) { c.MaxRequests = 20 })
	s := waitFor(t, r.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
	r.stop()
	h := s.Run.HTTP
	if s.Run.Completed != 20 || h[probe.Blocked].Count != 20 || h[probe.Receiving].Count != 20 || len(s.Phases) != 1 || s.Phases[0].HTTP[probe.Waiting].Count != 20 {
		t.Fatalf("completed %d, http counts %d %d", s.Run.Completed, h[probe.Blocked].Count, h[probe.Receiving].Count)
	}
	if h[probe.Connecting].Max <= 0 {
		t.Errorf("no connect among the first connections: %+v", h[probe.Connecting])
	}
	sum := h[probe.Blocked].Mean + h[probe.Sending].Mean + h[probe.Waiting].Mean + h[probe.Receiving].Mean
	if e2e := s.Run.Latency[E2E].Mean; math.Abs(float64(sum-e2e)) > float64(4*time.Microsecond) {
		t.Errorf("the phases' means sum to %v, E2E's mean %v", sum, e2e)
	}
}
