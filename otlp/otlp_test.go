package otlp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/otlp/otlptest"
	"github.com/infertop/infertop/probe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// record is request i: sent at t0+i s, its first chunk after 20 ms and
// three more 20 ms apart, ended at 80 ms; class and status say how it
// ended.
func record(i int, class probe.ErrorClass, status int) load.Record {
	start := t0.Add(time.Duration(i) * time.Second)
	r := load.Record{Result: probe.Result{Start: start, TTFT: 20 * time.Millisecond, HasTTFT: true, E2E: 80 * time.Millisecond,
		InputTokens: 10, OutputTokens: 4, Messages: 4, Status: status, Class: class, ID: "chatcmpl-\x1b[31m" + string(rune('a'+i)),
		Trace: probe.NewTraceContext(uint64(i+1), 0x5eed, uint64(i+100))}}
	r.Live = &probe.Live{Origin: t0}
	r.Live.Replay(start, 20*time.Millisecond, 40*time.Millisecond, 60*time.Millisecond, 80*time.Millisecond)
	return r
}

// sorted is an attribute set's key, k=v pairs, sorted as otlptest's.
func sorted(kv string) string {
	s := strings.Split(kv, ",")
	slices.Sort(s)
	return strings.Join(s, ",")
}

func target() Target {
	return Target{API: probe.OpenAIChat, Endpoint: "http://127.0.0.1:8000/v1/chat/completions", Model: "tiny", Stream: true, Version: "test"}
}

// TestMetricsAndSpans: five requests answered and two failed reach the
// receiver as the four GenAI client metrics, with the conventions'
// names, units, attributes and bucket boundaries, and as a client span
// each with the ids of the request's traceparent.
func TestMetricsAndSpans(t *testing.T) {
	rcv := otlptest.Start(t, otlptest.Options{})
	x, err := New(Config{URL: rcv.URL, Spans: true, Interval: time.Hour}, target())
	if err != nil {
		t.Fatal(err)
	}
	var recs []load.Record
	for i := range 5 {
		recs = append(recs, record(i, probe.OK, 200))
	}
	recs = append(recs, record(5, probe.HTTP5xx, 500), record(6, probe.Timeout, 0))
	for _, r := range recs {
		x.Observe(r)
	}
	var notes strings.Builder
	x.Shutdown(&notes) // the last push: everything, at once
	if want := "infertop: --otlp: 1 push of metrics and 1 push of spans to " + rcv.URL + ", every one taken\n"; notes.String() != want {
		t.Errorf("notes: %q, want %q", notes.String(), want)
	}
	if errs := rcv.Errs(); len(errs) > 0 {
		t.Fatalf("the receiver could not read: %v", errs)
	}
	if n, gz := rcv.Pushes(); n == 0 || gz != n {
		t.Errorf("%d pushes, %d gzipped", n, gz)
	}
	ms := rcv.Metrics()
	common := "gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.request.model=tiny,server.address=127.0.0.1,server.port=8000"
	for _, c := range []struct {
		name, unit string
		bounds     []float64
		points     map[string]uint64 // count by attribute set
		sum        float64           // over every point
	}{
		{"gen_ai.client.operation.duration", "s", secondsBuckets, map[string]uint64{
			common: 5, "error.type=500," + common: 1, "error.type=timeout," + common: 1}, 7 * 0.08},
		{"gen_ai.client.token.usage", "{token}", tokenBuckets, map[string]uint64{
			sorted(common + ",gen_ai.token.type=input"): 5, sorted(common + ",gen_ai.token.type=output"): 5}, 5*10 + 5*4},
		{"gen_ai.client.operation.time_to_first_chunk", "s", secondsBuckets, map[string]uint64{common: 5}, 5 * 0.02},
		{"gen_ai.client.operation.time_per_output_chunk", "s", secondsBuckets, map[string]uint64{common: 15}, 15 * 0.02},
	} {
		m, ok := ms[c.name]
		if !ok {
			t.Errorf("%s: not received (got %v)", c.name, slices.Collect(func(yield func(string) bool) {
				for k := range ms {
					yield(k)
				}
			}))
			continue
		}
		if m.Unit != c.unit {
			t.Errorf("%s: unit %q, want %q", c.name, m.Unit, c.unit)
		}
		var sum float64
		for k, p := range m.Points {
			if want, ok := c.points[k]; !ok || p.Count != want {
				t.Errorf("%s{%s}: count %d, want %d", c.name, k, p.Count, want)
			}
			if !slices.Equal(p.Bounds, c.bounds) {
				t.Errorf("%s: bounds %v, want %v", c.name, p.Bounds, c.bounds)
			}
			sum += p.Sum
		}
		if len(m.Points) != len(c.points) || sum < c.sum-1e-9 || sum > c.sum+1e-9 {
			t.Errorf("%s: %d points summing to %v, want %d summing to %v", c.name, len(m.Points), sum, len(c.points), c.sum)
		}
	}

	spans := rcv.Spans()
	if len(spans) != len(recs) {
		t.Fatalf("%d spans, want %d", len(spans), len(recs))
	}
	slices.SortFunc(spans, func(a, b otlptest.Span) int { return int(int64(a.Start) - int64(b.Start)) })
	for i, sp := range spans {
		r := recs[i]
		if sp.TraceID != r.Trace.TraceID || sp.SpanID != r.Trace.SpanID || len(sp.Parent) != 0 {
			t.Errorf("span %d: trace %x span %x parent %x, want the traceparent's %x %x", i, sp.TraceID, sp.SpanID, sp.Parent, r.Trace.TraceID, r.Trace.SpanID)
		}
		if sp.Kind != tracepb.Span_SPAN_KIND_CLIENT || sp.Name != "chat tiny" {
			t.Errorf("span %d: kind %v name %q", i, sp.Kind, sp.Name)
		}
		if sp.Start != otlptest.Nanos(r.Start) || sp.End != otlptest.Nanos(r.Start.Add(r.E2E)) {
			t.Errorf("span %d: %d..%d, want the request's %d..%d", i, sp.Start, sp.End, otlptest.Nanos(r.Start), otlptest.Nanos(r.Start.Add(r.E2E)))
		}
		wantErr := map[int]string{5: "500", 6: "timeout"}[i]
		if sp.Error != (wantErr != "") || sp.Attrs["error.type"] != wantErr {
			t.Errorf("span %d: error %v, error.type %q, want %q", i, sp.Error, sp.Attrs["error.type"], wantErr)
		}
		if wantErr == "" && (sp.Attrs["gen_ai.usage.output_tokens"] != "4" || sp.Attrs["gen_ai.response.id"] != `chatcmpl-\x1b[31m`+string(rune('a'+i))) {
			t.Errorf("span %d: attributes %v", i, sp.Attrs)
		}
		if sp.Resource["service.name"] != "infertop" || sp.Resource["service.version"] != "test" {
			t.Errorf("span %d: resource %v", i, sp.Resource)
		}
	}
}

