package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the simulated endpoint. Create it with New, run its engine with
// Run (or Serve, which also listens), and mount Handler.
type Server struct {
	p     Params
	sched *scheduler
	// canary is the canary build's pod (Params.Canary), nil when none;
	// started is when Run began, from which its Delay counts.
	canary  *scheduler
	started atomic.Pointer[time.Time]
	records *recordLog
	metrics *serverMetrics
	nextID  atomic.Uint64
	stopped chan struct{}
	mux     *http.ServeMux
	clocks  sync.Map // net.Conn → *atomic.Pointer[time.Time]
	power   power
	created int64
	sent    atomic.Pointer[sentRecord] // see RecordTokens
	perf    *perfMetrics               // nil: no /perf_metrics (Params.PerfMetrics)
}

// New builds a server; it does nothing until Run or Serve.
func New(p Params) (*Server, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		p: p, sched: newScheduler(p), records: newRecordLog(1 << 16), metrics: newServerMetrics(p.FineBuckets),
		stopped: make(chan struct{}), mux: http.NewServeMux(), created: time.Now().Unix(),
	}
	if !p.Canary.IsZero() {
		s.canary = newScheduler(p.canaryParams())
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleGenerate(kindChat))
	s.mux.HandleFunc("POST /v1/completions", s.handleGenerate(kindCompletions))
	s.mux.HandleFunc("POST /v1/infer", s.handleGenerate(kindInfer))
	s.mux.HandleFunc("POST /v1/responses", s.handleGenerate(kindResponses))
	s.mux.HandleFunc("POST /v1/messages", s.handleGenerate(kindMessages))
	s.mux.HandleFunc("POST /v1/embeddings", s.handleGenerate(kindEmbed))
	s.mux.HandleFunc("POST /api/embed", s.handleGenerate(kindOllamaEmbed))
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("POST /tokenize", s.handleTokenize)
	s.mux.HandleFunc("POST /reset_prefix_cache", s.handleResetPrefixCache)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /metrics", s.handleMetrics)
	s.mux.HandleFunc("GET /dcgm", s.handleDCGM)
	if p.PerfMetrics > 0 {
		s.perf = newPerfMetrics(p.PerfMetrics)
		s.mux.HandleFunc("GET /perf_metrics", s.handlePerfMetrics)
	}
	return s, nil
}

// pods are the engine's pods: the stable one, then the canary's if set.
func (s *Server) pods() []*scheduler {
	if s.canary == nil {
		return []*scheduler{s.sched}
	}
	return []*scheduler{s.sched, s.canary}
}

// Params returns the server's model parameters.
func (s *Server) Params() Params { return s.p }

// Handler serves the HTTP API.
func (s *Server) Handler() http.Handler { return s.mux }

// Run steps the simulated engine until ctx ends. Requests that arrive while
// it is not running wait. Run starts no goroutine of its own: it runs in
// the caller's, which the caller guards as it guards its others.
func (s *Server) Run(ctx context.Context) {
	defer close(s.stopped)
	now := time.Now()
	s.started.Store(&now)
	runPods(ctx, s.sched, s.canary)
}

// ServeOption changes how Serve runs; the zero set of options is the
// plain server.
type ServeOption func(*serveOptions)

type serveOptions struct {
	guard func()
}

// WithGuard has Serve defer guard at the top of every goroutine it starts
// (the engine's loop and the HTTP accept loop), so the caller decides what
// a panic in them does: the dashboard restores the terminal before the
// panic is printed, which sim cannot do without importing the caller.
// guard is deferred directly, so a recover() inside it stops the panic (a
// goroutine so stopped has ended; Serve still returns when ctx ends). A nil
// guard, or none, does nothing. Goroutines net/http starts for each
// connection are not covered: net/http recovers a handler's panic itself.
func WithGuard(guard func()) ServeOption {
	return func(o *serveOptions) { o.guard = guard }
}

