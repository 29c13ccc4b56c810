package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/readlimit"
	"golang.org/x/net/http2"
)

// TTFTMode chooses which stream message ends TTFT.
type TTFTMode int

const (
	// TTFTFirstOutput ends TTFT at the first message carrying generated text
	// (content, reasoning or text).
	TTFTFirstOutput TTFTMode = iota
	// TTFTFirstChunk ends TTFT at the first message with a non-empty choices
	// list, even if its text is empty, as vLLM's serving benchmark does.
	TTFTFirstChunk
)

// ParseTTFTMode reads "first-output" or "first-chunk".
func ParseTTFTMode(s string) (TTFTMode, error) {
	switch s {
	case "first-output", "":
		return TTFTFirstOutput, nil
	case "first-chunk":
		return TTFTFirstChunk, nil
	}
	return 0, fmt.Errorf("unknown TTFT mode %q (want first-output or first-chunk)", s)
}

// Config describes the endpoint and how to talk to it.
type Config struct {
	// URL is the chat-completions endpoint (see ChatURL to derive it).
	URL   string
	Model string
	// APIKey is sent as a bearer token; it never appears in a Result.
	APIKey string
	// Timeout bounds one request from start to the end of its stream.
	Timeout time.Duration
	// ConnectTimeout bounds the TCP (and TLS) connection setup.
	ConnectTimeout time.Duration
	// MaxConns sizes the keep-alive pool; at least the concurrency.
	MaxConns int
	TTFT     TTFTMode
	// Header holds extra request headers.
	Header http.Header
	// API is the protocol (default openai-chat); NoStream asks for whole
	// answers, where TTFT cannot be observed.
	API      Kind
	NoStream bool
	// Body shapes the request bodies; Generic describes a generic API.
	Body    BodyOptions
	Generic GenericOptions
	// Insecure skips TLS verification; CACert adds a PEM file of roots.
	Insecure bool
	CACert   string
	// SplitBy, when set, reads every answer's group (Result.Group): the
	// backend that served it, from a response header or a field of its
	// messages.
	SplitBy SplitBy
	// ServerTimings asks the server for its own timings of each request
	// (see AskServerTimings; read into Result.Server).
	ServerTimings bool
	// DrainWait bounds the wait for what a server sends after its answer
	// (default DefaultDrainWait); a test of a server that holds the
	// stream open sets it short instead of waiting a second.
	DrainWait time.Duration
}