// TestTargetName: a comparison's side names itself on every metric point
// and span (infertop.target), so both sides' pushes stay apart.
func TestTargetName(t *testing.T) {
	rcv := otlptest.Start(t, otlptest.Options{})
	tg := target()
	tg.Name = "canary"
	x, err := New(Config{URL: rcv.URL, Spans: true, Interval: time.Hour}, tg)
	if err != nil {
		t.Fatal(err)
	}
	x.Observe(record(0, probe.OK, 200))
	x.Shutdown(io.Discard)
	spans := rcv.Spans()
	if len(spans) != 1 || spans[0].Attrs[TargetAttribute] != "canary" {
		t.Errorf("spans %+v", spans)
	}
	n := 0
	for _, m := range rcv.Metrics() {
		for _, p := range m.Points {
			if n++; p.Attrs[TargetAttribute] != "canary" {
				t.Errorf("%s: %v", m.Name, p.Attrs)
			}
		}
	}
	if n == 0 {
		t.Error("no metric point")
	}
}

// TestURL: a collector's URL is its base; credentials in it are sent as
// basic authentication and never shown; what the exporters cannot send
// is refused in one line.
func TestURL(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "X-Tok=hdr%2Csecret99, bad-pair ,X-Team=infra"}
	ep, err := parseURL("https://me:s3cr3t-pw@collector.example:4318/otel/", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// The environment's headers join the URL's user, and are secrets too.
	if ep.headers["X-Tok"] != "hdr,secret99" || ep.headers["X-Team"] != "infra" || len(ep.headers) != 3 {
		t.Errorf("headers with the environment's: %v", ep.headers)
	}
	echo := errors.New(strings.Repeat("A", 290) + " the collector said: X-Tok=hdr,secret99 and s3cr3t-pw")
	if c := clean(echo, ep.secrets); strings.Contains(c, "secret99") || strings.Contains(c, "s3cr3t") || strings.Contains(c, "hdr,") {
		t.Errorf("a note quoting the secrets: %q", c)
	}
	straddle := errors.New(strings.Repeat("A", 294) + " s3cr3t-pw")
	if c := clean(straddle, ep.secrets); strings.Contains(c, "s3cr") {
		t.Errorf("a secret across the cut left its start: %q", c)
	}
	if ep.metrics != "https://collector.example:4318/otel/v1/metrics" || ep.traces != "https://collector.example:4318/otel/v1/traces" {
		t.Errorf("metrics %s, traces %s", ep.metrics, ep.traces)
	}
	if ep.headers["Authorization"] != "Basic "+base64.StdEncoding.EncodeToString([]byte("me:s3cr3t-pw")) || strings.Contains(ep.shown, "s3cr3t") {
		t.Errorf("headers %v, shown %s", ep.headers, ep.shown)
	}
	if ep, _ := parseURL("http://127.0.0.1:4318/v1/traces", func(string) string { return "" }); ep.metrics != "http://127.0.0.1:4318/v1/metrics" {
		t.Errorf("a signal's URL as the base: %s", ep.metrics)
	}
	for _, c := range []Config{
		{URL: "127.0.0.1:4318"},
		{URL: "ftp://collector:4318"},
		{URL: "http://"},
		{URL: "http://me:s3cr3t-pw@collector:4318/?api_key=s3cr3t-key"},
		{URL: "http://me:s3cr3t-pw@[::1"},
		{Spans: true},
		{URL: "http://collector:4318", Interval: -time.Second},
	} {
		err := c.Validate()
		if err == nil {
			t.Errorf("%+v: taken", c)
			continue
		}
		if s := err.Error(); strings.Contains(s, "s3cr3t") || strings.Contains(s, "\n") {
			t.Errorf("%+v: %q", c, s)
		}
		// A URL of no scheme or no host gets the example of one.
		if c.URL == "127.0.0.1:4318" || c.URL == "http://" || c.URL == "http://me:s3cr3t-pw@[::1" {
			if !strings.Contains(err.Error(), "such as http://127.0.0.1:4318") {
				t.Errorf("%s: %v", c.URL, err)
			}
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("no collector: %v", err)
	}
}

// TestBasicAuth: the URL's user reaches the collector as basic
// authentication.
func TestBasicAuth(t *testing.T) {
	rcv := otlptest.Start(t, otlptest.Options{})
	x, err := New(Config{URL: strings.Replace(rcv.URL, "http://", "http://me:s3cr3t-pw@", 1)}, target())
	if err != nil {
		t.Fatal(err)
	}
	x.Observe(record(0, probe.OK, 200))
	x.Shutdown(t.Output())
	if got, want := rcv.Auth(), "Basic "+base64.StdEncoding.EncodeToString([]byte("me:s3cr3t-pw")); got != want {
		t.Errorf("Authorization %q, want %q", got, want)
	}
}

// TestBrokenCollector: a collector that refuses every push, one that is
// not there and one that never answers cost nothing but a line each
// (with no secret of the URL), and the last push gives up within its
// bound.
func TestBrokenCollector(t *testing.T) {
	refusing := otlptest.Start(t, otlptest.Options{Status: 500})
	hung := otlptest.Start(t, otlptest.Options{Hang: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		name, url string
		want      []string
	}{
		{"refusing", refusing.URL, []string{"1 of 1 metric pushes", "1 of 1 span pushes", "500"}},
		{"gone", gone, []string{"1 of 1 metric pushes", "1 of 1 span pushes", "refused"}},
		{"hung", hung.URL, []string{"did not end within 200ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := strings.Replace(c.url, "http://", "http://me:s3cr3t-pw@", 1)
			x, err := New(Config{URL: u, Spans: true, Shutdown: 200 * time.Millisecond, Interval: time.Hour}, target())
			if err != nil {
				t.Fatal(err)
			}
			x.Observe(record(0, probe.OK, 200))
			var notes strings.Builder
			began := time.Now()
			x.Shutdown(&notes)
			// The bound is the point: 200 ms asked, a second allowed for
			// a busy machine (a hung collector held it for a minute with
			// the SDK's defaults).
			if d := time.Since(began); d > time.Second+200*time.Millisecond {
				t.Errorf("Shutdown took %v", d)
			}
			got := notes.String()
			t.Logf("notes after %v:\n%s", time.Since(began), got)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("notes %q, want %q in them", got, w)
				}
			}
			if strings.Contains(got, "s3cr3t") || strings.Count(got, "\n") > 3 {
				t.Errorf("notes: %q", got)
			}
			x.Shutdown(&notes) // a second call does nothing
			if notes.String() != got {
				t.Errorf("a second Shutdown wrote %q", strings.TrimPrefix(notes.String(), got))
			}
		})
	}
}

