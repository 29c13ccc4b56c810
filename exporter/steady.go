package exporter

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infertop/infertop/load"
)

// steadySeries are the closed loop's steady-state window (see
// load.SteadyState), as the dashboard's header and the reports have it:
// whether it has been found, and its span and throughputs, NaN until
// it has.
type steadySeries struct {
	steady, seconds, req, out prometheus.Gauge
}

func newSteadySeries() *steadySeries {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	return &steadySeries{
		steady: gauge("infertop_steady",
			"1 once the closed loop's requests in flight have reached 95 % of the concurrency (its steady-state window found), 0 before (the dashboard's \"not steady yet\"), in the open loop and in a pause; a change of the concurrency starts it over."),
		seconds: gauge("infertop_steady_window_seconds", "The steady-state window's length so far: its first steady snapshot to its last; NaN while not steady."),
		req:     gauge("infertop_steady_requests_per_second", "Requests completed per second inside the steady-state window; NaN while not steady."),
		out:     gauge("infertop_steady_output_tokens_per_second", "Output tokens per second that arrived inside the steady-state window; NaN while not steady."),
	}
}

// collectors are the series, to register.
func (s *steadySeries) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.steady, s.seconds, s.req, s.out}
}

// set takes a snapshot's window.
func (s *steadySeries) set(st load.SteadyState) {
	if !st.Reached || st.Target == 0 {
		s.steady.Set(0)
		for _, g := range []prometheus.Gauge{s.seconds, s.req, s.out} {
			g.Set(math.NaN())
		}
		return
	}
	s.steady.Set(1)
	s.seconds.Set((st.End - st.Start).Seconds())
	// A window of no length yet (steady since this snapshot) has no
	// rates: NaN, not a steady 0 req/s on a board.
	req, out := st.ReqPerSec, st.OutTokPerSec
	if st.End <= st.Start {
		req, out = math.NaN(), math.NaN()
	}
	s.req.Set(req)
	s.out.Set(out)
}