// Request is what varies from one request to the next: a prompt, or a
// conversation (chat kinds send it as messages, the others as its text).
type Request struct {
	Prompt    string
	Messages  []Message
	MaxTokens int
	// Model, if set, is the model this request asks for instead of
	// Config.Model (a mix of models or adapters under one endpoint).
	Model string
	// Live, if set, is told of every timed message as it arrives (see
	// Live); Do begins it at the request's Start.
	Live *Live
	// Answer, if set, is given the answer's text (see AnswerText); Do
	// resets it at the request's start.
	Answer *AnswerText
	// out gathers the answer for the judge (BodyOptions.Output); Do's.
	out *outputTaker
	// Trace is the request's trace context, sent as its traceparent and
	// x-request-id (zero: Do draws a random one).
	Trace TraceContext
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// text is the request as one prompt.
func (r Request) text() string {
	if len(r.Messages) == 0 {
		return r.Prompt
	}
	var b strings.Builder
	for i, m := range r.Messages {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(m.Content)
	}
	return b.String()
}

// messages is the request as a conversation.
func (r Request) messages() []Message {
	if len(r.Messages) > 0 {
		return r.Messages
	}
	return []Message{{Role: "user", Content: r.Prompt}}
}

// Client sends requests to one endpoint. It is safe for concurrent use.
type Client struct {
	cfg   Config
	proto protocol
	http  *http.Client
	tr    *http.Transport
	// fresh sends the one retry of a request lost on a reused connection
	// (see mayRetry). Its transport is a clone of tr with keep-alives off:
	// net/http then neither takes a connection from a pool nor puts one
	// back, so every request it sends dials its own. req.Close would not
	// do: the transport still hands such a request an idle connection (it
	// only closes it afterwards), possibly another one the server has just
	// closed.
	fresh  *http.Client
	header http.Header // every request's, shared
	// secrets are what redact removes from any text a Result or error
	// carries: the API key and the value of every configured header (a
	// 401 body may echo an x-api-key back), longest first.
	secrets []string
	// resetPath is the index+1 in cacheResetPaths of the server's
	// prefix cache reset endpoint, once one answered (0: not yet).
	resetPath atomic.Int32
}

// maxHeaderBytes bounds one response's headers (an inference server's
// are under a kilobyte; a gateway's limit is 8 to 64 KB).
const maxHeaderBytes = 64 << 10

// New returns a client for cfg. It refuses a configuration Validate
// refuses, or a URL that is no http(s) endpoint, with a *SettingError.
func New(cfg Config) (*Client, error) {
	if err := CheckURL(cfg.URL); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.DrainWait == 0 {
		cfg.DrainWait = DefaultDrainWait
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 256
	}
	if cfg.ServerTimings {
		cfg.Body.Extra = AskServerTimings(cfg.API, maps.Clone(cfg.Body.Extra))
	}
	proto, err := newProtocol(&cfg)
	if err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when asked for
	if cfg.CACert != "" {
		pem, err := readlimit.File(cfg.CACert, readlimit.Certs)
		if err != nil {
			return nil, &SettingError{SettingCACert, err}
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &SettingError{SettingCACert, fmt.Errorf("%s: no PEM certificates in it", cfg.CACert)}
		}
		tlsCfg.RootCAs = pool
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: cfg.ConnectTimeout,
		TLSClientConfig:     tlsCfg,
		MaxIdleConns:        cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // compression would delay and batch stream chunks
		// An endpoint's headers are bounded like its body: Go's default
		// is 10 MB a response, and 64 requests in flight answered with
		// 9 MB of headers each held a run at 625 MB.
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	ftr := tr.Clone() // before HTTP/2 is set up: a clone would share tr's HTTP/2 connections
	ftr.DisableKeepAlives = true
	for _, t := range []*http.Transport{tr, ftr} {
		if err := configureHTTP2(t); err != nil {
			return nil, err
		}
	}
	c := &Client{
		cfg: cfg, proto: proto, tr: tr,
		http:    &http.Client{Transport: tr, CheckRedirect: noRedirect},
		fresh:   &http.Client{Transport: ftr, CheckRedirect: noRedirect},
		secrets: secretsOf(cfg),
	}
	c.header = http.Header{"Content-Type": {"application/json"}}
	switch proto.framing() {
	case frameSSE:
		c.header.Set("Accept", "text/event-stream")
	case frameNDJSON:
		c.header.Set("Accept", "application/x-ndjson")
	default:
		c.header.Set("Accept", "application/json")
	}
	c.setHeaders(c.header)
	return c, nil
}

// noRedirect keeps a client from following any redirect: net/http replays
// a POST on a 307 or 308 to wherever it points, and drops only
// Authorization on the way to another host, so an x-api-key or any custom
// credential header would go with it. The 3xx is the answer (HTTP3xx).
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// minSecret is the shortest header value redacted: shorter ones ("1",
// "yes") would blank out ordinary words of a message, and guess nothing.
const minSecret = 4

// secretsOf lists the texts to redact for cfg: the API key, each header
// value and, for a value with a scheme ("Bearer tok", "Basic dXNl"), the
// credential after it too, since a body may echo it alone. Longest first,
// so a value holding another is removed whole.
func secretsOf(cfg Config) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); len(v) >= minSecret {
			out = append(out, v)
		}
	}
	add(cfg.APIKey)
	// A URL's user and password go out as Basic auth (net/http sends them
	// so): a 401 that echoes the header, or the password, must not carry
	// them into a report.
	if u, err := url.Parse(cfg.URL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
			add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw)))
		}
	}
	for _, vs := range cfg.Header {
		for _, v := range vs {
			add(v)
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				add(cred)
			}
		}
	}
	out = encodings(out)
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// encodings are the secrets and every encoding of them a server may echo
// them in (issue 40, item 14: "Basic%20...%3D" reached the reports): as
// a query or a path escapes them (both cases of the hex), as JSON quotes
// them, and in base64 (standard and URL alphabets, padded or not).
func encodings(secrets []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if len(v) >= minSecret && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	lowerHex := regexp.MustCompile(`%[0-9A-F]{2}`)
	for _, s := range secrets {
		add(s)
		for _, e := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			add(e)
			add(lowerHex.ReplaceAllStringFunc(e, strings.ToLower))
		}
		if j, err := json.Marshal(s); err == nil {
			add(string(j[1 : len(j)-1]))
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			add(enc.EncodeToString([]byte(s)))
		}
	}
	return out
}

