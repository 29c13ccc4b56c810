// Package exporter serves infertop's client-side view of the load in the
// Prometheus exposition format (--metrics-addr), so a dashboard can follow
// a rollout: request, TTFT, TPOT, ITL and E2E histograms, token and error
// counters by class, in-flight and knob gauges, and the SLOs' state; the
// closed loop's steady-state window; a sessions run's TTFT and prefix
// cache by turn and session time, a replay's lag.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/infertop/infertop/door"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// Classic latency buckets in seconds: fine where interactive serving
// lives, coarse out to the minutes a stalled request can take. The same
// histograms are native histograms too (exponential buckets about 10 %
// wide), which a Prometheus with native histograms on reads instead: its
// quantiles then land within a few percent of the dashboard's exact ones.
func ttftBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .075, .1, .15, .2, .3, .5, .75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30, 60}
}

func tokBuckets() []float64 {
	return []float64{.001, .0025, .005, .0075, .01, .015, .02, .03, .04, .05, .075, .1, .15, .2, .3, .5, 1, 2}
}

func e2eBuckets() []float64 {
	return []float64{.05, .1, .25, .5, .75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 120, 300, 600}
}

// windowQuantiles are the quantiles of the rolling window exported as
// gauges, exactly as the dashboard shows them.
func windowQuantiles() []struct {
	label string
	pick  func(load.Dist) time.Duration
} {
	return []struct {
		label string
		pick  func(load.Dist) time.Duration
	}{
		{"0.5", func(d load.Dist) time.Duration { return d.P50 }},
		{"0.9", func(d load.Dist) time.Duration { return d.P90 }},
		{"0.95", func(d load.Dist) time.Duration { return d.P95 }},
		{"0.99", func(d load.Dist) time.Duration { return d.P99 }},
	}
}

// Exporter holds the collectors. Observe and Update may be called from any
// goroutine.
type Exporter struct {
	reg                        *prometheus.Registry
	good                       prometheus.Counter
	ttft, tpot, itl, e2e, ttfb prometheus.Histogram
	// ttfo is the answer's first token after any reasoning, per
	// completed request.
	ttfo           prometheus.Histogram
	outTok, inTok  prometheus.Counter
	conc, prompt   prometheus.Gauge
	output, paused prometheus.Gauge
	sloHeld        *prometheus.GaugeVec
	windowQ        *prometheus.GaugeVec
	window         prometheus.Gauge
	objectives     []slo.Objective
	// flow is the sent and incomplete counters and the in-flight gauge,
	// from the snapshots (a request cancelled before it finished is no
	// record), set and read together.
	flow *flow
	// The split's series, by the group that answered each request
	// (--split-by): its requests by class and its latencies, labelled
	// group=NAME for the first probe.MaxGroups names seen,
	// group=probe.OtherGroup after.
	groupReq                       *prometheus.CounterVec
	groupTTFT, groupTPOT, groupE2E *prometheus.HistogramVec
	groupMu                        sync.Mutex
	groupNames                     map[string]string // the group's value → its label
	// tokOwed is the output tokens a correction downwards took back that
	// the counter has not yet paid (see Progress), behind tokMu.
	tokMu   sync.Mutex
	tokOwed int64
	// sessions and trace are a sessions run's and a replay's series;
	// steady the closed loop's steady-state window.
	sessions *sessionSeries
	trace    *traceSeries
	steady   *steadySeries

	// http is the HTTP phases by k6's names (infertop_http_req_blocked_seconds,
	// ...), of every request that got an answer.
	http [probe.NumHTTPPhases]prometheus.Histogram
	// split is the client's TTFT split by where it went (label part),
	// of every request whose server gave its timings; cached and
	// cachedOf the prompt tokens its prefix cache held, of those of the
	// completed requests whose server said.
	split            *prometheus.HistogramVec
	cached, cachedOf prometheus.Counter
	// perf is the server's own per-request spans from its /perf_metrics
	// (TensorRT-LLM: ObservePerf), label part; perfBlocks its prefix
	// cache's KV blocks (label kind: reused, missed); perfSpec its
	// speculative decoding's draft tokens (kind: accepted, drafted).
	perf                 *prometheus.HistogramVec
	perfBlocks, perfSpec *prometheus.CounterVec
}

