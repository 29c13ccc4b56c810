package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
)

// FlushEvery is how often the requests log writes what it holds: a run
// that is killed loses at most the requests of the last FlushEvery.
const FlushEvery = 100 * time.Millisecond

// logBounds are a requests log's buffer bounds. Past flushAt the writer
// is woken at once rather than at the next tick, so a fast run writes in
// pieces of about flushAt, not whatever a tenth of a second held; past
// maxPending a Write waits for the writer, so a stalled disk holds up the
// load (as it always did) instead of growing the memory without end.
type logBounds struct{ flushAt, maxPending int }

// The bounds of a log on a file: 64 KiB is about 180 lines of a streamed
// request, 4 MiB a second of a fast endpoint's requests.
const (
	fileFlushAt    = 64 << 10
	fileMaxPending = 4 << 20
)

// RequestsLog writes one JSON line per finished request. Write only
// appends the line to a buffer, on the caller's goroutine (the engine's
// aggregator, which must not wait on a disk); a goroutine the log owns
// writes the buffer out every FlushEvery, sooner when it fills, and at
// Close, which stops it.
type RequestsLog struct {
	w      io.WriteCloser
	bounds logBounds

	mu     sync.Mutex
	room   sync.Cond // signalled when the writer takes the buffer
	buf    []byte    // lines not yet taken by the writer
	err    error     // the first error; once set, nothing more is written
	closed bool

	wake      chan struct{} // a token: the buffer passed flushAt
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the writer has returned
	closeOnce sync.Once
}

// OpenRequestsLog creates (or truncates) path.
func OpenRequestsLog(path string) (*RequestsLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("requests log: %w", err)
	}
	t := time.NewTicker(FlushEvery)
	return newRequestsLog(f, logBounds{fileFlushAt, fileMaxPending}, t.C, t.Stop), nil
}

// newRequestsLog starts the log's writer on w, writing at every tick;
// stopTick is called as the writer returns. Tests pass their own ticks
// and bounds.
func newRequestsLog(w io.WriteCloser, bounds logBounds, tick <-chan time.Time, stopTick func()) *RequestsLog {
	l := &RequestsLog{w: w, bounds: bounds, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	l.room.L = &l.mu
	go l.run(tick, stopTick)
	return l
}

// run is the log's writer: it takes the buffer at each tick or wake-up,
// and a last time once stopped.
func (l *RequestsLog) run(tick <-chan time.Time, stopTick func()) {
	defer close(l.done)
	defer stopTick()
	var spare []byte // the buffer last written, reused for the next lines
	for {
		select {
		case <-tick:
		case <-l.wake:
		case <-l.stop:
			l.flush(&spare)
			return
		}
		l.flush(&spare)
	}
}

// flush writes out what the buffer holds, outside the lock, so a Write
// meanwhile appends to the other buffer and does not wait.
func (l *RequestsLog) flush(spare *[]byte) {
	l.mu.Lock()
	b := l.buf
	l.buf = (*spare)[:0]
	failed := l.err != nil
	l.room.Broadcast()
	l.mu.Unlock()
	*spare = b
	if len(b) == 0 || failed {
		return
	}
	if _, err := l.w.Write(b); err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = err
		}
		l.room.Broadcast() // a Write waiting for room gives up
		l.mu.Unlock()
	}
}

// RequestLine is one request in the log, as it is written and read (the
// tests read the log with it). Times are in milliseconds; a
// time that was not observed is null.
type RequestLine struct {
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
	// A reasoning model's: the time to its first reasoning message and to
	// the answer's first (null when not seen), its reasoning tokens (part
	// of output_tokens). Inputs: an embeddings request's batch.
	TTFR            *float64 `json:"ttfr_ms,omitempty"`
	TTFO            *float64 `json:"ttfo_ms,omitempty"`
	ReasoningTokens int      `json:"reasoning_tokens,omitempty"`
	Inputs          int      `json:"inputs,omitempty"`
	// A session's (--sessions): the turn the request was, from 1, and
	// the whole session's time when the request ended one.
	Turn     int     `json:"turn,omitempty"`
	SessionS float64 `json:"session_s,omitempty"`
	// Model is the model the request asked for in a mix (--model
	// a:70,b:30); empty for the one model.
	Model string `json:"model,omitempty"`
	// Output is the answer judged (--response-format, --tools): "valid",
	// or why it is invalid (no_tool_call, args_not_json, ...); ToolCall
	// says it called a tool. Empty where nothing was judged.
	Output   string `json:"output,omitempty"`
	ToolCall bool   `json:"tool_call,omitempty"`

	// InputEstimated: the server gave no prompt count (input_tokens is 0,
	// or the client's words); output_estimated says the same of the output.
	InputEstimated bool `json:"input_estimated,omitempty"`
	// TraceID is the trace id of the request's traceparent, sent as its
	// x-request-id too: the key that finds it in the server's logs and
	// traces (absent when the user's own headers took their place).
	TraceID string `json:"trace_id,omitempty"`
	// The HTTP phases k6 names http_req_blocked, _sending, _waiting and
	// _receiving (probe.HTTPPhase; connecting and TLS are connect_ms and
	// tls_ms): absent when no answer came.
	Blocked   *float64 `json:"blocked_ms,omitempty"`
	Sending   *float64 `json:"sending_ms,omitempty"`
	Waiting   *float64 `json:"waiting_ms,omitempty"`
	Receiving *float64 `json:"receiving_ms,omitempty"`
	// The server's own timings of the request (probe.ServerTimings),
	// where it gave them: its queue, its TTFT, its prefill (its TTFT less
	// its queue, or its own prompt time), its generation and mean ITL,
	// the prompt tokens its cache held; TTFTGap is the client's TTFT less
	// the server's (the network, HTTP and streaming).
	ServerQueue      *float64 `json:"server_queue_ms,omitempty"`
	ServerTTFT       *float64 `json:"server_ttft_ms,omitempty"`
	ServerPrefill    *float64 `json:"server_prefill_ms,omitempty"`
	ServerGeneration *float64 `json:"server_generation_ms,omitempty"`
	ServerMeanITL    *float64 `json:"server_mean_itl_ms,omitempty"`
	CachedTokens     *int     `json:"cached_tokens,omitempty"`
	TTFTGap          *float64 `json:"ttft_gap_ms,omitempty"`
}