// setHeaders adds the configured headers and the API key to h.
func (c *Client) setHeaders(h http.Header) {
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	setAuth(c.cfg.API, c.cfg.APIKey, h)
}

// timing collects a request's connection phases from httptrace. The
// transport may dial on its own goroutine and hand the request another
// connection that came free first, so the dial's callbacks can run after
// the response: every field is behind the mutex.
type timing struct {
	mu                                       sync.Mutex
	dnsStart, connStart, tlsStart, firstByte time.Time
	gotConn, wrote                           time.Time
	dns, connect, tls                        time.Duration
	reused                                   bool
	written                                  int // attempts written (WroteRequest)
}

func (t *timing) set(f func()) {
	t.mu.Lock()
	f()
	t.mu.Unlock()
}

func (t *timing) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:             func(httptrace.DNSStartInfo) { t.set(func() { t.dnsStart = time.Now() }) },
		DNSDone:              func(httptrace.DNSDoneInfo) { t.set(func() { t.dns = time.Since(t.dnsStart) }) },
		ConnectStart:         func(string, string) { t.set(func() { t.connStart = time.Now() }) },
		ConnectDone:          func(string, string, error) { t.set(func() { t.connect = time.Since(t.connStart) }) },
		TLSHandshakeStart:    func() { t.set(func() { t.tlsStart = time.Now() }) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { t.set(func() { t.tls = time.Since(t.tlsStart) }) },
		GotConn:              func(i httptrace.GotConnInfo) { t.set(func() { t.reused, t.gotConn = i.Reused, time.Now() }) },
		GotFirstResponseByte: func() { t.set(func() { t.firstByte = time.Now() }) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { t.set(func() { t.written, t.wrote = t.written+1, time.Now() }) },
	}
}

// lostOnReuse reports whether the attempt got a reused connection and no
// byte of a response on it: the server cannot have begun an answer.
func (t *timing) lostOnReuse() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reused && t.firstByte.IsZero()
}

// answered reports whether any byte of a response has come.
func (t *timing) answered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.firstByte.IsZero()
}

// fill copies the phases into res once the response headers are in. On a
// reused connection there was no setup to time, whatever a background dial
// reported.
func (t *timing) fill(res *Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	res.Written = t.written
	res.ConnReused = t.reused
	if !t.reused {
		res.DNS, res.Connect, res.TLS = t.dns, t.connect, t.tls
	}
	if !t.firstByte.IsZero() {
		res.TTFB = t.firstByte.Sub(res.Start)
	}
	// The HTTP phases, in order and within TTFB: over HTTP/2 the
	// transport may write a request again (and call WroteRequest) after
	// the first byte of an answer to the other attempt, so each is held
	// between its neighbours.
	if !t.gotConn.IsZero() {
		res.Blocked = max(t.gotConn.Sub(res.Start), 0)
		if res.TTFB > 0 {
			res.Blocked = min(res.Blocked, res.TTFB)
		}
		if !t.wrote.IsZero() {
			res.Sending = max(t.wrote.Sub(t.gotConn), 0)
			if res.TTFB > 0 {
				res.Sending = min(res.Sending, res.TTFB-res.Blocked)
			}
		}
	}
}

// writes is how many attempts were written so far.
func (t *timing) writes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// configureHTTP2 has t speak HTTP/2 through golang.org/x/net/http2
// instead of the copy bundled in net/http. The bundled client (Go 1.26)
// deadlocks for good on a WINDOW_UPDATE that overflows a stream's window:
// processWindowUpdate holds the connection's mutex and abortStream takes
// it again, and every goroutine of that connection, a cancelled request
// or CloseIdleConnections too, then waits on it. x/net's resets the
// stream (endStreamErrorLocked) and goes on. x/net marks its client
// deprecated in favour of http.Transport.Protocols, which in Go 1.26 means
// the bundled copy with the deadlock: until a Go release bundles the fix,
// x/net's is the one that ends.
func configureHTTP2(t *http.Transport) error {
	//lint:ignore SA1019 the non-deprecated way is the bundled client that deadlocks (see above)
	if _, err := http2.ConfigureTransports(t); err != nil {
		return fmt.Errorf("http2: %w", err)
	}
	return nil
}