// perfParts label infertop_server_perf_seconds, in ObservePerf's order.
var perfParts = [...]string{"queue", "prefill", "ttft", "generation"}

// splitParts label infertop_ttft_split_seconds, in probe.TTFTSplit's
// order.
var splitParts = [...]string{"connection", "queue", "prefill", "rest", "gap"}

// httpPhaseSeries are the HTTP phases' series, in probe.HTTPPhase's
// order (k6's names, infertop_ before and _seconds after), and what each
// holds, for its help text.
var httpPhaseSeries = [probe.NumHTTPPhases]struct{ name, help string }{
	{"infertop_http_req_blocked_seconds", "start to a connection in hand: the pool's wait, and a new connection's DNS, connect and TLS"},
	{"infertop_http_req_connecting_seconds", "the TCP connect, 0 on a reused connection"},
	{"infertop_http_req_tls_handshaking_seconds", "the TLS handshake, 0 on a reused connection"},
	{"infertop_http_req_sending_seconds", "the connection in hand to the request written"},
	{"infertop_http_req_waiting_seconds", "the request written to the answer's first byte"},
	{"infertop_http_req_receiving_seconds", "the answer's first byte to its end"},
}

// New builds an exporter for the given objectives.
func New(objectives []slo.Objective) *Exporter { return newExporter(objectives, "", true) }

// ForTarget builds an exporter whose every series carries the label
// target=name, so one scrape holds two endpoints under one load (a
// comparison's baseline and canary) under the same series names. process
// adds the Go runtime's and the process's series (unlabelled): give it to
// one exporter of a set, as they describe the one process.
func ForTarget(objectives []slo.Objective, name string, process bool) *Exporter {
	return newExporter(objectives, name, process)
}

