package slo

import (
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestTTFO: the objective and the goodput limit on the answer's first
// token read TTFO, and need a stream.
func TestTTFO(t *testing.T) {
	o, err := Parse("ttfo_p99<=2s")
	if err != nil || o.Metric != "ttfo" || o.Value != 2 || !o.NeedsStream() {
		t.Fatalf("%+v %v", o, err)
	}
	var f Figures
	f.Latency[load.TTFO] = load.Dist{Count: 10, P99: 1500 * time.Millisecond}
	f.Latency[load.TTFT] = load.Dist{Count: 10, P99: 3 * time.Second}
	if v := o.Check(f, "run"); !v.Held || !v.Known {
		t.Errorf("TTFO 1.5s against 2s: %s", v)
	}
	g, err := ParseGoodput("ttft:500ms,ttfo:2s")
	if err != nil || g.TTFO != 2*time.Second || g.TTFT != 500*time.Millisecond || !g.Set() {
		t.Errorf("%+v %v", g, err)
	}
	if g, err := ParseGoodput("ttfo:2s"); err != nil || !g.Set() {
		t.Errorf("ttfo alone: %+v %v", g, err)
	}
}
