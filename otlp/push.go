package otlp

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
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
	headers         map[string]string // OTEL_EXPORTER_OTLP_HEADERS' and the URL user's basic authentication (nil: none)
	shown           string            // the URL as a note shows it
	secrets         []string          // its password and the headers' values, kept out of the notes
	client          *http.Client      // both exporters' (httpClient), set by New
}

// parseURL reads a collector's base URL (a full signal URL, ending in
// /v1/metrics or /v1/traces, is taken for its base), with the headers
// the environment gives (getenv: OTEL_EXPORTER_OTLP_HEADERS, see
// envHeaders). Its errors never show the URL's credentials.
func parseURL(raw string, getenv func(string) string) (endpoint, error) {
	shown := probe.RedactURL(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "": // err's text would quote the URL whole
		return endpoint{}, fmt.Errorf("want a collector's http:// or https:// address, such as http://127.0.0.1:4318; got %q", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return endpoint{}, fmt.Errorf("%q: the exporters send no query; pass a token in OTEL_EXPORTER_OTLP_HEADERS", shown)
	}
	ep := endpoint{shown: shown}
	// The SDK reads OTEL_EXPORTER_OTLP_HEADERS only when given no headers
	// of its own: read here and merged, the URL's user joins them rather
	// than silently replacing them.
	ep.headers = envHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	for _, v := range ep.headers {
		ep.secrets = append(ep.secrets, v)
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		ep.secrets = append(ep.secrets, pw)
		if ep.headers == nil {
			ep.headers = map[string]string{}
		}
		ep.headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
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

// envHeaders reads headers as OTEL_EXPORTER_OTLP_HEADERS gives them:
// key=value pairs separated by commas, each value percent-encoded (the
// OpenTelemetry exporter specification). A pair that does not read is
// left out; nil for none.
func envHeaders(v string) map[string]string {
	var out map[string]string
	for pair := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		if dec, err := url.PathUnescape(strings.TrimSpace(val)); err == nil {
			val = dec
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = strings.TrimSpace(val)
	}
	return out
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

// report writes one line when a push failed; ok is false then.
func (f *failures) report(w io.Writer, shown string, secrets []string) (pushes int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost > 0 {
		fmt.Fprintf(w, "infertop: --otlp: %d of %d %s pushes to %s failed; the first: %s\n", f.lost, f.pushes, f.what, shown, clean(f.first, secrets))
	}
	return f.pushes, f.lost == 0
}

// clean is an exporter's error as a line of a note: it can quote the
// collector's answer, which is untrusted text, and the URL. The secrets
// go first, then the cut: cut first, a secret across the cut would leave
// its first part.
func clean(err error, secrets []string) string {
	return sanitize.Short(probe.Redact(err.Error(), 0, secrets...), 300)
}

// metricExporter passes the pushes on and counts their failures. It
// reports none to the SDK: the SDK would hand them to OpenTelemetry's
// global error handler, which prints on stderr, under a dashboard too.
type metricExporter struct {
	sdkmetric.Exporter
	f *failures
}

// Export pushes rm and counts the push; it never fails the SDK's reader.
func (e metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.f.note(e.Exporter.Export(ctx, rm))
	return nil
}

// spanExporter is metricExporter's counterpart for spans.
type spanExporter struct {
	sdktrace.SpanExporter
	f *failures
}

// ExportSpans pushes spans and counts the push, as Export does.
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

// NewIDs is a root span's ids: the request's trace context's.
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
