// Package otlp pushes a run's requests to an OpenTelemetry collector
// over OTLP/HTTP (protobuf), with the official Go SDK: every finished
// load.Record becomes the GenAI semantic conventions' client metrics
// (gen_ai.client.operation.duration, gen_ai.client.token.usage,
// gen_ai.client.operation.time_to_first_chunk and
// .time_per_output_chunk) and, on request, a client span whose trace and
// span ids are those of the traceparent the request carried, so that a
// server which joins its span to that header (vLLM does) shows the two
// as one trace.
//
// The collector is a side channel: a push that fails is counted, never a
// failed request, and the last push at the end is bounded, so a dead
// collector never holds a run's exit. What went wrong is said once per
// kind, at Shutdown.
package otlp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// Config says where a run's telemetry goes.
type Config struct {
	// URL is the collector's OTLP/HTTP base, such as
	// http://127.0.0.1:4318: metrics go to its /v1/metrics, spans to its
	// /v1/traces (empty: nothing is pushed). Credentials in it are sent
	// as HTTP basic authentication; other headers come from
	// OTEL_EXPORTER_OTLP_HEADERS, read through Getenv.
	URL string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// Spans pushes a span per request as well.
	Spans bool
	// Interval is the time between metric pushes (0: DefaultInterval).
	Interval time.Duration
	// Shutdown bounds the last push at the end (0: DefaultShutdown).
	Shutdown time.Duration
}

// DefaultInterval is the time between two metric pushes: often enough for
// a live board, rarely enough to cost nothing.
const DefaultInterval = 10 * time.Second

// DefaultShutdown bounds the last push: a collector that does not answer
// within it loses the run's last figures, and the run ends anyway.
const DefaultShutdown = 5 * time.Second

// exportTimeout bounds one push while the run goes on, its retries of a
// collector's 429, 502, 503 and 504 included: a push missed is followed by
// the next interval's, which carries the same cumulative figures.
const exportTimeout = 5 * time.Second

// Validate reports what is wrong with c, in one line and with no secret
// of its URL.
func (c Config) Validate() error {
	switch {
	case c.URL == "" && c.Spans:
		return errors.New("spans need a collector's URL")
	case c.Interval < 0 || c.Shutdown < 0:
		return errors.New("a negative interval")
	case c.URL == "":
		return nil
	}
	_, err := parseURL(c.URL, c.getenv())
	return err
}

// getenv is Getenv, or os.Getenv.
func (c Config) getenv() func(string) string {
	if c.Getenv != nil {
		return c.Getenv
	}
	return os.Getenv
}

// Target is what the requests go to, as the semantic conventions name it.
type Target struct {
	// API is the protocol; Endpoint the URL requests are sent to (the
	// server's address and port, and for Ollama its operation).
	API      probe.Kind
	Endpoint string
	// Model is the model asked for, unless a request names its own.
	Model string
	// Stream is whether the answers are streamed (gen_ai.request.stream).
	Stream bool
	// Version is infertop's (service.version).
	Version string
	// Name is the target's name in a comparison ("baseline", "canary"),
	// the attribute infertop.target on every metric and span, as the
	// Prometheus exporter's target label: both sides push under the same
	// names ("": a run of one endpoint, no attribute).
	Name string
}

// Exporter turns finished requests into OTLP metrics and spans. Observe
// may be called from any goroutine.
type Exporter struct {
	mp       *sdkmetric.MeterProvider
	tp       *sdktrace.TracerProvider // nil: no spans
	tracer   trace.Tracer
	duration genaiconv.ClientOperationDuration
	tokens   genaiconv.ClientTokenUsage
	ttfc     genaiconv.ClientOperationTimeToFirstChunk
	tpoc     genaiconv.ClientOperationTimePerOutputChunk

	op       genaiconv.OperationNameAttr
	provider genaiconv.ProviderNameAttr
	embeds   bool
	stream   bool
	model    string
	host     string
	port     int
	name     string // Target.Name

	shown    string   // the URL as the notes show it
	secrets  []string // the URL's password and the headers' values, kept out of the notes
	shutdown time.Duration
	metrics  *failures
	spans    *failures

	mu   sync.Mutex
	sets map[string]*sets // by model: a mix has a few
	once sync.Once
}

// sets are the attribute sets of a model's successful requests, as the
// options a record takes, built once: a set is sorted and hashed, an
// option boxed, and a long answer records hundreds of chunks.
type sets struct{ call, in, out []metric.RecordOption }