// Serve runs the engine and serves HTTP on ln until ctx ends, then shuts the
// listener down, giving open streams a second to finish. The HTTP server's
// own complaints go to errLog (nil: discarded, as under a dashboard, where
// nothing may write to the terminal).
func (s *Server) Serve(ctx context.Context, ln net.Listener, errLog *log.Logger, opts ...ServeOption) error {
	var o serveOptions
	for _, opt := range opts {
		opt(&o)
	}
	guard := o.guard
	// A no-op rather than a nil test inside a deferred closure: recover()
	// works only in the function deferred itself, so guard must be that.
	if guard == nil {
		guard = func() {}
	}
	if errLog == nil {
		errLog = log.New(io.Discard, "", 0)
	}
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
	s.ConfigureHTTP(hs)
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		defer guard()
		s.Run(ctx)
	}()
	errc := make(chan error, 1)
	go func() {
		defer guard()
		errc <- hs.Serve(ln)
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		hs.Close()
	}
	<-engineDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sim: serve: %w", err)
	}
	return nil
}

// connKey marks the per-connection arrival clock in a request's context.
type connKey struct{}

// ConfigureHTTP sets hooks on hs that timestamp each request when its first
// byte is read, before header parsing and handler dispatch, so a Record's
// Arrived is as close to the wire as the server can see. Without them
// Arrived is taken when the handler starts.
func (s *Server) ConfigureHTTP(hs *http.Server) {
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		clock := new(atomic.Pointer[time.Time])
		s.clocks.Store(c, clock)
		return context.WithValue(ctx, connKey{}, clock)
	}
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateActive:
			if v, ok := s.clocks.Load(c); ok {
				now := time.Now()
				v.(*atomic.Pointer[time.Time]).Store(&now)
			}
		case http.StateClosed, http.StateHijacked:
			s.clocks.Delete(c)
		}
	}
}

// arrival is when r's first byte was read, if ConfigureHTTP's hooks saw it.
func arrival(r *http.Request, fallback time.Time) time.Time {
	if clock, ok := r.Context().Value(connKey{}).(*atomic.Pointer[time.Time]); ok {
		if t := clock.Load(); t != nil && !t.After(fallback) {
			return *t
		}
	}
	return fallback
}

// Records returns the server-side record of recent requests (up to 65536),
// oldest first.
func (s *Server) Records() []Record { return s.records.all() }

type apiKind int

const (
	kindChat apiKind = iota
	kindCompletions
	kindInfer
	kindResponses   // the OpenAI Responses API (apis.go)
	kindMessages    // the Anthropic Messages API
	kindEmbed       // OpenAI's /v1/embeddings
	kindOllamaEmbed // Ollama's /api/embed
)

// embeds reports whether k answers with embeddings, not text.
func (k apiKind) embeds() bool { return k == kindEmbed || k == kindOllamaEmbed }

// reasons reports whether k streams reasoning apart from the answer.
func (k apiKind) reasons() bool { return k == kindChat || k == kindResponses || k == kindMessages }

// genRequest is the union of the request bodies the sim reads.
type genRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	Prompt              json.RawMessage   `json:"prompt"`
	Input               json.RawMessage   `json:"input"`
	Instructions        string            `json:"instructions"`
	System              json.RawMessage   `json:"system"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxOutputTokens     *int              `json:"max_output_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stream              bool              `json:"stream"`
	// EncodingFormat is the OpenAI embeddings' "float" (the default) or
	// "base64", which the OpenAI SDKs ask for by default.
	EncodingFormat string `json:"encoding_format"`
	// ResponseFormat and Tools ask chat for structured output or a tool
	// call (structured.go); Text is the Responses API's, whose format the
	// sim does not write.
	ResponseFormat json.RawMessage   `json:"response_format"`
	Tools          []json.RawMessage `json:"tools"`
	Text           *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// IncludeMetrics asks for the per-request metrics (vLLM's), sent
	// before the end of a stream (withMetrics).
	IncludeMetrics bool `json:"include_metrics"`
}

