package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/infertop/infertop/load"
)

// RequestsLog writes one JSON line per finished request, flushed as it
// goes, so a run that is killed keeps every request it saw.
type RequestsLog struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error
}

// OpenRequestsLog creates (or truncates) path.
func OpenRequestsLog(path string) (*RequestsLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("requests log: %w", err)
	}
	return &RequestsLog{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// requestLine is one request in the log. Times are in milliseconds; a
// time that was not observed is null.
type requestLine struct {
	StartS          float64   `json:"start_s"`
	Phase           int       `json:"phase"`
	Concurrency     int       `json:"concurrency"`
	PromptTarget    int       `json:"prompt_tokens_target"`
	Status          int       `json:"status"`
	Class           string    `json:"class"`
	Error           string    `json:"error,omitempty"`
	TTFB            *float64  `json:"ttfb_ms"`
	TTFT            *float64  `json:"ttft_ms"`
	TPOT            *float64  `json:"tpot_ms"`
	E2E             float64   `json:"e2el_ms"`
	ITL             []float64 `json:"itl_ms"`
	InputTokens     int       `json:"input_tokens"`
	OutputTokens    int       `json:"output_tokens"`
	OutputEstimated bool      `json:"output_estimated"`
	Messages        int       `json:"messages"`
	DNS             float64   `json:"dns_ms"`
	Connect         float64   `json:"connect_ms"`
	TLS             float64   `json:"tls_ms"`
	Reused          bool      `json:"conn_reused"`
	Proto           string    `json:"proto,omitempty"`
	RetryAfterS     float64   `json:"retry_after_s,omitempty"`
	Good            bool      `json:"good"`
	ID              string    `json:"id,omitempty"`
	Retried         bool      `json:"retried,omitempty"`
	// UsageIgnored: the server's token counts could not be true and were
	// set aside for the counted messages.
	UsageIgnored bool `json:"usage_ignored,omitempty"`
}

// Write logs one request and flushes it.
func (l *RequestsLog) Write(r load.Record) {
	line := requestLine{
		StartS: r.At.Seconds(), Phase: r.Phase, Concurrency: r.Knobs.Concurrency, PromptTarget: r.PromptTokens,
		Status: r.Status, Class: r.Class.String(), Error: r.Err, E2E: ms(r.E2E), InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, OutputEstimated: r.OutputEstimated, Messages: r.Messages,
		DNS: ms(r.DNS), Connect: ms(r.Connect), TLS: ms(r.TLS), Reused: r.ConnReused, Proto: r.Proto,
		RetryAfterS: r.RetryAfter.Seconds(), Good: r.Good, ID: r.ID, ITL: []float64{},
		Retried: r.Retried, UsageIgnored: r.UsageIgnored,
	}
	if r.TTFB > 0 {
		v := ms(r.TTFB)
		line.TTFB = &v
	}
	if r.HasTTFT {
		v := ms(r.TTFT)
		line.TTFT = &v
	}
	if tpot, ok := r.TPOT(); ok {
		v := ms(tpot)
		line.TPOT = &v
	}
	r.ITLs(func(d time.Duration) { line.ITL = append(line.ITL, ms(d)) })
	b, err := json.Marshal(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if err == nil {
		b = append(b, '\n')
		_, err = l.w.Write(b)
	}
	if err == nil {
		err = l.w.Flush()
	}
	l.err = err
}

// Close flushes and closes the file, returning the first error seen.
func (l *RequestsLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil && l.err == nil {
		l.err = err
	}
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = err
	}
	if l.err != nil {
		return fmt.Errorf("requests log: %w", l.err)
	}
	return nil
}