func newExporter(objectives []slo.Objective, target string, process bool) *Exporter {
	x := &Exporter{reg: prometheus.NewRegistry(), objectives: objectives}
	var reg prometheus.Registerer = x.reg
	if target != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"target": target}, x.reg)
	}
	hist := func(name, help string, b []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b,
			NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	x.good = prometheus.NewCounter(prometheus.CounterOpts{Name: "infertop_good_requests_total", Help: "Requests that met every goodput limit."})
	x.ttft = hist("infertop_ttft_seconds", "Time to the first output-bearing message, observed as it arrives.", ttftBuckets())
	x.tpot = hist("infertop_tpot_seconds", "Time per output token after the first, per request.", tokBuckets())
	x.itl = hist("infertop_itl_seconds", "Gaps between output-bearing messages, observed as they arrive.", tokBuckets())
	x.e2e = hist("infertop_e2e_seconds", "Time to the last output-bearing message.", e2eBuckets())
	x.ttfb = hist("infertop_ttfb_seconds", "Time to the response headers.", ttftBuckets())
	x.ttfo = hist("infertop_ttfo_seconds", "Time to the answer's first token, after any reasoning (TTFT is the first of either), per completed request.", ttftBuckets())
	for i, ph := range httpPhaseSeries {
		x.http[i] = hist(ph.name, "The HTTP phase k6 calls "+probe.HTTPPhase(i).String()+": "+ph.help+"; of every request that got an answer, failed ones too.", ttftBuckets())
		reg.MustRegister(x.http[i])
	}
	x.split = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "infertop_ttft_split_seconds",
		Help:    "The client's TTFT split by where it went (part: connection, queue, prefill, rest; gap, the client's TTFT less the server's), of every request whose server gave its own timings (--server-timings).",
		Buckets: ttftBuckets(), NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour}, []string{"part"})
	x.cached = prometheus.NewCounter(prometheus.CounterOpts{Name: "infertop_cached_prompt_tokens_total",
		Help: "Prompt tokens the server's prefix cache held, by its own count (cached_tokens, llama.cpp's cache_n), of infertop_prompt_tokens_cache_known_total."})
	x.cachedOf = prometheus.NewCounter(prometheus.CounterOpts{Name: "infertop_prompt_tokens_cache_known_total",
		Help: "Prompt tokens of the completed requests whose server said how many its prefix cache held."})
	reg.MustRegister(x.split, x.cached, x.cachedOf)
	x.perf = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "infertop_server_perf_seconds",
		Help:    "The server's own per-request spans from its /perf_metrics (TensorRT-LLM, --server-timings; part: queue, prefill, ttft, generation), of every request it finished while the run lasted: its distribution, not joined to infertop's requests.",
		Buckets: ttftBuckets(), NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour}, []string{"part"})
	x.perfBlocks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "infertop_server_perf_kv_blocks_total",
		Help: "KV blocks of the server's prefix cache, by its own /perf_metrics (TensorRT-LLM; kind: reused, missed): reused over their sum is its hit rate."}, []string{"kind"})
	x.perfSpec = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "infertop_server_perf_draft_tokens_total",
		Help: "Speculative decoding's draft tokens, by the server's own /perf_metrics (TensorRT-LLM; kind: accepted, drafted): accepted over drafted is its acceptance rate."}, []string{"kind"})
	reg.MustRegister(x.perf, x.perfBlocks, x.perfSpec)
	x.outTok = prometheus.NewCounter(prometheus.CounterOpts{Name: "infertop_output_tokens_total",
		Help: "Output tokens received, counted as they arrive (a token a message, corrected by the server's usage at the end of a request), those of requests that then failed included."})
	x.inTok = prometheus.NewCounter(prometheus.CounterOpts{Name: "infertop_input_tokens_total", Help: "Prompt tokens sent, as the server counted them."})
	x.conc = gauge("infertop_concurrency_target", "The concurrency knob.")
	x.prompt = gauge("infertop_prompt_tokens_target", "The prompt length knob.")
	x.output = gauge("infertop_output_tokens_target", "The output length knob.")
	x.paused = gauge("infertop_paused", "1 while the load is paused.")
	x.sloHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "infertop_slo_held",
		Help: "1 while the objective holds over the rolling window, 0 when it is breached."}, []string{"slo"})
	x.flow = newFlow()
	x.windowQ = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "infertop_window_latency_seconds",
		Help: "The rolling window's latency quantiles, exact (HdrHistogram), as the dashboard shows them; NaN with nothing measured."},
		[]string{"metric", "quantile"})
	x.window = gauge("infertop_window_seconds", "The rolling window's length.")
	x.groupReq = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "infertop_group_requests_total",
		Help: "Requests finished by the group that answered (--split-by), by class."}, []string{"group", "class"})
	groupHist := func(name, help string, b []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b,
			NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour}, []string{"group"})
	}
	x.groupTTFT = groupHist("infertop_group_ttft_seconds", "Time to the first output-bearing message, by the group that answered (--split-by).", ttftBuckets())
	x.groupTPOT = groupHist("infertop_group_tpot_seconds", "Time per output token after the first, by the group that answered (--split-by).", tokBuckets())
	x.groupE2E = groupHist("infertop_group_e2e_seconds", "Time to the last output-bearing message, by the group that answered (--split-by).", e2eBuckets())
	x.groupNames = map[string]string{}
	x.sessions, x.trace, x.steady = newSessionSeries(), newTraceSeries(), newSteadySeries()
	reg.MustRegister(x.steady.collectors()...)
	x.steady.set(load.SteadyState{})
	reg.MustRegister(x.sessions.ttft, x.sessions.cached, x.sessions.cachedOf, x.sessions.session, x.trace, x.windowQ, x.window, x.flow, x.good, x.ttft, x.tpot, x.itl, x.e2e, x.ttfb, x.ttfo, x.outTok, x.inTok,
		x.conc, x.prompt, x.output, x.paused, x.sloHeld, x.groupReq, x.groupTTFT, x.groupTPOT, x.groupE2E)
	if process {
		x.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, o := range objectives {
		x.sloHeld.WithLabelValues(o.Expr).Set(1)
	}
	return x
}