// New starts pushing to cfg.URL what Observe is given about requests to t.
// Nothing is sent before the first interval (or Shutdown).
func New(cfg Config, t Target) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ep, err := parseURL(cfg.URL, cfg.getenv())
	if err != nil {
		return nil, err
	}
	if ep.client, err = httpClient(cfg.getenv()); err != nil {
		return nil, err
	}
	x := &Exporter{
		op: operation(t.API, ""), provider: provider(t.API), embeds: t.API.Embeds(), stream: t.Stream, model: t.Model,
		name: t.Name, shown: ep.shown, secrets: ep.secrets, shutdown: cmp.Or(cfg.Shutdown, DefaultShutdown),
		metrics: &failures{what: "metric"}, spans: &failures{what: "span"}, sets: map[string]*sets{},
	}
	if host, port, path, ok := server(t.Endpoint); ok {
		x.host, x.port, x.op = host, port, operation(t.API, path)
	}
	res, err := resource.New(context.Background(),
		resource.WithAttributes(semconv.ServiceName("infertop"), semconv.ServiceVersion(t.Version), semconv.ServiceInstanceID(instanceID())),
		resource.WithFromEnv()) // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	if err != nil {
		return nil, fmt.Errorf("the resource: %w", err)
	}
	if err := x.startMetrics(ep, cfg, res); err != nil {
		return nil, err
	}
	if cfg.Spans {
		if err := x.startSpans(ep, res); err != nil {
			x.Shutdown(io.Discard)
			return nil, err
		}
	}
	return x, nil
}

// startMetrics builds the meter provider and the four instruments.
func (x *Exporter) startMetrics(ep endpoint, cfg Config, res *resource.Resource) error {
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(ep.metrics), otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression), otlpmetrichttp.WithHTTPClient(ep.client),
		otlpmetrichttp.WithTimeout(exportTimeout), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: 2 * time.Second, MaxElapsedTime: exportTimeout})}
	if ep.headers != nil {
		opts = append(opts, otlpmetrichttp.WithHeaders(ep.headers))
	}
	exp, err := otlpmetrichttp.New(context.Background(), opts...)
	if err != nil {
		return fmt.Errorf("the metrics' exporter: %w", err)
	}
	reader := sdkmetric.NewPeriodicReader(metricExporter{exp, x.metrics},
		sdkmetric.WithInterval(cmp.Or(cfg.Interval, DefaultInterval)), sdkmetric.WithTimeout(exportTimeout))
	x.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	m := x.mp.Meter("github.com/infertop/infertop/otlp")
	seconds := metric.WithExplicitBucketBoundaries(secondsBuckets...)
	x.duration, err = genaiconv.NewClientOperationDuration(m, seconds)
	if err == nil {
		x.tokens, err = genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	}
	if err == nil {
		x.ttfc, err = genaiconv.NewClientOperationTimeToFirstChunk(m, seconds)
	}
	if err == nil {
		x.tpoc, err = genaiconv.NewClientOperationTimePerOutputChunk(m, seconds)
	}
	if err != nil {
		return fmt.Errorf("the instruments: %w", err)
	}
	return nil
}

// startSpans builds the tracer provider: every span sampled, its ids the
// request's own (ids), batched with a bounded queue that drops rather
// than waits, so the engine never waits on a collector.
func (x *Exporter) startSpans(ep endpoint, res *resource.Resource) error {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(ep.traces), otlptracehttp.WithCompression(otlptracehttp.GzipCompression), otlptracehttp.WithHTTPClient(ep.client),
		otlptracehttp.WithTimeout(exportTimeout), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: 2 * time.Second, MaxElapsedTime: exportTimeout})}
	if ep.headers != nil {
		opts = append(opts, otlptracehttp.WithHeaders(ep.headers))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return fmt.Errorf("the spans' exporter: %w", err)
	}
	x.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithIDGenerator(ids{}),
		sdktrace.WithBatcher(spanExporter{exp, x.spans}, sdktrace.WithExportTimeout(exportTimeout), sdktrace.WithMaxQueueSize(spanQueue)))
	x.tracer = x.tp.Tracer("github.com/infertop/infertop/otlp")
	return nil
}

// spanQueue is how many finished spans wait for a push at most (about a
// kilobyte each); past it, spans are dropped.
const spanQueue = 8192

// Observe records one finished request (load.Config.OnResult).
func (x *Exporter) Observe(r load.Record) {
	ctx := context.Background()
	model := cmp.Or(r.Model, x.model)
	if r.OK() {
		s := x.setsOf(model)
		x.duration.Inst().Record(ctx, r.E2E.Seconds(), s.call...)
		in := r.InputTokens
		if r.InputEstimated {
			in = r.PromptTokens // the prompt's length as asked for, as the exporter counts it
		}
		x.tokens.Inst().Record(ctx, int64(in), s.in...)
		if !x.embeds {
			x.tokens.Inst().Record(ctx, int64(r.OutputTokens), s.out...)
		}
		if r.HasTTFT { // streamed: the chunks' metrics are for streams only
			x.ttfc.Inst().Record(ctx, r.TTFT.Seconds(), s.call...)
			tpoc := x.tpoc.Inst()
			r.ITLs(func(d time.Duration) { tpoc.Record(ctx, d.Seconds(), s.call...) })
		}
	} else {
		kv := append(x.common(model), semconv.ErrorTypeKey.String(errorType(r.Result)))
		x.duration.Record(ctx, r.E2E.Seconds(), x.op, x.provider, kv...)
	}
	if x.tracer != nil {
		x.span(r, model)
	}
}

