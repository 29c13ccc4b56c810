package report

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// logRecords are requests of every kind the log writes: streamed and
// whole, failed, retried, a 429 with its wait, estimated and set-aside
// token counts, an error message that must be escaped.
func logRecords() []load.Record {
	ms := time.Millisecond
	return []load.Record{
		benchRecord(),
		{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: 20 * ms,
			E2E: 45 * ms, OutputTokens: 3, Messages: 3}, Live: replayed(20*ms, 30*ms, 45*ms), Phase: 1, Knobs: load.Knobs{Concurrency: 2}, Good: true},
		{Result: probe.Result{Status: 503, Class: probe.HTTP5xx, Err: "HTTP 503: busy", E2E: ms}, Phase: 1, At: 1500 * ms},
		{Result: probe.Result{Status: 429, Class: probe.HTTP429, Err: "HTTP 429: slow down \"now\"\n\x1b[2J", E2E: 3 * ms, RetryAfter: 2 * time.Second,
			DNS: 300 * time.Microsecond, Connect: 1200 * time.Microsecond, TLS: 4 * ms, Proto: "HTTP/2.0"}, Phase: 2, At: 2 * time.Second, PromptTokens: 1024},
		{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: 80 * ms, TTFB: 10 * ms, E2E: 80 * ms,
			OutputTokens: 1, OutputEstimated: true, UsageIgnored: true, Retried: true, ID: "chatcmpl-42", Messages: 1, InputTokens: 7},
			Live: replayed(80*ms, 80*ms), Phase: 3, At: 3250 * ms, Knobs: load.Knobs{Mode: load.OpenLoop, Rate: 5}},
		{Result: probe.Result{Class: probe.Connection, Err: "connection refused"}, Phase: 3, At: 4 * time.Second},
	}
}

// TestRequestsLogBytes: the log writes what it always wrote, byte for
// byte (testdata/requests.jsonl was written before the log had a writer
// of its own), so scripts reading it see no change.
func TestRequestsLogBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "req.jsonl")
	l, err := OpenRequestsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range logRecords() {
		l.Write(r)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/requests.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("the log changed:\n%s\nwant:\n%s", got, want)
	}
}