// handleModels lists the model, then its adapters as vLLM lists LoRA
// modules: each with the base model as its parent.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent,omitempty"`
		MaxModelLen int     `json:"max_model_len"`
	}
	list := []model{{ID: s.p.Model, Object: "model", Created: s.created, OwnedBy: "infertop-sim", Root: s.p.Model, MaxModelLen: s.p.MaxModelLen}}
	for _, a := range s.p.Adapters {
		list = append(list, model{ID: a.Name, Object: "model", Created: s.created, OwnedBy: "infertop-sim", Root: a.Name, Parent: &s.p.Model, MaxModelLen: s.p.MaxModelLen})
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{"object": "list", "data": list})
	w.Write(b)
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	w.Write(b)
}

func (s *Server) handleGenerate(kind apiKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived := arrival(r, time.Now())
		id := s.nextID.Add(1)
		traceID, requestID := traceOf(w, r)
		// Routed first, so that every answer of the pod, its refusals
		// too, says which build gave it, as a real pod's would.
		canary := s.toCanary(id, arrived)
		pod, fp := s.sched, ""
		switch {
		case canary:
			pod, fp = s.canary, FingerprintCanary
			w.Header().Set(BackendHeader, "canary")
		case s.canary != nil:
			fp = FingerprintStable
			w.Header().Set(BackendHeader, "stable")
		}
		var req genRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
			return
		}
		served, slowdown, ok := s.p.served(req.Model)
		if !ok {
			writeAPIError(w, kind, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
			return
		}
		prompt, inputs, err := promptTokens(kind, &req)
		if err != nil {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		imgs, err := imageTokens(kind, &req)
		if err != nil {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		prompt += imgs
		if kind == kindChat {
			prompt += s.p.ChatOverhead
		}
		maxTokens := 256
		if req.MaxTokens != nil {
			maxTokens = *req.MaxTokens
		}
		if req.MaxCompletionTokens != nil {
			maxTokens = *req.MaxCompletionTokens
		}
		if kind == kindResponses && req.MaxOutputTokens != nil {
			maxTokens = *req.MaxOutputTokens
		}
		if kind == kindMessages && req.MaxTokens == nil {
			writeAPIError(w, kind, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
			return
		}
		if kind.embeds() {
			maxTokens = 1 // the pooling step: one step after the prefill, no text
		}
		if f := req.EncodingFormat; kind == kindEmbed && f != "" && f != "float" && f != "base64" {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("encoding_format %q: want float or base64", f))
			return
		}
		if maxTokens < 1 {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", "max_tokens must be at least 1")
			return
		}
		// An embeddings batch is held to the model's length an input at a
		// time (on average: the sim keeps no per-input count), and to the
		// KV budget as a whole, which it must fit to be admitted at all.
		perSeq := prompt
		if kind.embeds() {
			perSeq = prompt / max(inputs, 1)
		}
		if perSeq+maxTokens > s.p.MaxModelLen || prompt+maxTokens > s.p.KVTokens {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
				"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
				min(s.p.MaxModelLen, s.p.KVTokens), prompt+maxTokens, prompt, maxTokens))
			return
		}
		if canary && s.draw(id, saltCanaryError) < s.p.Canary.ErrorRate {
			s.metrics.failed.Add(1)
			writeAPIError(w, kind, http.StatusInternalServerError, "InternalServerError", "simulated internal error (canary)")
			return
		}
		fault := s.p.Faults.pick(s.draw(id, saltFault))
		switch fault {
		case 0:
			s.metrics.failed.Add(1)
			writeAPIError(w, kind, http.StatusInternalServerError, "InternalServerError", "simulated internal error")
			return
		case 1:
			s.metrics.failed.Add(1)
			w.Header().Set("Retry-After", "1")
			writeAPIError(w, kind, http.StatusTooManyRequests, "RateLimitError", "simulated rate limit")
			return
		}

		broken := s.draw(id, saltInvalid) < s.p.Invalid || canary && s.draw(id, saltCanaryInvalid) < s.p.Canary.Invalid
		st, err := askedStructure(kind, &req, s.p.Seed^id, broken)
		if err == nil && req.Text != nil && len(req.Text.Format) > 0 {
			err = errStructuredAPI
		}
		if err != nil {
			writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		cached := 0
		if pod.prefix != nil && !kind.embeds() {
			cached = pod.prefix.match(cacheText(kind, &req), prompt)
		}
		q := &seq{prompt: prompt, maxTokens: maxTokens, prefillLeft: prompt - cached, arrived: arrived, wake: make(chan struct{}, 1), embed: kind.embeds(), pace: 1 / slowdown}
		q.queued.Store(-1)
		rec := Record{ID: id, API: kind.String(), Arrived: arrived, PromptTokens: prompt, CachedTokens: cached, Stream: req.Stream, Canary: canary, Inputs: inputs, Model: served,
			TraceID: traceID, RequestID: requestID}
		pod.submit(q)
		g := &generation{s: s, kind: kind, id: id, q: q, rec: &rec, fault: fault, fp: fp, model: served, st: st,
			usage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, metrics: req.IncludeMetrics, base64: kind == kindEmbed && req.EncodingFormat == "base64"}
		if kind.reasons() && st == nil {
			g.reasoning = s.p.Reasoning.of(maxTokens)
		}
		if req.Stream && kind != kindInfer && !kind.embeds() {
			g.stream(w, r)
		} else {
			g.whole(w, r)
		}
		g.keep()
	}
}

