// Package agent is infertop's side of a load spread over machines: the
// share of the whole load one agent takes (index i of n), the wait for a
// common start, the agent's live state served over HTTP behind a shared
// token, and the followers' knob changes it takes there (Control), each
// agent its share. The load itself is an ordinary headless run; the merge
// of the agents' results is package report/merge.
package agent

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/ratelog"
)

// Share is one agent's part of the whole load: index Index of Of.
type Share struct{ Index, Of int }

// MaxAgents bounds Of: a share's load and seed stay meaningful.
const MaxAgents = 10000

// Check says whether the share is one: 0 <= Index < Of.
func (s Share) Check() error {
	if s.Of < 1 || s.Of > MaxAgents || s.Index < 0 || s.Index >= s.Of {
		return fmt.Errorf("agent: index %d of %d: %w", s.Index, s.Of, ErrShare)
	}
	return nil
}

// ErrShare is an index outside 0..n-1, or an n past MaxAgents.
var ErrShare = errors.New("not a share (the index runs from 0 to n-1)")

// Count is this share of a whole count: the whole split n ways, the
// remainder spread over the first indexes, so the shares add up to it.
func (s Share) Count(whole int64) int64 {
	n, i := int64(s.Of), int64(s.Index)
	out := whole / n
	if i < whole%n {
		out++
	}
	return out
}

// Rate is this share of a whole rate: a nth.
func (s Share) Rate(whole float64) float64 { return whole / float64(s.Of) }

// Seed is this share's seed, derived from the whole load's and the index
// (SplitMix64's step), so no two agents draw the same prompts and a run
// is repeated by repeating its seed.
func (s Share) Seed(whole uint64) uint64 {
	z := whole + uint64(s.Index+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// MaxTokenBytes bounds a token file; MinTokenBytes is the shortest
// token taken (a guessable one protects nothing).
const (
	MaxTokenBytes = 4096
	MinTokenBytes = 16
)

// ReadToken reads the shared token from path: its content less the
// surrounding white space. The token is never in an error.
func ReadToken(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agent: the token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTokenBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agent: the token file: %w", err)
	}
	if len(b) > MaxTokenBytes {
		return nil, fmt.Errorf("agent: the token file %s is past %d bytes", path, MaxTokenBytes)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinTokenBytes {
		return nil, fmt.Errorf("agent: the token in %s is shorter than %d bytes", path, MinTokenBytes)
	}
	if err := CheckToken(b); err != nil {
		return nil, fmt.Errorf("agent: the token in %s: %w", path, err)
	}
	return b, nil
}

// ErrTokenBytes is a token holding a byte no HTTP header carries.
var ErrTokenBytes = errors.New("it holds a control character or a line break, which no HTTP header carries (one token on one line)")

// CheckToken refuses a token with a control character inside (a line
// break between two lines of a file): Go refuses to send such a header,
// so an agent would take a token no follower can send. The token is
// never in the error.
func CheckToken(token []byte) error {
	for _, c := range token {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return ErrTokenBytes
		}
	}
	return nil
}

// WaitUntil waits until at on this machine's clock, or for ctx. An
// instant past is no wait.
func WaitUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agent: waiting for --start-at: %w", ctx.Err())
	}
}

