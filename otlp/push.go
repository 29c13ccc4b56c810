package otlp

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
)

// endpoint is a collector's URL taken apart for the exporters, which
// keep only its host and path.
type endpoint struct {
	metrics, traces string            // the signals' URLs, without credentials
	headers         map[string]string // basic authentication from the URL's user (nil: none)
	shown           string            // the URL as a note shows it
	secret          string            // its password
}

// parseURL reads a collector's base URL (a full signal URL, ending in
// /v1/metrics or /v1/traces, is taken for its base). Its errors never
// show the URL's credentials.
func parseURL(raw string) (endpoint, error) {
	shown := probe.RedactURL(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil: // its text would quote the URL whole
		return endpoint{}, fmt.Errorf("%q is not a URL", shown)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return endpoint{}, fmt.Errorf("want a collector's http:// or https:// address, such as http://127.0.0.1:4318; got %q", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return endpoint{}, fmt.Errorf("%q: the exporters send no query; pass a token in OTEL_EXPORTER_OTLP_HEADERS", shown)
	}
	ep := endpoint{shown: shown}
	if u.User != nil {
		pw, _ := u.User.Password()
		ep.secret = pw
		ep.headers = map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))}
		u.User = nil
	}
	base := strings.TrimSuffix(u.Path, "/")
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/v1/metrics"), "/v1/traces")
	u.Path, u.RawPath = base+"/v1/metrics", ""
	ep.metrics = u.String()
	u.Path = base + "/v1/traces"
	ep.traces = u.String()
	return ep, nil
}

// failures counts one kind's pushes and keeps the first error, to be said
// once at the end: a note per failed push would flood a long run's
// output, and a dashboard's screen has no room for them.
type failures struct {
	what string

	mu           sync.Mutex
	pushes, lost int
	first        error
}

func (f *failures) note(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushes++
	if err != nil {
		f.lost++
		if f.first == nil {
			f.first = err
		}
	}
}

// report writes one line when a push failed.
func (f *failures) report(w io.Writer, shown, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost > 0 {
		fmt.Fprintf(w, "infertop: --otlp: %d of %d %s pushes to %s failed; the first: %s\n", f.lost, f.pushes, f.what, shown, clean(f.first, secret))
	}
}

// clean is an exporter's error as a line of a note: it can quote the
// collector's answer, which is untrusted text, and the URL.
func clean(err error, secret string) string {
	return probe.Redact(sanitize.Short(err.Error(), 300), 300, secret)
}

// metricExporter passes the pushes on and counts their failures. It
// reports none to the SDK: the SDK would hand them to OpenTelemetry's
// global error handler, which prints on stderr, under a dashboard too.
type metricExporter struct {
	sdkmetric.Exporter
	f *failures
}

func (e metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.f.note(e.Exporter.Export(ctx, rm))
	return nil
}

// spanExporter is metricExporter's counterpart for spans.
type spanExporter struct {
	sdktrace.SpanExporter
	f *failures
}

func (e spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.f.note(e.SpanExporter.ExportSpans(ctx, spans))
	return nil
}

// idsKey carries a request's trace context to ids.
type idsKey struct{}

// ids gives a request's span the trace id and span id its traceparent
// carried (probe.TraceContext), so the server's span, whose parent that
// header names, is this span's child. A request sent without one (the
// user's own headers took its place) gets random ids.
type ids struct{}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if t, ok := ctx.Value(idsKey{}).(probe.TraceContext); ok && !t.IsZero() {
		return trace.TraceID(t.TraceID), trace.SpanID(t.SpanID)
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, ids{}.NewSpanID(ctx, tid)
}

func (ids) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// responseID is the server's response id as a span attribute: the
// server's text, so sanitised and cut, and dropped when nothing is left.
func responseID(id string) string { return sanitize.Short(id, 128) }