// Observe records one finished request (load.Config.OnResult).
func (x *Exporter) Observe(r load.Record) {
	x.flow.finish(r.Class)
	if r.Group != "" {
		x.observeGroup(r)
	}
	if r.Turn > 0 {
		x.sessions.observe(r)
	}
	if p, ok := r.HTTPPhases(); ok {
		for i, d := range p {
			x.http[i].Observe(d.Seconds())
		}
	}
	if s, ok := r.SplitTTFT(); ok {
		x.ObserveSplit(s)
	}
	if cached, of, ok := load.PromptCached(&r.Result); ok {
		x.cached.Add(float64(cached))
		x.cachedOf.Add(float64(of))
	}
	if !r.OK() {
		return
	}
	if r.Good {
		x.good.Inc()
	}
	in := r.InputTokens
	if r.InputEstimated {
		in = r.PromptTokens
	}
	x.inTok.Add(float64(in))
	if tpot, ok := r.TPOT(); ok {
		x.tpot.Observe(tpot.Seconds())
	}
	x.e2e.Observe(r.E2E.Seconds())
	if r.TTFB > 0 {
		x.ttfb.Observe(r.TTFB.Seconds())
	}
	if r.HasTTFO {
		x.ttfo.Observe(r.TTFO.Seconds())
	}
}

// ObserveSplit records a request's client TTFT split by where it went:
// by its server's timings in its answer (Observe), or by its entry of
// the server's /perf_metrics joined to it (telemetry.Config.OnSplit).
func (x *Exporter) ObserveSplit(s probe.TTFTSplit) {
	for i, d := range [...]time.Duration{s.Connection, s.Queue, s.Prefill, s.Rest, s.Gap} {
		x.split.WithLabelValues(splitParts[i]).Observe(d.Seconds())
	}
}

// ObservePerf records one entry of the server's /perf_metrics
// (TensorRT-LLM; telemetry.Config.OnPerf).
func (x *Exporter) ObservePerf(e probe.ServerPerf) {
	for i, p := range [...]struct {
		d   time.Duration
		has bool
	}{{e.Queue, e.HasQueue}, {e.Prefill, e.HasPrefill}, {e.TTFT, e.HasTTFT}, {e.Generation, e.HasGeneration}} {
		if p.has {
			x.perf.WithLabelValues(perfParts[i]).Observe(p.d.Seconds())
		}
	}
	if e.HasBlocks {
		x.perfBlocks.WithLabelValues("reused").Add(float64(e.ReusedBlocks))
		x.perfBlocks.WithLabelValues("missed").Add(float64(e.MissedBlocks))
	}
	if e.HasSpec {
		x.perfSpec.WithLabelValues("accepted").Add(float64(e.SpecAccepted))
		x.perfSpec.WithLabelValues("drafted").Add(float64(e.SpecDrafted))
	}
}

// Progress records what the streams showed as it arrived
// (load.Config.OnProgress): a first token in infertop_ttft_seconds, the
// gaps in infertop_itl_seconds, the tokens in infertop_output_tokens_total,
// within a tick of their arrival, for every request, the warm-up's and
// those that then fail included (they were measured, and delivered).
//
// The tokens are counted a token a message as messages come, and a
// completed request's usage corrects them at its end. A counter only goes
// up, so a correction downwards (a server counting fewer tokens than it
// sent messages) is held back and paid out of the next tokens that come:
// the counter stands still a moment and then runs exact again. Holding
// the live count back until usage arrives instead would bring back the
// very lag this counter is live to avoid.
func (x *Exporter) Progress(p load.Progress) {
	if p.HasTTFT {
		x.ttft.Observe(p.TTFT.Seconds())
	}
	for _, d := range p.ITLs {
		x.itl.Observe(d.Seconds())
	}
	if p.Tokens == 0 {
		return
	}
	x.tokMu.Lock()
	n := p.Tokens - x.tokOwed
	x.tokOwed = max(-n, 0)
	x.tokMu.Unlock()
	if n > 0 {
		x.outTok.Add(float64(n))
	}
}

