package runner

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/otlp"
	"github.com/infertop/infertop/otlp/otlptest"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// seen is what a run's requests were, as OnResult saw them.
type seen struct {
	mu             sync.Mutex // OnResult's goroutine writes, the test reads after Stop
	ok, failed     int
	itls           int
	spanOf         map[[16]byte][8]byte // the traceparent's span id by its trace id
	firstTokenOnes int
}

func (s *seen) observe(r load.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spanOf[r.Trace.TraceID] = r.Trace.SpanID
	if !r.OK() {
		s.failed++
		return
	}
	s.ok++
	if r.HasTTFT {
		s.firstTokenOnes++
	}
	r.ITLs(func(time.Duration) { s.itls++ })
}

// runSeen runs cfg to its end and stops it: what its requests were, and
// how long Stop took (the last push's time with it).
func runSeen(t *testing.T, cfg Config) (*seen, time.Duration) {
	t.Helper()
	got := &seen{spanOf: map[[16]byte][8]byte{}}
	cfg.Load.OnResult = got.observe
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitSnap(t, r, 60*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	began := time.Now()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	return got, time.Since(began) // Stop has waited for OnResult's goroutine
}

// TestOTLP: a short run against the sim with --otlp and --otlp-spans.
// The receiver reads the four GenAI client metrics with the conventions'
// names and units, each counting what the run measured (a duration and
// two token counts per request completed, a first chunk per stream, a
// chunk time per gap), and a client span per request whose trace id is
// the one the sim logged for it and whose span id is the parent the
// request's traceparent named, so the server's span joins it.
func TestOTLP(t *testing.T) {
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.Start(t, p)
	rcv := otlptest.Start(t, otlptest.Options{})
	cfg := simConfig(t)
	cfg.URL, cfg.API = srv.URL, probe.OpenAIChat
	cfg.Load.MaxRequests = 40
	cfg.OTLP = otlp.Config{URL: rcv.URL, Spans: true}
	got, _ := runSeen(t, cfg) // the last push before Stop returns
	srv.Close()               // every record kept
	if got.ok+got.failed != 40 || got.ok == 0 {
		t.Fatalf("%d requests completed, %d failed; want 40 in all", got.ok, got.failed)
	}
	if errs := rcv.Errs(); len(errs) > 0 {
		t.Fatalf("the receiver could not read: %v", errs)
	}

	ms := rcv.Metrics()
	for _, c := range []struct {
		name, unit string
		count      int
	}{
		{"gen_ai.client.operation.duration", "s", got.ok + got.failed},
		{"gen_ai.client.token.usage", "{token}", 2 * got.ok},
		{"gen_ai.client.operation.time_to_first_chunk", "s", got.firstTokenOnes},
		{"gen_ai.client.operation.time_per_output_chunk", "s", got.itls},
	} {
		m := ms[c.name]
		if m.Unit != c.unit || m.Count() != uint64(c.count) {
			t.Errorf("%s: unit %q, count %d; want %q, %d", c.name, m.Unit, m.Count(), c.unit, c.count)
		}
		for _, pt := range m.Points {
			if pt.Attrs["gen_ai.request.model"] != p.Model || pt.Attrs["server.address"] != "127.0.0.1" || pt.Attrs["gen_ai.operation.name"] != "chat" {
				t.Errorf("%s: attributes %v", c.name, pt.Attrs)
			}
		}
	}
	if got.firstTokenOnes != got.ok || got.itls == 0 {
		t.Errorf("%d streams with a first chunk of %d, %d gaps", got.firstTokenOnes, got.ok, got.itls)
	}

	logged := map[string]bool{}
	for _, rec := range srv.Sim.Records() {
		if rec.TraceID != "" {
			logged[rec.TraceID] = true
		}
	}
	spans := rcv.Spans()
	if len(spans) != got.ok+got.failed || len(logged) != len(spans) {
		t.Fatalf("%d spans, %d trace ids in the sim's log; want %d", len(spans), len(logged), got.ok+got.failed)
	}
	for _, sp := range spans {
		id := hex.EncodeToString(sp.TraceID[:])
		if !logged[id] {
			t.Errorf("span %s: trace id %s is not one the sim logged", sp.Name, id)
		}
		if want, ok := got.spanOf[sp.TraceID]; !ok || sp.SpanID != want {
			t.Errorf("span of trace %s: span id %x, the traceparent's %x", id, sp.SpanID, want)
		}
	}
}

// TestOTLPBrokenCollector: a collector that refuses every push costs no
// request, only a line at the end; one that never answers holds Stop no
// longer than the push's bound.
func TestOTLPBrokenCollector(t *testing.T) {
	for _, c := range []struct {
		name string
		o    otlptest.Options
		want string
	}{
		{"refusing", otlptest.Options{Status: 500}, "metric pushes to"},
		{"hung", otlptest.Options{Hang: true}, "did not end within 300ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rcv := otlptest.Start(t, c.o)
			cfg := simConfig(t)
			cfg.Load.MaxRequests = 20
			cfg.OTLP = otlp.Config{URL: strings.Replace(rcv.URL, "http://", "http://me:s3cr3t-pw@", 1), Spans: true, Shutdown: 300 * time.Millisecond}
			var notes syncBuffer
			cfg.Notes = &notes
			got, took := runSeen(t, cfg)
			// 300 ms asked, and the note says it was given up at that;
			// the bound here only tells it from the SDK's defaults, which
			// held a hung collector's push for a minute (a busy machine
			// may take seconds more, never that).
			if took > 30*time.Second {
				t.Errorf("Stop took %v", took)
			}
			if got.ok != 20 || got.failed != 0 {
				t.Errorf("%d completed, %d failed; want 20 completed", got.ok, got.failed)
			}
			n := notes.String()
			if !strings.Contains(n, "infertop: --otlp: ") || !strings.Contains(n, c.want) || strings.Contains(n, "s3cr3t") {
				t.Errorf("notes %q, want %q in them and no password", n, c.want)
			}
		})
	}
}
