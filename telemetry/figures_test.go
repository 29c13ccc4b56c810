package telemetry

import (
	"testing"

	"github.com/infertop/infertop/load"
)

// TestJoin: the energy per token enters the window's figures only from a
// fresh GPU reading, and Scraped says whether any view was joined.
func TestJoin(t *testing.T) {
	s := load.Snapshot{OutTokPerSec: 100}
	gpu := func(stale bool) *View { return &View{GPU: &GPUView{Count: 1, AvgW: 300, Stale: stale}} }
	for _, c := range []struct {
		name    string
		v       *View
		scraped bool
		jpt     float64
		energy  bool
	}{
		{"nothing read", nil, false, 0, false},
		{"server only", &View{Server: &ServerView{Kind: "vllm"}}, true, 0, false},
		{"fresh GPUs", gpu(false), true, 3, true},
		{"stale GPUs", gpu(true), true, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := Join(s, c.v)
			if f.Scraped != c.scraped || f.Window.HasEnergy != c.energy || f.Window.JoulesPerToken != c.jpt {
				t.Fatalf("scraped %v, energy %v %v J/token; want %v, %v %v", f.Scraped, f.Window.HasEnergy, f.Window.JoulesPerToken, c.scraped, c.energy, c.jpt)
			}
		})
	}
}