// observeGroup records a request of a split in its group's series.
func (x *Exporter) observeGroup(r load.Record) {
	g := x.groupLabel(r.Group)
	x.groupReq.WithLabelValues(g, r.Class.String()).Inc()
	if !r.OK() {
		return
	}
	if r.HasTTFT {
		x.groupTTFT.WithLabelValues(g).Observe(r.TTFT.Seconds())
	}
	if tpot, ok := r.TPOT(); ok {
		x.groupTPOT.WithLabelValues(g).Observe(tpot.Seconds())
	}
	x.groupE2E.WithLabelValues(g).Observe(r.E2E.Seconds())
}

// groupLabel is the label of the group of value v: the value sanitised
// (the server's text, on a board), for the first probe.MaxGroups values
// seen, as the comparison names them; probe.OtherGroup after them.
func (x *Exporter) groupLabel(v string) string {
	x.groupMu.Lock()
	defer x.groupMu.Unlock()
	if l, ok := x.groupNames[v]; ok {
		return l
	}
	l := probe.OtherGroup
	if len(x.groupNames) < probe.MaxGroups {
		l = strings.ToValidUTF8(sanitize.Text(v), "?")
		x.groupNames[v] = l
	}
	return l
}

// Update sets the gauges from a snapshot and checks the SLOs over its
// window's figures (fig: the snapshot's window with the telemetry joined,
// so an energy objective reads what the dashboard and the reports read).
func (x *Exporter) Update(s load.Snapshot, fig slo.Figures) {
	x.window.Set(s.Window.Seconds())
	for _, m := range []struct {
		name string
		m    load.Metric
	}{{"ttft", load.TTFT}, {"tpot", load.TPOT}, {"itl", load.ITL}, {"e2e", load.E2E}} {
		d := s.Latency[m.m]
		for _, q := range windowQuantiles() {
			v := math.NaN()
			if d.Count > 0 {
				v = q.pick(d).Seconds()
			}
			x.windowQ.WithLabelValues(m.name, q.label).Set(v)
		}
	}
	// Never the run's figures, which a reset sets back to zero: a
	// Prometheus counter only goes up.
	x.flow.set(s.SentEver, s.IncompleteEver)
	x.flow.setArrivals(s.ScheduledEver, s.DroppedEver, s.Backlog)
	x.trace.set(s.Trace)
	x.steady.set(s.Steady)
	x.conc.Set(float64(s.Knobs.Concurrency))
	x.prompt.Set(float64(s.Knobs.PromptTokens))
	x.output.Set(float64(s.Knobs.OutputTokens))
	p := 0.0
	if s.Knobs.Paused {
		p = 1
	}
	x.paused.Set(p)
	for _, v := range slo.CheckAll(x.objectives, fig, "window") {
		held := 0.0
		if v.Held {
			held = 1
		}
		x.sloHeld.WithLabelValues(v.Expr).Set(held)
	}
}

// Handler serves /metrics.
func (x *Exporter) Handler() http.Handler { return Handler(x) }

// Handler serves the series of every exporter given on one /metrics (each
// with its own target label: see ForTarget).
func Handler(xs ...*Exporter) http.Handler {
	var g prometheus.Gatherers
	for _, x := range xs {
		g = append(g, x.reg)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return mux
}

// Listen opens addr for Serve; it fails at once on a bad or busy address.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return ln, nil
}

// Serve serves the exporter on ln until ctx ends.
func (x *Exporter) Serve(ctx context.Context, ln net.Listener) error { return Serve(ctx, ln, x) }

// Serve serves every exporter given on ln (see Handler) until ctx ends.
func Serve(ctx context.Context, ln net.Listener, xs ...*Exporter) error {
	hs := door.Server(Handler(xs...)) // open to anyone: bounded
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(door.Limit(ln)) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("metrics: %w", err)
	}
}