// setsOf are model's attribute sets, built on first use.
func (x *Exporter) setsOf(model string) *sets {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s := x.sets[model]; s != nil {
		return s
	}
	kv := append(x.common(model), semconv.GenAIOperationNameKey.String(string(x.op)), semconv.GenAIProviderNameKey.String(string(x.provider)))
	tok := func(t genaiconv.TokenTypeAttr) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(kv[:len(kv):len(kv)], semconv.GenAITokenTypeKey.String(string(t)))...))}
	}
	s := &sets{call: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kv...))}, in: tok(genaiconv.TokenTypeInput), out: tok(genaiconv.TokenTypeOutput)}
	x.sets[model] = s
	return s
}

// span records r as a client span from its send to its end, with the ids
// its traceparent carried (see ids).
func (x *Exporter) span(r load.Record, model string) {
	ctx := context.WithValue(context.Background(), idsKey{}, r.Trace)
	kv := append(x.common(model), semconv.GenAIOperationNameKey.String(string(x.op)),
		semconv.GenAIProviderNameKey.String(string(x.provider)), semconv.GenAIRequestStream(x.stream))
	name := string(x.op)
	if model != "" {
		name += " " + model // the conventions' "{gen_ai.operation.name} {gen_ai.request.model}"
	}
	_, sp := x.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(r.Start), trace.WithAttributes(kv...))
	if r.Status > 0 {
		sp.SetAttributes(semconv.HTTPResponseStatusCode(r.Status))
	}
	if r.OK() {
		if !r.InputEstimated {
			sp.SetAttributes(semconv.GenAIUsageInputTokens(r.InputTokens))
		}
		if !x.embeds {
			sp.SetAttributes(semconv.GenAIUsageOutputTokens(r.OutputTokens))
		}
		if r.HasTTFT {
			sp.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(r.TTFT.Seconds()))
		}
		if id := responseID(r.ID); id != "" {
			sp.SetAttributes(semconv.GenAIResponseID(id))
		}
	} else {
		et := errorType(r.Result)
		sp.SetAttributes(semconv.ErrorTypeKey.String(et))
		sp.SetStatus(codes.Error, et)
	}
	sp.End(trace.WithTimestamp(r.Start.Add(r.E2E)))
}

// Shutdown pushes what is left and stops, within Config.Shutdown, then
// writes to notes one line per kind of failure: the pushes that failed
// (with the first error) and a last push cut short. It may be called more
// than once; the later calls do nothing.
func (x *Exporter) Shutdown(notes io.Writer) {
	x.once.Do(func() { x.stop(notes) })
}

func (x *Exporter) stop(notes io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), x.shutdown)
	defer cancel()
	var (
		wg         sync.WaitGroup
		mErr, sErr error
	)
	wg.Go(func() { defer crash.Recover(); mErr = x.mp.Shutdown(ctx) })
	if x.tp != nil {
		wg.Go(func() { defer crash.Recover(); sErr = x.tp.Shutdown(ctx) })
	}
	wg.Wait()
	mn, mok := x.metrics.report(notes, x.shown, x.secrets)
	sn, sok := x.spans.report(notes, x.shown, x.secrets)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		fmt.Fprintf(notes, "infertop: --otlp: the last push to %s did not end within %v; the run's last figures there are lost\n", x.shown, x.shutdown)
		return
	}
	if err := errors.Join(mErr, sErr); err != nil {
		fmt.Fprintf(notes, "infertop: --otlp: stopping the pushes to %s: %s\n", x.shown, clean(err, x.secrets))
		return
	}
	// A side channel that worked says so once, so that a person who
	// asked for it knows the collector has the run.
	if mok && sok && mn > 0 {
		pushes := func(n int) string {
			if n == 1 {
				return "1 push"
			}
			return fmt.Sprintf("%d pushes", n)
		}
		spans := ""
		if x.tp != nil {
			spans = " and " + pushes(sn) + " of spans"
		}
		fmt.Fprintf(notes, "infertop: --otlp: %s of metrics%s to %s, every one taken\n", pushes(mn), spans, x.shown)
	}
}

// instanceID is a random service.instance.id: two infertops pushing to one
// collector at once are two instances.
func instanceID() string {
	return strconv.FormatUint(rand.Uint64(), 16) + strconv.FormatUint(rand.Uint64(), 16)
}
