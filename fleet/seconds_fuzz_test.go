package fleet

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
)

// FuzzDecodeSeconds: whatever an agent (or anything at its address)
// answers to /seconds, decodeSeconds never panics and refuses in one
// line; what it takes holds every bound it checks, and re-encoded as an
// agent would send it is taken again as the same seconds. The seeds are
// TestSecondsRefused's answers; plain go test runs only them.
func FuzzDecodeSeconds(f *testing.F) {
	body, bad := secondsBodies(f)
	f.Add(body(func(*agent.Seconds) {}), int64(-1))
	f.Add(body(func(*agent.Seconds) {}), int64(1))
	for _, b := range bad {
		f.Add(b, int64(-1))
	}
	floors := bucketFloors()
	f.Fuzz(func(t *testing.T, raw []byte, since int64) {
		b, err := decodeSeconds(raw, since, floors)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("refused in more than a line: %v", err)
			}
			return
		}
		checkBatch(t, b, since)
		again, err := decodeSeconds(resend(t, b), since, floors)
		if err != nil {
			t.Fatalf("re-encoded, refused: %v", err)
		}
		if !again.start.Equal(b.start) || again.from != b.from || !reflect.DeepEqual(again.secs, b.secs) {
			t.Fatalf("re-encoded, another batch:\n%+v\n%+v", again, b)
		}
	})
}

// checkBatch fails t unless b holds the bounds decodeSeconds promises.
func checkBatch(t *testing.T, b *secondsBatch, since int64) {
	t.Helper()
	if len(b.secs) > load.MaxSealedSeconds || b.from < 0 || b.from > maxSecondCount || b.start.IsZero() {
		t.Fatalf("%d seconds from %d, started %v", len(b.secs), b.from, b.start)
	}
	last := since
	for _, s := range b.secs {
		if s.Sec <= last || s.Sec >= maxSecondCount {
			t.Fatalf("second %d after %d", s.Sec, last)
		}
		last = s.Sec
		var failed int64
		for _, n := range s.ByClass {
			failed += n
		}
		if failed != s.Failed || s.Good > s.Completed || s.Completed < 0 || s.Completed > maxSecondCount || s.InFlight < 0 ||
			s.InFlight > maxSecondCount || s.InTokens < 0 || s.InTokens > maxSecondCount || abs(s.OutTokens) > maxSecondCount {
			t.Fatalf("second %d: counts out of bounds: %+v", s.Sec, s)
		}
		for m := range load.NumMetrics {
			if n := s.Count(m); n < 0 || n > maxSecondCount || len(s.hist[m].values) != len(s.hist[m].counts) {
				t.Fatalf("second %d, %s: %d values in %d buckets", s.Sec, report.MetricKey(m), n, len(s.hist[m].values))
			}
		}
	}
}

// resend is b as an agent sends it: each second's histograms encoded
// from its buckets into the engine's geometry.
func resend(t *testing.T, b *secondsBatch) []byte {
	t.Helper()
	out := agent.Seconds{Encoding: report.HistogramEncoding, Started: b.start, From: b.from}
	for _, s := range b.secs {
		js := agent.Second{Sec: s.Sec, Completed: s.Completed, Failed: s.Failed, Good: s.Good, OutputTokens: s.OutTokens, InputTokens: s.InTokens,
			InFlight: int(s.InFlight), FailedByClass: map[string]int64{}, Hist: map[string]string{}}
		for c, n := range s.ByClass {
			if n != 0 {
				js.FailedByClass[probe.ErrorClass(c).String()] = n
			}
		}
		for m := range load.NumMetrics {
			if len(s.hist[m].values) == 0 {
				continue
			}
			h := load.NewHistogram()
			for i, v := range s.hist[m].values {
				if err := h.RecordValues(v, s.hist[m].counts[i]); err != nil {
					t.Fatalf("second %d, %s: %v", s.Sec, report.MetricKey(m), err)
				}
			}
			js.Hist[report.MetricKey(m)] = encode(t, h)
		}
		out.Seconds = append(out.Seconds, js)
		out.Current = s.Sec + 1
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatalf("a batch taken does not re-encode: %v", err)
	}
	return raw
}
