package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"syscall"
	"time"
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
	return 0, fmt.Errorf("unknown --ttft %q (want first-output or first-chunk)", s)
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
}

// Request is what varies from one request to the next.
type Request struct {
	Prompt    string
	MaxTokens int
}

// Client sends requests to one endpoint. It is safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
	tr   *http.Transport
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if _, err := url.ParseRequestURI(cfg.URL); err != nil {
		return nil, fmt.Errorf("bad endpoint URL: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: cfg.ConnectTimeout,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		MaxIdleConns:        cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // compression would delay and batch stream chunks
		ForceAttemptHTTP2:   true,
	}
	return &Client{cfg: cfg, tr: tr, http: &http.Client{Transport: tr}}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Config returns the client's configuration with the API key removed.
func (c *Client) Config() Config {
	cfg := c.cfg
	cfg.APIKey = ""
	return cfg
}

// Do sends one request and measures it. It never panics on a bad server and
// always returns a Result; a failure is a Result with an error class.
func (c *Client) Do(ctx context.Context, req Request) Result {
	var res Result
	body, err := chatBody(c.cfg.Model, req)
	if err != nil {
		res.Class, res.Err = Malformed, err.Error()
		return res
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		res.Class, res.Err = Malformed, c.redact(err.Error())
		return res
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	var ttfb time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { ttfb = time.Now() }}
	hreq = hreq.WithContext(httptrace.WithClientTrace(rctx, trace))

	res.Start = time.Now()
	resp, err := c.http.Do(hreq)
	if err != nil {
		res.E2E = time.Since(res.Start)
		res.Class = classify(ctx, err, false)
		res.Err = c.redact(err.Error())
		return res
	}
	defer resp.Body.Close()
	if !ttfb.IsZero() {
		res.TTFB = ttfb.Sub(res.Start)
	}
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		res.E2E = time.Since(res.Start)
		res.Class = statusClass(resp.StatusCode)
		res.Err = c.redact(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, excerpt))
		return res
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "application/json" {
		c.readWhole(ctx, resp.Body, &res)
	} else {
		c.readStream(ctx, resp.Body, &res)
	}
	return res
}

// readStream reads an SSE stream of chat chunks, timing every message that
// carries output.
func (c *Client) readStream(ctx context.Context, body io.Reader, res *Result) {
	sse := NewSSEReader(body)
	var cp chunkParser
	var (
		finished bool
		u        *usage
	)
	for {
		ev, err := sse.Next()
		now := time.Since(res.Start)
		if err != nil {
			if err == io.EOF && finished {
				break // the answer was complete; only [DONE] is missing
			}
			res.E2E = now
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				res.Class, res.Err = StreamCut, "stream ended before [DONE]"
			} else if errors.Is(err, ErrLineTooLong) {
				res.Class, res.Err = Malformed, err.Error()
			} else {
				res.Class, res.Err = classify(ctx, err, true), c.redact(err.Error())
			}
			return
		}
		if bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]")) {
			break
		}
		if ev.Name == "error" {
			res.E2E = now
			res.Class, res.Err = streamErrorClass(ev.Data), c.redact("error in stream: "+string(ev.Data))
			return
		}
		info, err := cp.parse(ev.Data)
		if err != nil {
			res.E2E = now
			res.Class, res.Err = Malformed, c.redact(err.Error())
			return
		}
		if info.errMsg != nil {
			res.E2E = now
			res.Class, res.Err = streamErrorClass(info.errMsg), c.redact("error in stream: "+string(info.errMsg))
			return
		}
		if info.id != "" && res.ID == "" {
			res.ID = info.id
		}
		if info.usage != nil {
			u = info.usage
		}
		if info.finished {
			finished = true
		}
		if info.output {
			res.Messages++
		}
		// In first-chunk mode every message with choices is timed, as vLLM's
		// benchmark does; otherwise only messages that carry output.
		timed := info.output || (c.cfg.TTFT == TTFTFirstChunk && info.choices)
		if !timed {
			continue
		}
		if !res.HasTTFT {
			res.HasTTFT, res.TTFT = true, now
		} else {
			res.Chunks = append(res.Chunks, now)
		}
		res.E2E = now
	}
	if !res.HasTTFT {
		res.E2E = time.Since(res.Start)
	}
	c.finishTokens(res, u)
}

// readWhole reads a non-streamed JSON answer: no TTFT can be observed.
func (c *Client) readWhole(ctx context.Context, body io.Reader, res *Result) {
	data, err := io.ReadAll(io.LimitReader(body, MaxLineBytes))
	res.E2E = time.Since(res.Start)
	if err != nil {
		res.Class, res.Err = classify(ctx, err, true), c.redact(err.Error())
		return
	}
	var cp chunkParser
	info, err := cp.parse(data)
	if err != nil {
		res.Class, res.Err = Malformed, c.redact(err.Error())
		return
	}
	if info.errMsg != nil {
		res.Class, res.Err = streamErrorClass(info.errMsg), c.redact("error: "+string(info.errMsg))
		return
	}
	res.ID = info.id
	if info.output {
		res.Messages = 1
	}
	c.finishTokens(res, info.usage)
}

func (c *Client) finishTokens(res *Result, u *usage) {
	if u != nil && u.CompletionTokens > 0 {
		res.OutputTokens = u.CompletionTokens
	} else {
		res.OutputTokens, res.OutputEstimated = res.Messages, true
	}
	if u != nil && u.PromptTokens > 0 {
		res.InputTokens = u.PromptTokens
	} else {
		res.InputEstimated = true
	}
}

func (c *Client) redact(s string) string { return Redact(s, 200, c.cfg.APIKey) }

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
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("bad --url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("bad --url %q: want http(s)://host[:port][/path]", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, full := range []string{"/chat/completions", "/completions", "/models"} {
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

// RedactURL removes any credentials from a URL before it is shown.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redact(raw, 200)
	}
	u.User = nil
	q := u.Query()
	for k := range q {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") {
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ListModels asks the server for its models (GET /v1/models) and returns
// their ids in the server's order.
func (c *Client) ListModels(ctx context.Context, modelsURL string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout+5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, modelsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models: %s", c.redact(err.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list models: HTTP %d: %s", resp.StatusCode, c.redact(string(data)))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("list models: not a model list: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