// closeWait bounds Close: releasing idle connections takes each
// connection's lock, and a transport stuck on one (whatever the cause)
// must not hold the end of a run, which has its reports to write.
const closeWait = time.Second

// Close releases idle connections, waiting closeWait at most for the
// transport; past it the release goes on in the background.
func (c *Client) Close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer crash.Recover()
		c.tr.CloseIdleConnections()
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Config returns the client's configuration with the API key removed.
func (c *Client) Config() Config {
	cfg := c.cfg
	cfg.APIKey = ""
	return cfg
}

// Do sends one request and measures it. It never panics on a bad server and
// always returns a Result; a failure is a Result with an error class.
//
// A request lost on a reused connection before any byte of an answer (the
// race with a server closing a kept-alive connection, see mayRetry) is sent
// once more on a new connection, as the official SDKs do, and marked
// Retried. Start stays the first attempt's, so TTFT and E2E include the time
// the lost attempt took: that wait is the client's real experience.
func (c *Client) Do(ctx context.Context, req Request) Result {
	var res Result
	model := c.cfg.Model
	if req.Model != "" {
		model, res.Model = req.Model, req.Model
	}
	if c.cfg.SplitBy.Model {
		// Before the request: a model's failures are its group's too.
		res.Group = groupValue(model)
	}
	body, err := c.proto.body(model, req)
	if err != nil {
		res.Class, res.Err = Malformed, err.Error()
		return res
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if req.Trace.IsZero() {
		req.Trace = randomTrace()
	}
	header, sent := traceHeader(c.header, req.Trace)
	if sent {
		res.Trace = req.Trace
	}
	tr := new(timing)
	hreq, err := c.newRequest(rctx, tr, header, body)
	if err != nil {
		res.Class, res.Err = Malformed, c.redact(err.Error())
		return res
	}

	// One allocation for the message times, sized by the answer asked
	// for, instead of a slice grown by doubling as messages come; kept
	// from one request to the next.
	req.Live.Reserve(min(max(req.MaxTokens, 16), 4096))
	res.Start = time.Now()
	req.Live.Begin(res.Start)
	req.Answer.Reset()
	resp, err := c.http.Do(hreq)
	written := 0 // the lost attempt's writes, before its timing is replaced
	if err != nil && mayRetry(ctx, rctx, tr, err) {
		written = tr.writes()
		// A new timing: the lost attempt's trace may still be written to
		// by a dial the transport started for it, and the fresh attempt's
		// connection phases are the ones this request's answer paid for.
		tr = new(timing)
		if hreq, err = c.newRequest(rctx, tr, header, body); err == nil {
			res.Retried = true
			resp, err = c.fresh.Do(hreq)
		}
	}
	tr.fill(&res)
	res.Written += written
	if err != nil {
		res.E2E = time.Since(res.Start)
		res.Class = classify(ctx, err, false)
		res.Err = c.redact(err.Error())
		return res
	}
	defer resp.Body.Close()
	res.Status, res.Proto = resp.StatusCode, resp.Proto
	if h := c.cfg.SplitBy.Header; h != "" {
		// Before the status is looked at: a failing backend's errors are
		// its group's, as its answers are.
		res.Group = groupValue(resp.Header.Get(h))
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		res.E2E = time.Since(res.Start)
		res.Class, res.Err = HTTP3xx, c.redirectErr(resp)
		c.drain(resp.Body, cancel)
		return res
	}
	if resp.StatusCode != http.StatusOK {
		excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		res.E2E = time.Since(res.Start)
		res.Class = statusClass(resp.StatusCode)
		res.Err = c.redact(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorText(excerpt)))
		res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		c.drain(resp.Body, cancel)
		return res
	}
	fr := c.proto.framing()
	ct := resp.Header.Get("Content-Type")
	if fr == frameSSE && sentJSON(ct) {
		fr, res.Unstreamed = frameWhole, true // the server ignored "stream": read the whole answer
	}
	if sentHTML(ct) { // a proxy's or a login page, not an API's answer
		excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		res.E2E = time.Since(res.Start)
		res.Class, res.Err = Malformed, c.redact("HTTP 200 with a web page (Content-Type text/html), not an API answer: "+errorText(excerpt))
		c.drain(resp.Body, cancel)
		return res
	}
	var u *usage
	if !c.cfg.Body.Output.IsZero() {
		req.out = newOutputTaker()
	}
	if fr == frameWhole {
		u = c.readWhole(ctx, resp.Body, &res, req.Answer, req.out)
	} else {
		u = c.readStream(ctx, resp.Body, fr, &res, req)
	}
	if res.Class == OK {
		c.finish(&res, req, u)
	}
	if res.Class == OK && req.out != nil {
		res.Output = OutputResult{Judged: true, Verdict: c.cfg.Body.Output.Judge(req.out.answer())}
	}
	if res.Class == OK {
		c.drain(resp.Body, cancel)
	}
	return res
}