// flow collects every count of requests together: those finished by
// class (each as it is observed), and the sent and the incomplete of the
// snapshots. One scrape reads them under one lock, and the in-flight
// gauge is what the others leave, so sent = finished + incomplete + in
// flight in every scrape: a gauge and counters read apart were seen off
// by a request that moved between their reads.
//
// The open loop's arrivals are there too: every arrival scheduled, those
// waiting in the backlog for a free slot (--max-in-flight) and those
// dropped from it unsent when the run ended or the loop closed (late
// requests, which the reports' error rate counts as failed). The rest of
// the arrivals were sent, and are in the sent counter.
type flow struct {
	requests, sent, incomplete, inflight *prometheus.Desc
	arrivals, dropped, backlog           *prometheus.Desc

	mu       sync.Mutex
	s, inc   int64 // the newest snapshot's
	finished [probe.NumClasses]int64
	// arr and drop are running totals, waiting the newest snapshot's.
	arr, drop, waiting int64
}

func newFlow() *flow {
	return &flow{
		requests:   prometheus.NewDesc("infertop_requests_total", "Requests finished, by class (ok or the error class).", []string{"class"}, nil),
		sent:       prometheus.NewDesc("infertop_requests_sent_total", "Requests started: finished (infertop_requests_total), incomplete, or in flight.", nil, nil),
		incomplete: prometheus.NewDesc("infertop_requests_incomplete_total", "Requests still in flight at the end of the drain, cancelled.", nil, nil),
		inflight:   prometheus.NewDesc("infertop_in_flight_requests", "Requests sent and not yet finished.", nil, nil),
		arrivals: prometheus.NewDesc("infertop_arrivals_total",
			"Open loop: arrivals scheduled, the warm-up's included: sent, waiting in the backlog (infertop_backlog_requests), or dropped (infertop_arrivals_dropped_total).", nil, nil),
		dropped: prometheus.NewDesc("infertop_arrivals_dropped_total",
			"Open loop: arrivals dropped from the backlog unsent when the run ended or the loop closed: late requests, never sent.", nil, nil),
		backlog: prometheus.NewDesc("infertop_backlog_requests", "Open loop: arrivals waiting for a free slot (--max-in-flight), not yet sent.", nil, nil),
	}
}

// setArrivals takes a snapshot's open-loop counts: the arrivals and the
// dropped (running totals that only grow) and the backlog now.
func (f *flow) setArrivals(arrivals, dropped int64, backlog int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arr, f.drop, f.waiting = max(f.arr, arrivals), max(f.drop, dropped), int64(max(backlog, 0))
}

// set takes a snapshot's counts, each a running total that only grows.
func (f *flow) set(sent, incomplete int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.s, f.inc = max(f.s, sent), max(f.inc, incomplete)
}

// finish counts a request finished in class c.
func (f *flow) finish(c probe.ErrorClass) {
	if c < 0 || c >= probe.NumClasses {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished[c]++
}

// Describe is prometheus.Collector's.
func (f *flow) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.requests
	ch <- f.sent
	ch <- f.incomplete
	ch <- f.inflight
	ch <- f.arrivals
	ch <- f.dropped
	ch <- f.backlog
}

// Collect is prometheus.Collector's: every count under one lock. A
// request finished since the last snapshot was sent before it finished:
// sent is never below what finished or was cut.
func (f *flow) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	finished, inc := f.finished, f.inc
	var done int64
	for _, n := range finished {
		done += n
	}
	f.s = max(f.s, done+inc)
	sent := f.s
	arr, drop, waiting := f.arr, f.drop, f.waiting
	f.mu.Unlock()
	for _, c := range append([]probe.ErrorClass{probe.OK}, probe.FailureClasses()...) { // every class shows, at zero
		ch <- prometheus.MustNewConstMetric(f.requests, prometheus.CounterValue, float64(finished[c]), c.String())
	}
	ch <- prometheus.MustNewConstMetric(f.sent, prometheus.CounterValue, float64(sent))
	ch <- prometheus.MustNewConstMetric(f.incomplete, prometheus.CounterValue, float64(inc))
	ch <- prometheus.MustNewConstMetric(f.inflight, prometheus.GaugeValue, float64(sent-done-inc))
	ch <- prometheus.MustNewConstMetric(f.arrivals, prometheus.CounterValue, float64(arr))
	ch <- prometheus.MustNewConstMetric(f.dropped, prometheus.CounterValue, float64(drop))
	ch <- prometheus.MustNewConstMetric(f.backlog, prometheus.GaugeValue, float64(waiting))
}
