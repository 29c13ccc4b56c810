package report

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// benchRecord is a streamed request of 16 output messages: a line of 364
// bytes.
func benchRecord() load.Record {
	chunks := make([]time.Duration, 15) // after the first, at the TTFT
	for i := range chunks {
		chunks[i] = 20*time.Millisecond + time.Duration(i+1)*12*time.Millisecond
	}
	return load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: 20 * time.Millisecond, TTFB: 5 * time.Millisecond,
		E2E: chunks[14], InputTokens: 512, OutputTokens: 16, Messages: 16, ConnReused: true, Proto: "HTTP/1.1"},
		Live: replayed(20*time.Millisecond, chunks...), Phase: 1, Knobs: load.Knobs{Concurrency: 64}, Good: true}
}

// replayed is the Live of a request whose first message came at ttft and
// the others at rest, as Do would have told it.
func replayed(ttft time.Duration, rest ...time.Duration) *probe.Live {
	start := time.Now()
	l := &probe.Live{Origin: start}
	l.Replay(start, ttft, rest...)
	return l
}

// BenchmarkRequestsLog is the aggregator's cost of logging one request:
// what the load's one aggregator goroutine pays per finished request.
func BenchmarkRequestsLog(b *testing.B) {
	l, err := OpenRequestsLog(filepath.Join(b.TempDir(), "req.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	rec := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		l.Write(rec)
	}
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}