// sentJSON reports whether a Content-Type is application/json. The
// usual answer, an event stream, is known by its prefix without
// ParseMediaType's allocations.
func sentJSON(ct string) bool {
	if strings.HasPrefix(ct, "text/event-stream") {
		return false
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "application/json"
}

// sentHTML reports whether a Content-Type is a web page (text/html): no
// API answers with one, a proxy or a login page does.
func sentHTML(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/html"
}

// newRequest builds the POST of body with header, traced into tr, under
// rctx.
func (c *Client) newRequest(rctx context.Context, tr *timing, header http.Header, body []byte) (*http.Request, error) {
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, tr.trace()), http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// Built once (New) but for the trace's two (traceHeader), read only:
	// neither http.Client nor the transport writes to a request's headers
	// without copying them first.
	hreq.Header = header
	hreq.GetBody = func() (io.ReadCloser, error) {
		if tr.answered() {
			// A redirect, which noRedirect then refuses: its answer is
			// the result.
			return io.NopCloser(bytes.NewReader(body)), nil
		}
		return nil, errRefused
	}
	return hreq, nil
}

// errRefused is what a request's GetBody answers while no response has
// come: the transport asks for the body only to send the request again by
// itself. Over HTTP/2 it does so after a REFUSED_STREAM up to seven
// times, and after a GOAWAY on a new connection without end, with nothing
// to show for it (a server answering every request with GOAWAY received
// 558 POSTs in 18 s for 2 counted). Refused here, the attempt fails with this error, and
// mayRetry makes the one retry, counted, as on HTTP/1.1. GetBody left nil
// would refuse too, but with an error known only by its text.
var errRefused = errors.New("refused unprocessed: an HTTP/2 GOAWAY or REFUSED_STREAM, or a connection lost before the request was written")

// mayRetry reports whether a failed attempt may be sent again: it failed
// with a connection error on a reused connection before any byte of a
// response arrived, and neither the caller nor the request's timeout has
// ended it. That is the race a keep-alive invites: a server (llama.cpp's,
// through cpp-httplib) says "Keep-Alive: timeout=5, max=100", closes the
// connection after a streamed answer anyway, and the next POST on it meets
// EOF or a reset. Go's transport retries that only for idempotent requests;
// an Idempotency-Key header would make it retry a POST too, but onto
// whatever idle connection comes next (maybe as stale), with no end and no
// trace of it. The server never began an answer, so sending it again on a
// new connection cannot double a request the client would count.
//
// Never for a fresh connection (a server that hangs up on a new
// connection is failing, and would fail again), a timeout, a cancelled
// request, or once any response byte came (the server was answering).
//
// And for a request the transport wanted to send again by itself
// (errRefused): HTTP/2 says the server processed none of it, on a reused
// connection or a new one (a server at its stream limit refuses streams
// on any). It is sent once more, like the others, on a new connection.
func mayRetry(ctx, rctx context.Context, tr *timing, err error) bool {
	if ctx.Err() != nil || rctx.Err() != nil {
		return false
	}
	if errors.Is(err, errRefused) {
		return true
	}
	if !tr.lostOnReuse() || classify(ctx, err, false) != Connection {
		return false
	}
	return staleConnError(err)
}

// staleConnError reports whether err is what a request gets from a
// connection the server closed under it: EOF, a reset, a broken pipe, or
// net/http's own "server closed idle connection" (unexported, so matched by
// its text).
func staleConnError(err error) bool {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return true
	}
	return strings.Contains(err.Error(), "server closed idle connection")
}

// drainMax and Config.DrainWait bound drain: a server that keeps a stream
// open after its answer, or sends more than a little after it, loses the
// connection instead of holding a worker.
const drainMax = 64 << 10