// Listen opens the agent's port. With a TLS configuration it serves
// HTTPS; without, plain HTTP only where plainLoopback allows it and addr
// is a loopback address: a token sent in the clear on a network is no
// secret.
func Listen(addr string, tc *tls.Config, plainLoopback bool) (net.Listener, error) {
	if tc == nil {
		if !plainLoopback {
			return nil, errors.New("agent: give --tls-cert and --tls-key (plain HTTP only with --plain-http-loopback, on a loopback address)")
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("agent: --listen %q: %w", addr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("agent: plain HTTP on %q: only on a loopback address (127.0.0.1, ::1)", addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	return ln, nil
}

// State is what an agent says of itself at /state.
type State struct {
	Version string `json:"version"`
	Index   int    `json:"index"`
	Of      int    `json:"of"`
	// StartAt is the common start asked for, Started when this agent's
	// load started on its clock; OffsetMS is Started - StartAt.
	StartAt  *time.Time `json:"start_at,omitempty"`
	Started  time.Time  `json:"started"`
	OffsetMS float64    `json:"start_offset_ms"`
	// Now is the agent's clock as it answered: a follower estimates the
	// offset of the agent's clock from its own with it.
	Now time.Time `json:"now"`
	// The share's knobs as they are now.
	Mode         string  `json:"mode"`
	Concurrency  int     `json:"concurrency"`
	Rate         float64 `json:"rate"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Seed         uint64  `json:"seed"`
	// Sent = Completed + Failed + Incomplete + InFlight, over the run.
	Sent       int64 `json:"sent"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	Incomplete int64 `json:"incomplete"`
	InFlight   int64 `json:"in_flight"`
	// Streams sorts the requests in flight: waiting for a first token,
	// generating, stalled (load.Streams), the ages in milliseconds.
	Streams StreamsState `json:"streams"`
	// TTFTP99MS is the run's TTFT p99 so far.
	TTFTP99MS float64 `json:"ttft_p99_ms"`
	Done      bool    `json:"done"`
	// Final says /result is the run's last word: the load is over and
	// its reports are written. The agent serves it a while (--linger).
	Final bool `json:"final"`
	// Whole is the whole load's knobs as this agent knows them (its
	// flags', or the last control's); ControlSeq the last control's seq
	// it took (0: none).
	Whole      *Knobs `json:"whole,omitempty"`
	ControlSeq uint64 `json:"control_seq"`
	// Phase is the newest phase's id (a follower numbers the phases it
	// starts past every agent's); Scheduled counts the arrivals of the
	// run's generation so far and Backlog the open loop's arrivals not
	// yet sent (a capacity search over the agents reads both).
	Phase     int   `json:"phase"`
	Scheduled int64 `json:"scheduled"`
	Backlog   int   `json:"backlog"`
	// Compare says the agent loads a canary beside its baseline (its
	// --compare): this state and /result and /seconds are the
	// baseline's, /canary/state, /canary/result and /canary/seconds the
	// canary's; Canary says this state is the canary's.
	Compare bool `json:"compare,omitempty"`
	Canary  bool `json:"canary,omitempty"`
}

// Handler serves an agent: /healthz to anyone (it says "ok" and nothing
// more, for a readiness probe); GET /state, GET /result, GET /seconds
// (Seconds), their canary's under CanaryPrefix (WithCanary) and POST
// /control (a follower's Control; Board.Handler's) only with
// "Authorization: Bearer TOKEN", compared in constant time. A refused
// request is counted and told to logf (with its address, never what it
// sent), and so is every control applied.
type Handler struct {
	token []byte
	// sides are the baseline's (the one load's) and, for an agent of a
	// comparison, the canary's (served under CanaryPrefix; a zero one
	// serves nothing there).
	sides   [2]sideHandler
	control func(Control) (string, error) // nil: /control is 404
	logf    func(format string, args ...any)
	refused atomic.Int64
}

// sideHandler is what a handler serves of one load.
type sideHandler struct {
	state   func() State
	result  func(context.Context, io.Writer) (bool, error)
	seconds func(context.Context, int64) (*Seconds, error) // nil: /seconds is 404
}

// CanaryPrefix is where an agent of a comparison serves its canary's
// state, result and seconds: /canary/state, /canary/result,
// /canary/seconds. The controls are the pair's, at /control.
const CanaryPrefix = "/canary"

// ResultHeader is the header of a /result that says whether it is the
// run's last word (ResultFinal) or its figures so far: a follower knows
// from the answer itself, whatever /state said a moment before.
const (
	ResultHeader = "Infertop-Result"
	ResultFinal  = "final"
	ResultSoFar  = "so far"
)

// NewHandler serves state and result behind token. result (nil: none,
// /result is 404) writes the run's result so far as a run JSON (with its
// HdrHistograms, so report/merge merges the agents' exactly) and says
// whether it is final (ResultHeader); logf (nil: none) hears of every
// refusal.
func NewHandler(token []byte, state func() State, result func(context.Context, io.Writer) (bool, error), logf func(string, ...any)) *Handler {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	// Anyone who reaches the port makes lines: bounded, each sanitised
	// and cut (ratelog).
	lim := ratelog.New(LogLinesPerSecond, func(line string) { logf("%s", line) })
	return &Handler{token: bytes.Clone(token), sides: [2]sideHandler{{state: state, result: result}}, logf: lim.Logf}
}

// LogLinesPerSecond bounds the lines an agent's handler writes in a
// second: its refusals of requests anyone may send, and the controls it
// applies; the rest are counted.
const LogLinesPerSecond = 20

// WithCanary makes h serve a canary's state, result and seconds under
// CanaryPrefix (their contracts NewHandler's and WithSeconds'), before h
// serves; it returns h.
func (h *Handler) WithCanary(state func() State, result func(context.Context, io.Writer) (bool, error),
	seconds func(context.Context, int64) (*Seconds, error)) *Handler {
	h.sides[1] = sideHandler{state: state, result: result, seconds: seconds}
	return h
}

// WithControl makes h take the followers' controls (POST /control)
// with control (Board.Control's contract), before h serves; it returns h.
func (h *Handler) WithControl(control func(Control) (string, error)) *Handler {
	h.control = control
	return h
}

// WithSeconds makes h serve GET /seconds?since=N with seconds
// (Board.Seconds' contract), before h serves; it returns h.
func (h *Handler) WithSeconds(seconds func(context.Context, int64) (*Seconds, error)) *Handler {
	h.sides[0].seconds = seconds
	return h
}

// Refused counts the requests refused for their token.
func (h *Handler) Refused() int64 { return h.refused.Load() }

// ServeHTTP serves the paths.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, sd := r.URL.Path, &h.sides[0]
	if p, ok := strings.CutPrefix(path, CanaryPrefix+"/"); ok {
		path = "/canary" // none of the paths: 404
		if h.sides[1].state != nil && (p == "state" || p == "result" || p == "seconds") {
			path, sd = "/"+p, &h.sides[1]
		}
	}
	switch path {
	case "/healthz":
		io.WriteString(w, "ok\n")
		return
	case "/state", "/result", "/control", "/seconds":
	default:
		http.NotFound(w, r)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), h.token) != 1 {
		h.refused.Add(1)
		h.logf("agent: refused %s %s from %s: no or a wrong token", r.Method, r.URL.Path, r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="infertop agent"`)
		http.Error(w, "a token is needed", http.StatusUnauthorized)
		return
	}
	if path == "/control" {
		h.serveControl(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch path {
	case "/state":
		_ = json.NewEncoder(w).Encode(sd.state())
		return
	case "/seconds":
		h.serveSeconds(w, r, sd)
		return
	}
	if sd.result == nil {
		http.NotFound(w, r)
		return
	}
	var b bytes.Buffer
	final, err := sd.result(r.Context(), &b)
	if err != nil {
		h.logf("agent: /result: %v", err)
		http.Error(w, "no result now", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set(ResultHeader, ResultSoFar)
	if final {
		w.Header().Set(ResultHeader, ResultFinal)
	}
	_, _ = w.Write(b.Bytes())
}

// serveSeconds serves the seconds after since (token already checked).
func (h *Handler) serveSeconds(w http.ResponseWriter, r *http.Request, sd *sideHandler) {
	if sd.seconds == nil {
		http.NotFound(w, r)
		return
	}
	since, err := sinceParam(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s, err := sd.seconds(r.Context(), since)
	if err != nil {
		h.logf("agent: /seconds: %v", err)
		http.Error(w, "no seconds now", http.StatusServiceUnavailable)
		return
	}
	_ = json.NewEncoder(w).Encode(s)
}

// serveControl takes a follower's control (token already checked): a
// bounded, strict body; a refusal is 4xx with its reason; the answer is
// the agent's state after it.
func (h *Handler) serveControl(w http.ResponseWriter, r *http.Request) {
	if h.control == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	c, err := DecodeControl(http.MaxBytesReader(w, r.Body, MaxControlBytes))
	if err != nil {
		h.logf("agent: refused a control from %s: %v", r.RemoteAddr, err)
		code := http.StatusBadRequest
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), code)
		return
	}
	said, err := h.control(c)
	if err != nil {
		h.logf("agent: refused control %d from %s: %v", c.Seq, r.RemoteAddr, err)
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	if said != "" {
		h.logf("agent: control %d from %s: %s", c.Seq, r.RemoteAddr, said)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(h.sides[0].state())
}

// Serve serves h on ln until ctx ends, then shuts the server down.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaxHeaderBytes: 16 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("agent: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-done
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}