// keep adds the request's record and its metrics, once: before the last
// bytes of an answer are written, so a client that has its answer never
// reads a /metrics page or a record list without it, and after the
// handler for every other ending.
func (g *generation) keep() {
	if g.kept {
		return
	}
	g.kept = true
	if d := g.q.queued.Load(); d >= 0 {
		g.rec.Admitted = g.q.arrived.Add(time.Duration(d))
	}
	g.s.records.add(*g.rec)
	g.s.metrics.observe(g.rec)
	if g.s.perf != nil {
		g.s.perf.add(g.rec)
	}
}

func (k apiKind) String() string {
	return [...]string{"chat", "completions", "infer", "responses", "messages", "embeddings", "embed"}[k]
}

// promptTokens counts a request's prompt tokens, and its inputs (1 but
// for a batch of embeddings).
func promptTokens(kind apiKind, req *genRequest) (tokens, inputs int, err error) {
	switch kind {
	case kindResponses, kindMessages, kindEmbed, kindOllamaEmbed:
		return apiPromptTokens(kind, req)
	}
	n, err := textPromptTokens(kind, req)
	return n, 1, err
}

func textPromptTokens(kind apiKind, req *genRequest) (int, error) {
	switch kind {
	case kindChat:
		if len(req.Messages) == 0 {
			return 0, errors.New("messages must not be empty")
		}
		n := 0
		for _, raw := range req.Messages {
			k, err := messageTokens(raw)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	case kindCompletions:
		text, err := contentText(req.Prompt)
		if err != nil {
			return 0, fmt.Errorf("bad prompt: %w", err)
		}
		return CountTokens(text), nil
	default:
		text, err := contentText(req.Input)
		if err != nil {
			return 0, fmt.Errorf("bad input: %w", err)
		}
		return CountTokens(text), nil
	}
}

// contentText reads a string, an array of strings, or an array of
// {"type":"text","text":...} parts.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array")
	}
	out := ""
	for _, p := range parts {
		var str string
		if json.Unmarshal(p, &str) == nil {
			out += str + " "
			continue
		}
		var part struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(p, &part) == nil {
			out += part.Text + " "
		}
	}
	return out, nil
}

