package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// sink is a log's file for the tests: it keeps what is written and the
// size of each write, tells each write on wrote (when set), holds each
// write until gate is closed (when set), and fails with fail (when set).
type sink struct {
	wrote chan int
	gate  chan struct{}
	fail  error

	mu     sync.Mutex
	b      bytes.Buffer
	sizes  []int
	closed bool
}

func (s *sink) Write(p []byte) (int, error) {
	if s.wrote != nil {
		s.wrote <- len(p)
	}
	if s.gate != nil {
		<-s.gate
	}
	if s.fail != nil {
		return 0, s.fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = append(s.sizes, len(p))
	return s.b.Write(p)
}

func (s *sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bigBounds never wake the writer before a tick.
func bigBounds() logBounds { return logBounds{flushAt: 1 << 30, maxPending: 1 << 30} }

// tickTwice has the writer take the buffer and finish writing it: the
// ticks are unbuffered, so the second is taken only once the writer is
// back from the first one's write.
func tickTwice(tick chan time.Time) {
	tick <- time.Time{}
	tick <- time.Time{}
}

// TestRequestsLog: the lines are written at the writer's tick, not at
// Write, and what Close finds is written before the file is closed; the
// ticker is stopped with the writer (goleak checks the writer is gone).
func TestRequestsLog(t *testing.T) {
	s := &sink{}
	tick := make(chan time.Time)
	stopped := false
	l := newRequestsLog(s, bigBounds(), tick, func() { stopped = true })
	ok := probe.Result{Status: 200, HasTTFT: true, TTFT: 20 * time.Millisecond, TTFB: 10 * time.Millisecond, Blocked: time.Millisecond, Sending: time.Millisecond,
		E2E: 45 * time.Millisecond, OutputTokens: 3, Messages: 3, Trace: probe.NewTraceContext(0xab, 0xcd, 1)}
	l.Write(load.Record{Result: ok, Live: replayed(ok.TTFT, 30*time.Millisecond, 45*time.Millisecond), Phase: 1, Knobs: load.Knobs{Concurrency: 2}, Good: true})
	tickTwice(tick) // the first tick: the writer waits on the second while the line is written
	if got := strings.Count(s.String(), "\n"); got != 1 {
		t.Fatalf("%d lines after a tick, want 1: %q", got, s.String())
	}
	l.Write(load.Record{Result: probe.Result{Status: 503, Class: probe.HTTP5xx, Err: "HTTP 503: busy", E2E: time.Millisecond}, Phase: 1, Turn: 3, Session: 1500 * time.Millisecond})
	if got := strings.Count(s.String(), "\n"); got != 1 {
		t.Fatalf("%d lines before the next tick, want 1: Write wrote", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !stopped || !s.closed {
		t.Fatalf("ticker stopped %v, file closed %v", stopped, s.closed)
	}
	lines := strings.Split(strings.TrimSpace(s.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines after Close, want 2", len(lines))
	}
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["ttft_ms"] != 20.0 || first["tpot_ms"] != 12.5 || len(first["itl_ms"].([]any)) != 2 || first["good"] != true {
		t.Errorf("first %v", first)
	}
	if first["blocked_ms"] != 1.0 || first["waiting_ms"] != 8.0 || first["receiving_ms"] != 35.0 || second["waiting_ms"] != nil {
		t.Errorf("HTTP phases: %v %v %v, a request without an answer's %v", first["blocked_ms"], first["waiting_ms"], first["receiving_ms"], second["waiting_ms"])
	}
	if first["trace_id"] != "00000000000000ab00000000000000cd" || second["trace_id"] != nil {
		t.Errorf("trace ids: %v, %v (none sent)", first["trace_id"], second["trace_id"])
	}
	if first["turn"] != nil || second["turn"] != 3.0 || second["session_s"] != 1.5 {
		t.Errorf("turns: a plain request's %v, a session's %v (session %v)", first["turn"], second["turn"], second["session_s"])
	}
	if second["class"] != "5xx" || second["ttft_ms"] != nil || second["error"] != "HTTP 503: busy" {
		t.Errorf("second %v", second)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	l.Write(benchRecord()) // after Close: nothing, and no panic
	if strings.Count(s.String(), "\n") != 2 {
		t.Fatal("a Write after Close was written")
	}
}

// TestRequestsLogOnAFile: OpenRequestsLog's log, on its own ticker, has
// written every line once closed.
func TestRequestsLogOnAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "req.jsonl")
	l, err := OpenRequestsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		l.Write(benchRecord())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Count(string(b), "\n") != 100 {
		t.Fatalf("%d lines, %v", strings.Count(string(b), "\n"), err)
	}
	if _, err := OpenRequestsLog(filepath.Join(path, "not-a-dir", "x")); err == nil || !strings.HasPrefix(err.Error(), "requests log: ") {
		t.Fatalf("a path that cannot be created: %v", err)
	}
}

// TestRequestsLogWakesWhenFull: past flushAt the writer writes without
// waiting for a tick.
func TestRequestsLogWakesWhenFull(t *testing.T) {
	s := &sink{wrote: make(chan int, 1)}
	// No ticks at all; 364 bytes a line, past 1000 at the third.
	l := newRequestsLog(s, logBounds{flushAt: 1000, maxPending: 1 << 20}, nil, func() {})
	for range 3 {
		l.Write(benchRecord())
	}
	if n := <-s.wrote; n < 1000 {
		t.Fatalf("woken with %d bytes", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRequestsLogStalledDisk: while the file does not take a write, the
// lines wait in memory up to maxPending, then Write waits for the file;
// once it takes them, every line is written, in order.
func TestRequestsLogStalledDisk(t *testing.T) {
	s := &sink{wrote: make(chan int, 100), gate: make(chan struct{})}
	b := logBounds{flushAt: 4 << 10, maxPending: 16 << 10}
	l := newRequestsLog(s, b, nil, func() {})
	const lines = 200 // 73 KB: past both bounds many times
	lineLen := len(lineOf(t, phased(1000)))
	wrote := make(chan int, lines)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range lines {
			l.Write(phased(1000 + i))
			wrote <- i
		}
	}()
	<-s.wrote // the writer is held in the file's write
	// As many lines as surely fit (flushAt or more taken by the held
	// write, maxPending waiting), less one: all of them return without
	// the file, and the next few find the buffer full.
	for range (b.flushAt+b.maxPending)/lineLen - 1 {
		<-wrote
	}
	close(s.gate)
	<-done
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(s.String()), "\n")
	if len(got) != lines {
		t.Fatalf("%d lines, want %d", len(got), lines)
	}
	for i, line := range got {
		var v struct{ Phase int }
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.Phase != 1000+i || len(line)+1 != lineLen {
			t.Fatalf("line %d: phase %d, %d bytes, %v", i, v.Phase, len(line)+1, err)
		}
	}
	for _, n := range s.sizes {
		if n > b.maxPending+lineLen {
			t.Fatalf("a write of %d bytes: the buffer grew past maxPending (%d)", n, b.maxPending)
		}
	}
}

// phased is benchRecord in phase p: lines of one length for p of four
// digits, their order readable.
func phased(p int) load.Record {
	r := benchRecord()
	r.Phase = p
	return r
}

// lineOf is the line the log writes for r, its newline included.
func lineOf(t *testing.T, r load.Record) string {
	t.Helper()
	s := &sink{}
	l := newRequestsLog(s, bigBounds(), nil, func() {})
	l.Write(r)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return s.String()
}

// TestRequestsLogWriteFails: a file that fails stops the log, and Close
// says why, wrapped.
func TestRequestsLogWriteFails(t *testing.T) {
	errFull := errors.New("no space left")
	s := &sink{fail: errFull}
	tick := make(chan time.Time)
	l := newRequestsLog(s, bigBounds(), tick, func() {})
	l.Write(benchRecord())
	tickTwice(tick)
	l.Write(benchRecord()) // dropped: the log has failed
	if err := l.Close(); !errors.Is(err, errFull) || !strings.HasPrefix(err.Error(), "requests log: ") {
		t.Fatalf("Close: %v", err)
	}
	if !s.closed {
		t.Fatal("the file was not closed")
	}
}
