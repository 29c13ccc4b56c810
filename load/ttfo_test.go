package load

import (
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

// TestGoodputTTFO: a TTFO limit holds a request to the answer's first
// token, and a request that never answered (reasoning only) fails it.
func TestGoodputTTFO(t *testing.T) {
	g := Goodput{TTFO: time.Second}
	r := probe.Result{HasTTFT: true, TTFT: 100 * time.Millisecond, HasTTFO: true, TTFO: 900 * time.Millisecond, E2E: 2 * time.Second}
	if !g.good(&r, 0) {
		t.Error("TTFO 900ms failed a 1s limit")
	}
	r.TTFO = 1100 * time.Millisecond
	if g.good(&r, 0) {
		t.Error("TTFO 1.1s met a 1s limit")
	}
	r.HasTTFO = false
	if g.good(&r, 0) {
		t.Error("a request with no answer token met a TTFO limit")
	}
}