// TestConventions: each API's operation and provider as the conventions
// name them.
func TestConventions(t *testing.T) {
	for _, c := range []struct {
		api       probe.Kind
		path      string
		op, owner string
	}{
		{probe.OpenAIChat, "/v1/chat/completions", "chat", "openai"},
		{probe.OpenAICompletions, "/v1/completions", "text_completion", "openai"},
		{probe.OpenAIResponses, "/v1/responses", "chat", "openai"},
		{probe.OpenAIEmbeddings, "/v1/embeddings", "embeddings", "openai"},
		{probe.Anthropic, "/v1/messages", "chat", "anthropic"},
		{probe.Ollama, "/api/chat", "chat", "ollama"},
		{probe.Ollama, "/api/generate", "text_completion", "ollama"},
		{probe.OllamaEmbed, "/api/embed", "embeddings", "ollama"},
		{probe.TGI, "/generate_stream", "text_completion", "huggingface.tgi"},
		{probe.Generic, "/v1/infer", "text_completion", "generic"},
	} {
		if op, owner := string(operation(c.api, c.path)), string(provider(c.api)); op != c.op || owner != c.owner {
			t.Errorf("%s %s: %s %s, want %s %s", c.api, c.path, op, owner, c.op, c.owner)
		}
	}
	for _, c := range []struct {
		r    probe.Result
		want string
	}{
		{probe.Result{Class: probe.HTTP429, Status: 429}, "429"},
		{probe.Result{Class: probe.HTTP5xx, Status: 503}, "503"},
		{probe.Result{Class: probe.StreamCut, Status: 200}, "stream_cut"},
		{probe.Result{Class: probe.Connection}, "connection"},
	} {
		if got := errorType(c.r); got != c.want {
			t.Errorf("%v: error.type %q, want %q", c.r.Class, got, c.want)
		}
	}
}