// drain reads what is left of a response after its answer (the chunked
// encoding's last chunk, usually on its way) so the connection goes back
// to the pool: closed unread, it would be dropped, and the next request
// would pay a new TCP (and TLS) handshake inside its TTFT. Against the sim
// a third of the connections were being dropped that way. cancel ends the
// request's context, which stops a read that waits past the drain wait.
func (c *Client) drain(body io.Reader, cancel context.CancelFunc) {
	t := time.AfterFunc(c.cfg.DrainWait, cancel)
	io.Copy(io.Discard, io.LimitReader(body, drainMax))
	t.Stop()
}

// redirectErr describes a 3xx answer: where it pointed, redacted (a
// presigned URL carries its credentials in the query).
func (c *Client) redirectErr(resp *http.Response) string {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return fmt.Sprintf("HTTP %d without a Location; infertop does not follow redirects", resp.StatusCode)
	}
	if u, err := resp.Request.URL.Parse(loc); err == nil {
		loc = u.String() // relative to the request, as a client would go
	}
	return c.redact(fmt.Sprintf("HTTP %d: redirected to %s; infertop does not follow redirects", resp.StatusCode, RedactURL(loc)))
}

// The bound on the messages of one request, and on the output count a
// server may report for it: OutputCap(max_tokens) is
// outputCapPerToken×max_tokens + outputCapMargin, or outputCapNoMax when
// the request set no max_tokens. Every timed message of a stream takes a
// slot of the request's Live at least, so a server sending endless tiny messages and
// never [DONE] grew a request without end (1.6 GB in ten seconds).
// Four times leaves room for servers that send a message per token of
// reasoning and of text, or empty keep-alive deltas, or count special
// tokens; 64 for the role, finish, usage and end messages of short answers.
const (
	outputCapPerToken = 4
	outputCapMargin   = 64
	outputCapNoMax    = 1 << 20
)

// OutputCap is the most messages a stream asked for maxTokens may send,
// and the largest output count believed for it (see the constants above).
func OutputCap(maxTokens int) int {
	if maxTokens <= 0 {
		return outputCapNoMax
	}
	return outputCapPerToken*min(maxTokens, (math.MaxInt-outputCapMargin)/outputCapPerToken) + outputCapMargin
}

// readStream reads a streamed answer message by message (SSE events or
// NDJSON lines), timing every message that carries output, and returns the
// server's usage, if it gave one. A stream that sends more than
// OutputCap(maxTokens) messages ends as Malformed.
func (c *Client) readStream(ctx context.Context, body io.Reader, fr framing, res *Result, req Request) *usage {
	st := getStreamState(body)
	defer st.release()
	var (
		p         = &st.parser
		sse       *SSEReader
		nd        *NDJSONReader
		finished  bool
		u         *usage
		msgs      int
		maxTokens = req.MaxTokens
		msgCap    = OutputCap(maxTokens)
		field     = c.cfg.SplitBy.Field
		live      = req.Live
	)
	if fr == frameSSE {
		sse = &st.sse
	} else {
		nd = &st.nd
	}
	for {
		var data []byte
		var name string
		var err error
		if sse != nil {
			var ev Event
			ev, err = sse.Next()
			data, name = ev.Data, ev.Name
		} else {
			data, err = nd.Next()
		}
		now := time.Since(res.Start)
		if err != nil {
			if err == io.EOF && (finished || c.proto.endsOnEOF()) {
				break // the answer was complete; only an end marker is missing
			}
			res.E2E = now
			switch {
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				res.Class, res.Err = StreamCut, "stream ended before the answer was complete"
			case errors.Is(err, ErrLineTooLong), errors.Is(err, ErrEventTooLong):
				res.Class, res.Err = Malformed, err.Error()
			default:
				res.Class, res.Err = classify(ctx, err, true), c.redact(err.Error())
			}
			return nil
		}
		if name == "error" {
			res.E2E = now
			res.Class, res.Err = streamErrorClass(data), c.redact("error in stream: "+string(data))
			return nil
		}
		if sse != nil && len(bytes.TrimSpace(data)) == 0 {
			continue // an empty data field, sent by some servers as a keep-alive
		}
		if msgs++; msgs > msgCap {
			res.E2E = now
			res.Class, res.Err = Malformed, fmt.Sprintf("stream sent more than %d messages (the cap on one request's messages, %s)", msgCap, capRule(maxTokens))
			return nil
		}
		info, err := c.proto.parse(p, data)
		if err != nil {
			res.E2E = now
			if nd != nil && nd.Partial {
				res.Class, res.Err = StreamCut, "stream ended in the middle of a message"
			} else {
				res.Class, res.Err = Malformed, c.redact(err.Error())
			}
			return nil
		}
		if info.done {
			break
		}
		if info.errMsg != nil {
			res.E2E = now
			res.Class, res.Err = streamErrorClass(info.errMsg), c.redact("error in stream: "+string(info.errMsg))
			return nil
		}
		if len(info.id) > 0 && res.ID == "" {
			res.ID = string(info.id)
		}
		if req.out != nil {
			req.out.take(c.proto, data, false)
		}
		// The field is looked for in the first few messages and in those
		// that end the answer (a finish reason, the usage): servers that
		// send it at all send it in every chunk (OpenAI, llama.cpp) or in
		// the last, and scanning every message of a server that never does
		// (vLLM) would cost as much again as the fast path.
		if field != "" && res.Group == "" && (msgs <= groupLookMessages || info.finished || info.usage != nil) {
			c.readGroup(data, field, res)
		}
		if info.usage != nil {
			u = mergeUsage(u, info.usage)
		}
		if !info.output && mayCarryTimings(data) {
			readServerTimings(&st.timings, data, &res.Server)
		}
		finished = finished || info.finished
		if info.output {
			res.Messages++
			noteOutput(res, &info, now)
			if req.Answer != nil && !info.reasoningOnly() {
				req.Answer.take(c.proto, data, false)
			}
		}
		// In first-chunk mode every message with choices is timed, as vLLM's
		// benchmark does; otherwise only messages that carry output.
		timed := info.output || (c.cfg.TTFT == TTFTFirstChunk && info.choices)
		if timed {
			if !res.HasTTFT {
				res.HasTTFT, res.TTFT = true, now
			}
			mark := Timed
			if info.output {
				mark = Answer
				if info.reasoningOnly() {
					mark = Output
				}
			}
			live.Add(res.Start, now, mark)
			res.E2E = now
		}
		if info.finished && nd != nil {
			break // Ollama's done message is the last
		}
	}
	if !res.HasTTFT {
		res.E2E = time.Since(res.Start)
	}
	return u
}

