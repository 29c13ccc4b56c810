package exporter

import (
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestHTTPPhaseSeries: every request that got an answer, a failed one
// too, is in each HTTP phase's histogram; one that got none is in none.
func TestHTTPPhaseSeries(t *testing.T) {
	x := New(nil)
	x.Observe(load.Record{Result: probe.Result{Status: 200, TTFB: 2 * time.Millisecond, E2E: 9 * time.Millisecond}})
	x.Observe(load.Record{Result: probe.Result{Class: probe.HTTP5xx, Status: 503, TTFB: 3 * time.Millisecond, E2E: 4 * time.Millisecond}})
	x.Observe(load.Record{Result: probe.Result{Class: probe.Connection}})
	got := scrape(t, x)
	for i := range probe.NumHTTPPhases {
		name := "infertop_" + i.String() + "_seconds_count"
		if got[name] != 2 {
			t.Errorf("%s = %v, want 2", name, got[name])
		}
	}
}