// BackendHeader is the response header that names the build that
// answered ("stable" or "canary") when a Canary is set; without one it is
// not sent.
const BackendHeader = "X-Infertop-Backend"

// FingerprintStable and FingerprintCanary are the system_fingerprint of
// every message of the stable and the canary build's answers when a
// Canary is set. Without one the field is left out, as vLLM leaves it:
// the sim's answers stay what they were, and there is no second build to
// tell apart.
const (
	FingerprintStable = "fp_sim_stable"
	FingerprintCanary = "fp_sim_canary"
)

// toCanary says whether request id, arrived at at, is the canary's: once
// the canary's delay has passed since Run began, a repeatable draw under
// its fraction. Drawn from the request's id, as the faults are, so a run
// with the same seed and order of arrivals routes the same requests, with
// no lock shared by the handlers.
func (s *Server) toCanary(id uint64, at time.Time) bool {
	if s.canary == nil {
		return false
	}
	t0 := s.started.Load()
	if t0 == nil || at.Sub(*t0) < s.p.Canary.Delay {
		return false
	}
	return s.draw(id, saltRoute) < s.p.Canary.Fraction
}

// The salts of the per-request draws, one per decision, so that a fault,
// the route and the canary's error are independent of one another.
const (
	saltFault       = 0 // as the draw always was: faults fall where they did
	saltRoute       = 0x5bd1e9955bd1e995
	saltCanaryError = 0xc2b2ae3d27d4eb4f
	saltInvalid     = 0x85ebca6b0fc2b2ae
	// The canary's own broken answers, apart from the draw both builds
	// share.
	saltCanaryInvalid = 0x27d4eb2f165667c5
)

// draw is a repeatable uniform draw in [0,1) for request id and a salt.
func (s *Server) draw(id, salt uint64) float64 {
	x := (s.p.Seed ^ salt) + id*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// generation writes one request's answer as the engine produces it.
// trickler writes one byte at a time, flushing each.
type trickler struct {
	w  io.Writer
	fl http.Flusher
}

func (t *trickler) Write(p []byte) (int, error) {
	for i := range p {
		if _, err := t.w.Write(p[i : i+1]); err != nil {
			return i, err
		}
		if t.fl != nil {
			t.fl.Flush()
		}
	}
	return len(p), nil
}

type generation struct {
	s        *Server
	kind     apiKind
	id       uint64
	q        *seq
	rec      *Record
	usage    bool
	metrics  bool        // per-request metrics asked for (include_metrics)
	fault    int         // index in faultNames, -1 for none
	fp       string      // system_fingerprint ("" for none)
	model    string      // the model or adapter served, as the answers name it
	st       *structured // a structured answer or tool call (nil: text)
	injected bool        // the mid-stream fault has happened
	kept     bool        // the record is kept (keep)
	// reasoning is how many of the first tokens are reasoning
	// (Params.Reasoning), streamed apart from the answer.
	reasoning int
	// base64 sends the embeddings as base64 of little-endian float32s.
	base64 bool
}

// abandon gives the sequence up: the client left or the server stopped.
func (g *generation) abandon() {
	g.q.cancelled.Store(true)
	g.rec.Cancelled = true
}

// wait blocks until the engine has news for this sequence; false when the
// client went away or the server stopped.
func (g *generation) wait(r *http.Request) bool {
	select {
	case <-g.q.wake:
		return true
	case <-r.Context().Done():
	case <-g.s.stopped:
	}
	g.abandon()
	return false
}

// streamBufs hold the per-stream write buffers: a new one per stream, grown
// whenever a stream fell behind its generation, was most of the sim's
// garbage at a thousand streams (and the client's GC paid for it when
// both share a process, as in the bench).
var streamBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8192); return &b }}

const maxPooledBuf = 256 << 10