// Write logs one request; it reaches the file within FlushEvery. Once
// the log has failed or been closed, Write does nothing (Close says why).
func (l *RequestsLog) Write(r load.Record) {
	line := RequestLine{
		StartS: r.At.Seconds(), Phase: r.Phase, Concurrency: r.Knobs.Concurrency, PromptTarget: r.PromptTokens,
		Status: r.Status, Class: r.Class.String(), Error: r.Err, E2E: ms(r.E2E), InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, OutputEstimated: r.OutputEstimated, Messages: r.Messages,
		DNS: ms(r.DNS), Connect: ms(r.Connect), TLS: ms(r.TLS), Reused: r.ConnReused, Proto: r.Proto,
		RetryAfterS: r.RetryAfter.Seconds(), Good: r.Good, ID: r.ID, ITL: []float64{},
		Retried: r.Retried, UsageIgnored: r.UsageIgnored, ReasoningTokens: r.ReasoningTokens, Inputs: r.Inputs,
		Turn: r.Turn, SessionS: r.Session.Seconds(), Model: r.Model, Output: r.Output.String(), ToolCall: r.Output.Called,
	}
	if r.HasTTFR {
		v := ms(r.TTFR)
		line.TTFR = &v
	}
	if r.HasTTFO && r.HasTTFR { // without reasoning TTFO is TTFT: not written twice
		v := ms(r.TTFO)
		line.TTFO = &v
	}
	if r.TTFB > 0 {
		v := ms(r.TTFB)
		line.TTFB = &v
	}
	if r.HasTTFT {
		v := ms(r.TTFT)
		line.TTFT = &v
	}
	if p, ok := r.HTTPPhases(); ok {
		v := [4]float64{ms(p[probe.Blocked]), ms(p[probe.Sending]), ms(p[probe.Waiting]), ms(p[probe.Receiving])}
		line.Blocked, line.Sending, line.Waiting, line.Receiving = &v[0], &v[1], &v[2], &v[3]
	}
	if tpot, ok := r.TPOT(); ok {
		v := ms(tpot)
		line.TPOT = &v
	}
	line.TraceID, line.InputEstimated = r.Trace.ID(), r.InputEstimated
	line.server(&r.Result)
	r.ITLs(func(d time.Duration) { line.ITL = append(line.ITL, ms(d)) })
	b, err := json.Marshal(line)
	b = sanitize.JSON(b) // the server's text (an error, an id): safe to cat
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.buf) >= l.bounds.maxPending && l.err == nil && !l.closed {
		l.room.Wait()
	}
	if l.err != nil || l.closed {
		return
	}
	if err != nil {
		l.err = fmt.Errorf("request at %.3fs: %w", r.At.Seconds(), err)
		return
	}
	l.buf = append(l.buf, b...)
	l.buf = append(l.buf, '\n')
	if len(l.buf) >= l.bounds.flushAt {
		select {
		case l.wake <- struct{}{}:
		default: // the writer is woken already
		}
	}
}

// server sets the line's server timings from r's, those it has.
func (line *RequestLine) server(r *probe.Result) {
	sv := &r.Server
	if !sv.Any() {
		return
	}
	opt := func(d time.Duration, has bool) *float64 {
		if !has {
			return nil
		}
		v := ms(d)
		return &v
	}
	line.ServerQueue = opt(sv.Queue, sv.HasQueue)
	line.ServerTTFT = opt(sv.TTFT, sv.HasTTFT)
	line.ServerPrefill = opt(sv.ServerPrefill())
	line.ServerGeneration = opt(sv.Generation, sv.HasGeneration)
	line.ServerMeanITL = opt(sv.MeanITL, sv.HasMeanITL)
	if sv.HasCached {
		n := sv.CachedTokens
		line.CachedTokens = &n
	}
	if s, ok := r.SplitTTFT(); ok {
		line.TTFTGap = opt(s.Gap, true)
	}
}

// Close writes out what the log holds, stops its writer and closes the
// file, returning the first error seen. Safe to call more than once.
func (l *RequestsLog) Close() error {
	l.closeOnce.Do(func() {
		// Closed first: whatever was written before is in the buffer,
		// and the writer's last flush takes it.
		l.mu.Lock()
		l.closed = true
		l.room.Broadcast()
		l.mu.Unlock()
		close(l.stop)
		<-l.done
		err := l.w.Close()
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil && l.err == nil {
			l.err = err
		}
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return fmt.Errorf("requests log: %w", l.err)
	}
	return nil
}
