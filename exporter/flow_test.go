package exporter

import (
	"sync"
	"testing"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
)

// TestFlowTogether: while requests finish (Observe) and snapshots arrive
// (Update) on other goroutines, every scrape reads sent = finished +
// incomplete + in flight, and none goes down. On main a scrape saw the
// sent counter and the in-flight gauge a request apart: they were read
// apart, set from the snapshots while the finished counted each request.
func TestFlowTogether(t *testing.T) {
	x := New(nil)
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s load.Snapshot
		for i := range n {
			s.SentEver, s.InFlight = int64(i+4), 4 // four in flight, the rest finished
			x.Update(s, slo.FromWindow(s))
			x.Observe(load.Record{Result: probe.Result{Class: probe.OK}})
		}
	}()
	var last float64
	for range 200 {
		fams, err := x.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var finished, sent, incomplete, inflight float64
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				switch f.GetName() {
				case "infertop_requests_total":
					finished += m.GetCounter().GetValue()
				case "infertop_requests_sent_total":
					sent = m.GetCounter().GetValue()
				case "infertop_requests_incomplete_total":
					incomplete = m.GetCounter().GetValue()
				case "infertop_in_flight_requests":
					inflight = m.GetGauge().GetValue()
				}
			}
		}
		if sent != finished+incomplete+inflight || inflight < 0 || sent < last {
			t.Fatalf("sent %v, finished %v, incomplete %v, in flight %v (sent before: %v)", sent, finished, incomplete, inflight, last)
		}
		last = sent
	}
	wg.Wait()
}
