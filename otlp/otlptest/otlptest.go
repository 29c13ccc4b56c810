// Package otlptest is an OTLP/HTTP receiver for tests, as
// net/http/httptest is a server: it listens on 127.0.0.1, decodes the
// protobuf of /v1/metrics and /v1/traces (gzipped or not) with the
// protocol's own generated types (go.opentelemetry.io/proto/otlp), and
// keeps what it got, so a test holds what an exporter sent to what a
// collector would read. It can also answer every push with an error, or
// never answer, as a broken collector does.
package otlptest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds a push the receiver reads (decompressed).
const maxBody = 64 << 20

// Options say how the receiver answers.
type Options struct {
	// Status answers every push with this HTTP status (0: 200, taken).
	Status int
	// Hang never answers a push (until the test ends): a collector that
	// accepts connections and is stuck.
	Hang bool
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is its base, "http://127.0.0.1:PORT", as an exporter is given it.
	URL string

	opts    Options
	release chan struct{}

	mu      sync.Mutex
	pushes  int
	gzipped int
	auth    string
	metrics map[string]*Metric
	spans   []Span
	errs    []error
}

// Metric is one metric as the receiver last saw it: cumulative figures,
// so each attribute set's newest point.
type Metric struct {
	Name, Unit string
	// Points by their attribute set (Point.Key).
	Points map[string]Point
}

// Count is the sum of the points' counts: the observations of the
// metric, over every attribute set.
func (m Metric) Count() uint64 {
	var n uint64
	for _, p := range m.Points {
		n += p.Count
	}
	return n
}

// Point is a histogram's point.
type Point struct {
	Attrs  map[string]string
	Count  uint64
	Sum    float64
	Bounds []float64
	Time   uint64 // its time, Unix nanoseconds
}

// Key is the point's attribute set as one string, sorted: k=v,k=v.
func (p Point) Key() string { return key(p.Attrs) }

func key(attrs map[string]string) string {
	var kv []string
	for k, v := range attrs {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

// Span is one span received.
type Span struct {
	TraceID    [16]byte
	SpanID     [8]byte
	Parent     []byte
	Name       string
	Kind       tracepb.Span_SpanKind
	Start, End uint64 // Unix nanoseconds
	Attrs      map[string]string
	Error      bool // its status is an error
	Resource   map[string]string
}

// Start starts a receiver that the test's cleanup stops.
func Start(t testing.TB, o Options) *Receiver {
	t.Helper()
	r := &Receiver{opts: o, release: make(chan struct{}), metrics: map[string]*Metric{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(r.release) }) // runs first: a hung push lets go
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if r.opts.Hang {
		select {
		case <-r.release:
		case <-req.Context().Done():
		}
		return
	}
	err := r.read(req)
	r.mu.Lock()
	r.pushes++
	r.auth = req.Header.Get("Authorization")
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.mu.Unlock()
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	case r.opts.Status != 0 && r.opts.Status != http.StatusOK:
		http.Error(w, "otlptest: refused as asked", r.opts.Status)
	default:
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}
}

// read decodes one push and keeps it.
func (r *Receiver) read(req *http.Request) error {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return fmt.Errorf("content type %q, not application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer gz.Close()
		body = gz
		r.mu.Lock()
		r.gzipped++
		r.mu.Unlock()
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBody))
	if err != nil {
		return fmt.Errorf("the body: %w", err)
	}
	switch req.URL.Path {
	case "/v1/metrics":
		var m colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		r.keepMetrics(&m)
	case "/v1/traces":
		var s coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("traces: %w", err)
		}
		r.keepSpans(&s)
	default:
		return fmt.Errorf("path %q", req.URL.Path)
	}
	return nil
}

func (r *Receiver) keepMetrics(req *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				got := r.metrics[m.GetName()]
				if got == nil {
					got = &Metric{Name: m.GetName(), Unit: m.GetUnit(), Points: map[string]Point{}}
					r.metrics[m.GetName()] = got
				}
				h, ok := m.GetData().(*metricpb.Metric_Histogram)
				if !ok {
					continue
				}
				for _, dp := range h.Histogram.GetDataPoints() {
					p := Point{Attrs: attrs(dp.GetAttributes()), Count: dp.GetCount(), Sum: dp.GetSum(), Bounds: dp.GetExplicitBounds(), Time: dp.GetTimeUnixNano()}
					if old, ok := got.Points[p.Key()]; !ok || old.Time <= p.Time {
						got.Points[p.Key()] = p
					}
				}
			}
		}
	}
}

func (r *Receiver) keepSpans(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Parent: s.GetParentSpanId(), Name: s.GetName(), Kind: s.GetKind(), Start: s.GetStartTimeUnixNano(),
					End: s.GetEndTimeUnixNano(), Attrs: attrs(s.GetAttributes()), Resource: res,
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
				copy(sp.TraceID[:], s.GetTraceId())
				copy(sp.SpanID[:], s.GetSpanId())
				r.spans = append(r.spans, sp)
			}
		}
	}
}

// attrs are key-values as strings (ints, floats and booleans printed).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.GetStringValue()
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetDoubleValue())
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(v.GetBoolValue())
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Metrics are the metrics received so far, by name.
func (r *Receiver) Metrics() map[string]Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Metric, len(r.metrics))
	for name, m := range r.metrics {
		c := *m
		c.Points = make(map[string]Point, len(m.Points))
		for k, p := range m.Points {
			c.Points[k] = p
		}
		out[name] = c
	}
	return out
}

// Spans are the spans received so far, in order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Pushes is how many pushes were read (answered or refused), and how many
// of them were gzipped.
func (r *Receiver) Pushes() (n, gzipped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pushes, r.gzipped
}

// Auth is the Authorization header of the last push read.
func (r *Receiver) Auth() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.auth
}

// Errs are the pushes that could not be decoded.
func (r *Receiver) Errs() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// Nanos is t in Unix nanoseconds, as the spans' times are.
func Nanos(t time.Time) uint64 { return uint64(t.UnixNano()) }
