package watch

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// collector exposes the newest snapshot as Prometheus metrics: each
// group's figures over the window, the servers by state, and the
// verdict, so a Grafana beside the rollout charts what the watch shows.
// It reads the snapshot at each scrape; it keeps nothing.
type collector struct {
	w                                           *Watch
	req, out, in, errs, running, waiting, kv    *prometheus.Desc
	ttftHi, ttftLo, servers, verdict, judgement *prometheus.Desc
	probeTTFT, probeE2E, probeDone, probeFlight *prometheus.Desc
}

func newCollector(w *Watch) *collector {
	g := []string{"group", "role"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("infertop_watch_"+name, help, labels, nil)
	}
	return &collector{w: w,
		req:         d("group_requests_per_second", "A group's requests ended per second over the window, from its servers' counters.", g...),
		out:         d("group_output_tokens_per_second", "A group's generated tokens per second over the window.", g...),
		in:          d("group_input_tokens_per_second", "A group's prompt tokens per second over the window.", g...),
		errs:        d("group_error_ratio", "A group's failed over ended requests over the window.", g...),
		running:     d("group_running", "Requests in a group's batches now.", g...),
		waiting:     d("group_waiting", "Requests in a group's queues now.", g...),
		kv:          d("group_kv_usage_ratio", "The fullest KV cache of a group's servers, 0..1.", g...),
		ttftLo:      d("group_ttft_p99_lower_seconds", "The lower bound of the bucket a group's TTFT p99 lies in, over the window.", g...),
		ttftHi:      d("group_ttft_p99_upper_seconds", "The upper bound of the bucket a group's TTFT p99 lies in (+Inf past the last bound).", g...),
		servers:     d("servers", "The servers watched, by group and state.", "group", "state"),
		verdict:     d("verdict", "1 for the verdict's state now: held, undecided, regressed or unusable.", "state"),
		judgement:   d("regression", "1 for each regression's margin verdict now.", "regression", "verdict"),
		probeTTFT:   d("probe_ttft_seconds", "The end-to-end probe's TTFT over the window, as the client saw it (--probe-url).", "quantile"),
		probeE2E:    d("probe_e2e_seconds", "The end-to-end probe's E2E latency over the window (--probe-url).", "quantile"),
		probeDone:   d("probe_requests_total", "The end-to-end probe's requests ended since it began, by outcome: completed or failed.", "outcome"),
		probeFlight: d("probe_in_flight", "The end-to-end probe's requests sent and not ended."),
	}
}

// Describe sends every metric's description.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.req, c.out, c.in, c.errs, c.running, c.waiting, c.kv, c.ttftLo, c.ttftHi, c.servers, c.verdict, c.judgement, c.probeTTFT, c.probeE2E, c.probeDone, c.probeFlight} {
		ch <- d
	}
}

// Collect sends the newest snapshot's figures; nothing before the
// first read.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.w.Latest()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, g := range s.Groups {
		l := []string{g.Name, g.Role}
		gauge(c.req, g.ReqPerSec, l...)
		gauge(c.out, g.OutTokPerSec, l...)
		gauge(c.in, g.InTokPerSec, l...)
		gauge(c.running, g.Running, l...)
		gauge(c.waiting, g.Waiting, l...)
		if g.ErrorKnown {
			gauge(c.errs, g.ErrorRate, l...)
		}
		if g.KVKnown {
			gauge(c.kv, g.KVUsage, l...)
		}
		if g.TTFT.P99.OK {
			gauge(c.ttftLo, g.TTFT.P99.Lo, l...)
			gauge(c.ttftHi, g.TTFT.P99.Upper(), l...)
		}
	}
	if p := s.Probe; p != nil {
		ch <- prometheus.MustNewConstMetric(c.probeDone, prometheus.CounterValue, float64(p.Completed), "completed")
		ch <- prometheus.MustNewConstMetric(c.probeDone, prometheus.CounterValue, float64(p.Failed), "failed")
		gauge(c.probeFlight, float64(p.Incomplete))
		if p.WindowCompleted > 0 {
			gauge(c.probeTTFT, p.TTFTP50, "0.5")
			gauge(c.probeTTFT, p.TTFTP99, "0.99")
			gauge(c.probeE2E, p.E2EP99, "0.99")
		}
	}
	states := map[[2]string]int{}
	for _, sv := range s.Servers {
		states[[2]string{sv.Group, sv.State}]++
	}
	for k, n := range states {
		gauge(c.servers, float64(n), k[0], k[1])
	}
	for _, st := range []string{Held, Undecided, Regressed, Unusable} {
		v := 0.0
		if s.Verdict.State == st {
			v = 1
		}
		gauge(c.verdict, v, st)
	}
	for _, j := range s.Verdict.Regressions {
		gauge(c.judgement, 1, j.Expr, j.Verdict)
	}
}

// metricsHandler serves the collector alone (no process metrics: the
// watch's /metrics is the fleet's, read by the rollout's Prometheus).
func (w *Watch) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(w))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
