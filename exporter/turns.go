package exporter

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infertop/infertop/load"
)

// sessionSeries are a sessions run's (--sessions): each turn's TTFT and
// the prompt tokens its server's prefix cache held, labelled
// turn="1".."K" (K the turns configured, at most load.MaxTurns, so the
// label is bounded), and the time of whole sessions.
type sessionSeries struct {
	ttft             *prometheus.HistogramVec
	cached, cachedOf *prometheus.CounterVec
	session          prometheus.Histogram
	labels           [load.MaxTurns + 1]string // turn's label, made once
}

func newSessionSeries() *sessionSeries {
	s := &sessionSeries{
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "infertop_turn_ttft_seconds",
			Help:    "Time to the first output-bearing message by a session's turn (--sessions), per completed request: turn 1 against turn 5 is what a prefix cache changes.",
			Buckets: ttftBuckets(), NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour}, []string{"turn"}),
		cached: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "infertop_turn_cached_prompt_tokens_total",
			Help: "Prompt tokens the server's prefix cache held by a session's turn (--sessions), by its own count, of infertop_turn_prompt_tokens_cache_known_total: a warm cache's hit rate rises with the turn."}, []string{"turn"}),
		cachedOf: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "infertop_turn_prompt_tokens_cache_known_total",
			Help: "Prompt tokens of a session's turn's completed requests whose server said how many its prefix cache held."}, []string{"turn"}),
		session: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "infertop_session_seconds",
			Help:    "A whole session's time (--sessions): its first turn's start to its last answer, think times in it; its count is the sessions that ran every turn.",
			Buckets: sessionBuckets(), NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour}),
	}
	for i := 1; i <= load.MaxTurns; i++ {
		s.labels[i] = strconv.Itoa(i)
	}
	return s
}

// sessionBuckets reach further than a request's: a session holds several
// answers and the think times between them.
func sessionBuckets() []float64 {
	return []float64{.1, .25, .5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600}
}

// observe records a finished request of a session: its turn's TTFT (a
// completed one), and the session's time when it ended one.
func (s *sessionSeries) observe(r load.Record) {
	if r.Turn < 1 || r.Turn > load.MaxTurns {
		return
	}
	if r.OK() && r.HasTTFT {
		s.ttft.WithLabelValues(s.labels[r.Turn]).Observe(r.TTFT.Seconds())
	}
	if cached, of, ok := load.PromptCached(&r.Result); ok {
		s.cached.WithLabelValues(s.labels[r.Turn]).Add(float64(cached))
		s.cachedOf.WithLabelValues(s.labels[r.Turn]).Add(float64(of))
	}
	if r.Session > 0 {
		s.session.Observe(r.Session.Seconds())
	}
}

// traceSeries are a replay's figures (--trace), shown only during one:
// how far behind it is and has been, where it is, what it has sent.
type traceSeries struct {
	behind, maxBehind, position, span, speed, falling, arrivals *prometheus.Desc

	mu sync.Mutex
	st load.TraceStatus
}

func newTraceSeries() *traceSeries {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &traceSeries{
		behind:    d("infertop_trace_behind_seconds", "How late the replay (--trace) is now: the oldest arrival due and not yet sent."),
		maxBehind: d("infertop_trace_behind_max_seconds", "The most the replay has been behind since its start (a reset does not clear it)."),
		position:  d("infertop_trace_position_seconds", "The trace time the replay has reached in this pass."),
		span:      d("infertop_trace_span_seconds", "The trace's length (of its window)."),
		speed:     d("infertop_trace_speed", "The replay's speed (1: the trace's own time)."),
		falling:   d("infertop_trace_falling_behind", "1 while the replay is more than 100ms behind its arrivals."),
		arrivals:  d("infertop_trace_arrivals_total", "Arrivals the replay has sent, every pass."),
	}
}

func (t *traceSeries) set(s load.TraceStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st = s
}

// Describe is prometheus.Collector's.
func (t *traceSeries) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{t.behind, t.maxBehind, t.position, t.span, t.speed, t.falling, t.arrivals} {
		ch <- d
	}
}

// Collect is prometheus.Collector's: nothing unless a replay runs.
func (t *traceSeries) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	s := t.st
	t.mu.Unlock()
	if !s.On {
		return
	}
	falling := 0.0
	if s.FallingBehind() {
		falling = 1
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(t.behind, s.Behind.Seconds())
	gauge(t.maxBehind, s.MaxBehind.Seconds())
	gauge(t.position, s.Position.Seconds())
	gauge(t.span, s.Span.Seconds())
	gauge(t.speed, s.Speed)
	gauge(t.falling, falling)
	ch <- prometheus.MustNewConstMetric(t.arrivals, prometheus.CounterValue, float64(s.Pass*s.Total+s.Sent))
}