// capRule says how OutputCap came to its figure, for messages.
func capRule(maxTokens int) string {
	if maxTokens <= 0 {
		return "with no max_tokens"
	}
	return fmt.Sprintf("%d×max_tokens %d + %d", outputCapPerToken, maxTokens, outputCapMargin)
}

// readWhole reads a non-streamed JSON answer: no TTFT can be observed, and
// none is reported (never E2E in its place). It returns the server's usage;
// answer, if not nil, is given the answer's text.
func (c *Client) readWhole(ctx context.Context, body io.Reader, res *Result, answer *AnswerText, out *outputTaker) *usage {
	whole := c.proto.limits().whole
	data, err := io.ReadAll(io.LimitReader(body, int64(whole)+1))
	res.E2E = time.Since(res.Start)
	if err != nil {
		res.Class, res.Err = classify(ctx, err, true), c.redact(err.Error())
		return nil
	}
	if len(data) > whole {
		res.Class, res.Err = Malformed, wholeTooLarge(whole).Error()
		return nil
	}
	st := getStreamState(nil) // for its parser
	defer st.release()
	st.bigParse = len(data) > keepBytes
	info, err := c.proto.parse(&st.parser, data)
	if err != nil {
		res.Class, res.Err = Malformed, c.redact(err.Error())
		return nil
	}
	if info.errMsg != nil {
		res.Class, res.Err = streamErrorClass(info.errMsg), c.redact("error: "+string(info.errMsg))
		return nil
	}
	res.ID = string(info.id)
	if f := c.cfg.SplitBy.Field; f != "" && res.Group == "" {
		c.readGroup(data, f, res)
	}
	if info.output {
		res.Messages = 1
		if info.reasoningOnly() {
			res.ReasoningMessages = 1
		}
		answer.take(c.proto, data, true)
	}
	if out != nil {
		out.take(c.proto, data, true)
	}
	res.Inputs = info.vectors
	if mayCarryTimings(data) {
		readServerTimings(&st.timings, data, &res.Server)
	}
	return info.usage
}

// groupLookMessages is how many of a stream's first messages are looked
// at for a SplitBy field (see readStream).
const groupLookMessages = 4

// readGroup sets res.Group from the message's field, if it carries it.
func (c *Client) readGroup(data []byte, field string, res *Result) {
	if v, ok := topString(data, field); ok {
		res.Group = groupValue(v)
	}
}