func (g *generation) stream(w http.ResponseWriter, r *http.Request) {
	fl, _ := w.(http.Flusher)
	pause := g.s.p.Faults.Pause
	if pause <= 0 {
		pause = 2 * time.Second
	}
	sleep := func() bool {
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
		case <-g.s.stopped:
		}
		g.abandon()
		return false
	}
	if g.fault == 3 && !sleep() { // stall before the first byte
		return
	}
	var out io.Writer = w
	if g.fault == 7 { // trickle: one byte at a time
		out = &trickler{w: w, fl: fl}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	g.rec.Status = http.StatusOK
	if g.kind == kindResponses || g.kind == kindMessages {
		w.Header().Set("Connection", "keep-alive") // as Ollama sends it
	}
	enc := newChunkEncoder(g.kind, g.id, g.s.created, g.model, g.fp, g.s.perf != nil)
	pb := streamBufs.Get().(*[]byte)
	buf := (*pb)[:0]
	defer func() { // the buffer, grown by a burst of tokens, serves the next stream
		if cap(buf) <= maxPooledBuf {
			*pb = buf
			streamBufs.Put(pb)
		}
	}()
	sent, flushed := 0, 0
	for {
		if !g.wait(r) {
			return
		}
		done := g.q.done.Load() // before generated: once done, generated is final
		n := int(g.q.generated.Load())
		if n == sent && !done {
			continue
		}
		buf = buf[:0]
		first := sent
		for ; sent < n; sent++ {
			if sent == 0 {
				buf = enc.begin(buf, g.q.prompt)
			}
			if g.st != nil {
				buf = enc.structToken(buf, g.st, sent, g.q.maxTokens)
				continue
			}
			buf = enc.token(buf, Word(g.id, sent), sent < g.reasoning)
		}
		if done {
			buf = enc.end(buf, g.q.prompt, n, min(g.reasoning, n), g.usage)
		}
		if half := g.q.maxTokens / 2; g.fault >= 2 && g.fault <= 6 && g.fault != 3 && sent >= half && !g.injected {
			g.injected = true
			switch g.fault {
			case 2: // reset the connection after what was written so far
				w.Write(buf)
				if fl != nil {
					fl.Flush()
				}
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					if tc, ok := conn.(*net.TCPConn); ok {
						tc.SetLinger(0)
					}
					conn.Close()
				}
				g.abandon()
				return
			case 4: // stall half way
				w.Write(buf)
				if fl != nil {
					fl.Flush()
				}
				buf = buf[:0]
				if !sleep() {
					return
				}
			case 5:
				buf = append(buf, "data: {\"choices\":[{\"delta\":{\"content\":\"oops\"}\n\n"...)
			case 6:
				buf = append(buf, "data: {\"pad\":\""...)
				buf = append(buf, strings.Repeat("x", 2<<20)...)
				buf = append(buf, "\"}\n\n"...)
			}
		}
		// Stamped as the write begins: a client may read the bytes, and
		// stamp its own end, before this goroutine runs again after the
		// flush (on a busy machine, milliseconds later), and a record
		// must never end after its client saw the tokens.
		now := time.Now()
		if done && g.metrics { // the record's times as this write stamps them
			buf = g.withMetrics(buf, enc, now, n)
		}
		if n > 0 {
			if g.rec.FirstToken.IsZero() {
				g.rec.FirstToken = now
			}
			if n > g.reasoning && first <= g.reasoning && g.rec.FirstAnswer.IsZero() {
				g.rec.FirstAnswer = now // this write holds the answer's first token
			}
			g.rec.LastToken = now
			g.rec.OutputTokens = n
			g.rec.ReasoningTokens = min(g.reasoning, n)
		}
		if done {
			g.keep()
		}
		if _, err := out.Write(buf); err != nil {
			g.abandon()
			return
		}
		if fl != nil {
			fl.Flush()
		}
		g.s.countSent(now, sent-flushed)
		flushed = sent
		if done {
			return
		}
	}
}