// BenchmarkObserve is the cost on the engine's aggregator goroutine of a
// streamed request of 128 chunks: its metrics, and its span (the pushes
// run beside it, on the same CPUs).
func BenchmarkObserve(b *testing.B) {
	for _, spans := range []bool{false, true} {
		b.Run(map[bool]string{false: "metrics", true: "spans"}[spans], func(b *testing.B) {
			rcv := otlptest.Start(b, otlptest.Options{})
			x, err := New(Config{URL: rcv.URL, Spans: spans, Interval: time.Hour}, target())
			if err != nil {
				b.Fatal(err)
			}
			defer x.Shutdown(b.Output())
			r := record(0, probe.OK, 200)
			gaps := make([]time.Duration, 127)
			for i := range gaps {
				gaps[i] = 20*time.Millisecond + time.Duration(i+1)*10*time.Millisecond
			}
			r.Live.Replay(r.Start, 20*time.Millisecond, gaps...)
			b.ReportAllocs()
			for b.Loop() {
				x.Observe(r)
			}
		})
	}
}

// TestRedirectNotFollowed: a collector that redirects every push to
// another host gets the run's pushes refused, said once at the end; the
// other host never sees the headers' token nor the basic
// authentication. The SDK's own client followed the redirect with
// OTEL_EXPORTER_OTLP_HEADERS' token.
func TestRedirectNotFollowed(t *testing.T) {
	stolen := make(chan string, 16)
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case stolen <- fmt.Sprint(r.Header):
		default:
		}
	}))
	t.Cleanup(thief.Close)
	// localhost is another host than 127.0.0.1 to Go's redirect rules.
	to := strings.Replace(thief.URL, "127.0.0.1", "localhost", 1)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=s3cr3t-team"}
	u := strings.Replace(redirecting.URL, "http://", "http://me:s3cr3t-pw@", 1)
	x, err := New(Config{URL: u, Spans: true, Interval: time.Hour, Getenv: func(k string) string { return env[k] }}, target())
	if err != nil {
		t.Fatal(err)
	}
	x.Observe(record(0, probe.OK, 200))
	var notes strings.Builder
	x.Shutdown(&notes)
	t.Logf("notes:\n%s", notes.String())
	close(stolen)
	for h := range stolen {
		t.Errorf("the redirect was followed, with %s", h)
	}
	if got := notes.String(); !strings.Contains(got, "1 of 1 metric pushes") || !strings.Contains(got, "307") || strings.Contains(got, "s3cr3t") {
		t.Errorf("notes %q, want the refused pushes said, no secret", got)
	}
}

// TestHugeHeaders: a collector answering with 8 MB of headers fails the
// push at the bound rather than being held whole.
func TestHugeHeaders(t *testing.T) {
	big := strings.Repeat("h", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 8000 {
			w.Header().Add("X-H"+strconv.Itoa(i), big)
		}
	}))
	t.Cleanup(srv.Close)
	x, err := New(Config{URL: srv.URL, Interval: time.Hour}, target())
	if err != nil {
		t.Fatal(err)
	}
	x.Observe(record(0, probe.OK, 200))
	var notes strings.Builder
	x.Shutdown(&notes)
	if got := notes.String(); !strings.Contains(got, "1 of 1 metric pushes") || !strings.Contains(got, "header") {
		t.Errorf("notes %q, want the push failed on its headers", got)
	}
}