// promptCapMargin is added to twice the prompt's bytes for the largest
// input count believed: every tokenizer in use spends at most a token a
// byte (byte fallback) or two (a word's space marker), and the margin
// covers a chat template and a system prompt the server adds.
const promptCapMargin = 64 << 10

// finishTokens sets the token counts of a successful answer from the
// server's usage u (nil: none), or counts them. A count that
// cannot be true (negative, no int, output past OutputCap of the request's
// max_tokens, input past twice its prompt's bytes plus promptCapMargin) is
// set aside, as if absent, and UsageIgnored set.
func (c *Client) finishTokens(res *Result, req Request, u *usage) {
	var out, in int
	if u != nil {
		out, in = u.CompletionTokens, u.PromptTokens
	}
	if out < 0 || out > OutputCap(req.MaxTokens) {
		out, res.UsageIgnored = 0, true
	}
	if in < 0 || in > 2*promptBytes(req)+promptCapMargin {
		in, res.UsageIgnored = 0, true
	}
	if out > 0 {
		res.OutputTokens = out
	} else {
		res.OutputTokens, res.OutputEstimated = res.Messages, true
	}
	if in > 0 {
		res.InputTokens = in
	} else {
		res.InputEstimated = true
	}
}

// promptBytes is the length of the request's text, without building it.
func promptBytes(r Request) int {
	n := len(r.Prompt)
	for _, m := range r.Messages {
		n += len(m.Content) + 1
	}
	return n
}

func (c *Client) redact(s string) string { return Redact(s, 200, c.secrets...) }

func statusClass(code int) ErrorClass {
	switch {
	case code == http.StatusTooManyRequests:
		return HTTP429
	case code >= 500:
		return HTTP5xx
	case code >= 400:
		return HTTP4xx
	}
	return Malformed
}

func streamErrorClass(raw []byte) ErrorClass {
	if code := errorStatus(raw); code >= 400 {
		return statusClass(code)
	}
	return HTTP5xx // an error the server reported mid-stream is the server's failure
}

// classify maps a transport error to its class. ctx is the caller's context:
// when it was cancelled, infertop gave the request up itself.
func classify(ctx context.Context, err error, afterHeaders bool) ErrorClass {
	if ctx.Err() != nil {
		return Canceled
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return ClientSide // this process is out of descriptors: the endpoint is not at fault
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case afterHeaders:
		return StreamCut
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Connection
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) {
		return Connection
	}
	return Connection
}

// ChatURL turns what a user typed into the chat-completions endpoint: a
// base such as http://host:8000/v1 gets /chat/completions, a bare host gets
// /v1/chat/completions, and a full path is kept.
func ChatURL(raw string) (string, error) {
	return endpointURL(raw, "/chat/completions")
}

// ModelsURL derives the model-listing endpoint from the same input.
func ModelsURL(raw string) (string, error) {
	return endpointURL(raw, "/models")
}

func endpointURL(raw, suffix string) (string, error) {
	u, err := parseBase(raw)
	if err != nil {
		return "", err
	}
	p := strings.TrimRight(u.Path, "/")
	for _, full := range []string{"/chat/completions", "/completions", "/models", "/responses", "/messages", "/embeddings"} {
		if strings.HasSuffix(p, full) {
			p = strings.TrimSuffix(p, full)
			if full == suffix {
				u.Path = p + suffix
				return u.String(), nil
			}
			break
		}
	}
	if p == "" {
		p = "/v1"
	}
	u.Path = p + suffix
	return u.String(), nil
}

// userinfo is the user:password@ of a URL that url.Parse refused.
var userinfo = regexp.MustCompile(`^([^/?#]*//)[^/?#]*@`)

// RedactURL removes any credentials from a URL before it is shown, from
// one that does not parse too (a typo after the password must not show
// the password).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redact(userinfo.ReplaceAllString(raw, "${1}"), 200)
	}
	u.User = nil
	q := u.Query()
	for k := range q {
		lk := strings.ToLower(k)
		if secretQueryKey(lk) {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// secretQueryKey says whether a query parameter (lower case) may hold a
// credential: keys, tokens, secrets, passwords, signatures (presigned
// URLs: X-Amz-Signature, sig), credentials and auth of any kind.
func secretQueryKey(k string) bool {
	for _, w := range []string{"key", "token", "secret", "pass", "sig", "auth", "cred", "session"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}