func (g *generation) whole(w http.ResponseWriter, r *http.Request) {
	for !g.q.done.Load() {
		if !g.wait(r) {
			return
		}
	}
	n := int(g.q.generated.Load())
	now := time.Now()
	g.rec.FirstToken, g.rec.LastToken, g.rec.OutputTokens, g.rec.Status = now, now, n, http.StatusOK
	enc := newChunkEncoder(g.kind, g.id, g.s.created, g.model, g.fp, g.s.perf != nil)
	w.Header().Set("Content-Type", "application/json")
	if g.kind.embeds() {
		g.rec.OutputTokens = 0
		g.keep()
		w.Write(enc.embeddings(g.rec.Inputs, g.q.prompt, g.base64))
		return
	}
	if g.st != nil {
		g.rec.FirstAnswer = now
		g.keep()
		w.Write(enc.structWhole(nil, g.st, g.q.prompt, n))
		return
	}
	nr := min(g.reasoning, n)
	g.rec.ReasoningTokens, g.rec.FirstAnswer = nr, now
	text := make([]byte, 0, n*6)
	for i := range n {
		text = append(text, ' ')
		text = append(text, Word(g.id, i)...)
	}
	cut := reasoningBytes(text, nr)
	g.keep()
	w.Write(enc.whole(nil, string(text[:cut]), string(text[cut:]), g.q.prompt, n, nr))
}

// Record is the server's own account of one request.
type Record struct {
	ID  uint64
	API string
	// Arrived is when the handler started, after the request's headers.
	Arrived time.Time
	// Admitted is when the engine took it out of the queue.
	Admitted time.Time
	// FirstToken and LastToken are when the first and last output were
	// written and flushed to the connection.
	FirstToken, LastToken      time.Time
	PromptTokens, OutputTokens int
	// CachedTokens is how many of the prompt's tokens the prefix cache
	// held (their prefill skipped).
	CachedTokens int
	// SpecAccepted and SpecDrafted are speculative decoding's counts
	// for the answer (Params.SpecDecode), as its metrics chunk said them.
	SpecAccepted, SpecDrafted int
	Status                    int
	Stream                    bool
	// Cancelled is true when the client left (or the server stopped) early.
	Cancelled bool
	// Canary is true when the canary build served it (Params.Canary).
	Canary bool
	// Model is the model or adapter that served it (Params.Adapters).
	Model string
	// FirstAnswer is when the first token of the answer, after the
	// reasoning, was written and flushed (FirstToken when there is no
	// reasoning); ReasoningTokens is how many of OutputTokens were
	// reasoning (Params.Reasoning).
	FirstAnswer     time.Time
	ReasoningTokens int
	// Inputs is the batch of an embeddings request (1 for the others).
	Inputs int
	// TraceID is the trace id of the request's W3C traceparent (empty:
	// none, or not a valid one); RequestID its x-request-id, which the
	// answer echoes (see traceOf).
	TraceID, RequestID string
}

// TTFO is the server-side time to the first token of the answer.
func (r Record) TTFO() time.Duration { return r.FirstAnswer.Sub(r.Arrived) }

// reasoningBytes is where the first r words of text (each after a space)
// end.
func reasoningBytes(text []byte, r int) int {
	for i, c := range text {
		if c == ' ' {
			if r == 0 {
				return i
			}
			r--
		}
	}
	return len(text)
}

// TTFT is the server-side time to first token.
func (r Record) TTFT() time.Duration { return r.FirstToken.Sub(r.Arrived) }

// E2E is the server-side time to the last token.
func (r Record) E2E() time.Duration { return r.LastToken.Sub(r.Arrived) }

// Queued is the time spent waiting for a slot.
func (r Record) Queued() time.Duration {
	if r.Admitted.IsZero() {
		return 0
	}
	return r.Admitted.Sub(r.Arrived)
}
