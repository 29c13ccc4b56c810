package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
)

// EndpointURL turns what a user typed into the URL requests go to for kind:
// a base such as http://host:8000/v1 gets the kind's path, a full path is
// kept (TGI's is switched between /generate_stream and /generate to match
// stream).
func EndpointURL(kind Kind, raw string, stream bool) (string, error) {
	u, err := parseBase(raw)
	if err != nil {
		return "", err
	}
	p := strings.TrimRight(u.Path, "/")
	switch kind {
	case OpenAIChat, "":
		return endpointURL(raw, "/chat/completions")
	case OpenAICompletions:
		return endpointURL(raw, "/completions")
	case OpenAIResponses:
		return endpointURL(raw, "/responses")
	case Anthropic:
		return endpointURL(raw, "/messages")
	case OpenAIEmbeddings:
		return endpointURL(raw, "/embeddings")
	case OllamaEmbed:
		if !strings.HasSuffix(p, "/api/embed") {
			p = trimSuffixes(p, "/api/chat", "/api/generate", "/v1", "/api") + "/api/embed"
		}
	case Ollama:
		if !strings.HasSuffix(p, "/api/chat") && !strings.HasSuffix(p, "/api/generate") {
			p = trimSuffixes(p, "/v1", "/api") + "/api/chat"
		}
	case TGI:
		p = trimSuffixes(p, "/generate_stream", "/generate", "/v1")
		if stream {
			p += "/generate_stream"
		} else {
			p += "/generate"
		}
	case Generic:
		if p == "" {
			p = "/v1/infer"
		}
	default:
		return "", fmt.Errorf("unknown API kind %q", kind)
	}
	u.Path = p
	return u.String(), nil
}

func trimSuffixes(p string, suffixes ...string) string {
	for _, s := range suffixes {
		p = strings.TrimSuffix(p, s)
	}
	return p
}

// KindFromPath infers the kind from a URL's path alone; ok is false when
// the path says nothing.
func KindFromPath(raw string) (kind Kind, reason string, ok bool) {
	u, err := parseBase(raw)
	if err != nil {
		return "", "", false
	}
	p := strings.TrimRight(u.Path, "/")
	for _, r := range []struct {
		suffix string
		kind   Kind
	}{
		{"/chat/completions", OpenAIChat}, {"/completions", OpenAICompletions},
		{"/api/chat", Ollama}, {"/api/generate", Ollama},
		{"/generate_stream", TGI}, {"/generate", TGI}, {"/v1/infer", Generic},
		{"/responses", OpenAIResponses}, {"/messages", Anthropic},
		{"/embeddings", OpenAIEmbeddings}, {"/api/embed", OllamaEmbed},
	} {
		if strings.HasSuffix(p, r.suffix) {
			return r.kind, "the URL's path ends in " + r.suffix, true
		}
	}
	return "", "", false
}

// Detect chooses the kind for raw: from the URL's path when it says, else
// by asking the server (/v1/models for OpenAI-compatible servers, /api/tags
// for Ollama, /info for TGI). The reason is one line for the user.
func Detect(ctx context.Context, cfg Config, raw string) (Kind, string, error) {
	if k, why, ok := KindFromPath(raw); ok {
		return k, why, nil
	}
	u, err := parseBase(raw)
	if err != nil {
		return "", "", err
	}
	cfg.API, cfg.URL = OpenAIChat, raw
	c, err := New(cfg)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	// Each document's URL is the endpoint's host with the document's path,
	// and the endpoint's query kept (a gateway's ?api-version= is needed
	// there too): appended to the whole URL, a path would land after the
	// query, and a token in it would be quoted in the error.
	base := "/v1"
	if p := strings.TrimRight(u.Path, "/"); strings.HasSuffix(p, "/v1") {
		base = p
	}
	at := func(path string) string {
		v := *u
		v.Path, v.RawPath = path, ""
		return v.String()
	}
	probes := []struct {
		path, key string
		kind      Kind
		why       string
	}{
		{base + "/models", "data", OpenAIChat, "GET /v1/models answered with a model list; chat completions assumed, as it cannot tell: --api openai-responses, anthropic or openai-embeddings for the others"},
		{"/api/tags", "models", Ollama, "GET /api/tags answered (Ollama)"},
		{"/info", "model_id", TGI, "GET /info answered with a model_id (TGI)"},
	}
	var tried []string
	for _, p := range probes {
		status, body, err := c.get(ctx, at(p.path))
		if err != nil {
			return "", "", fmt.Errorf("detect the API: %w", err)
		}
		var m map[string]json.RawMessage
		if status == http.StatusOK && json.Unmarshal(body, &m) == nil && m[p.key] != nil {
			return p.kind, p.why, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %d", p.path, status))
	}
	return "", "", fmt.Errorf("%w: %s answered %s", ErrUndetected, RedactURL(raw), strings.Join(tried, ", "))
}

// get fetches a small document with the client's headers and key; a
// redirect is an error.
func (c *Client) get(ctx context.Context, u string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout+5*time.Second)
	defer cancel()
	ctx, bounded := boundAttempts(ctx, getAttempts)
	defer bounded()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	c.setHeaders(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errReplayed) {
			err = fmt.Errorf("GET %s: %w", RedactURL(u), cause)
		}
		return 0, nil, fmt.Errorf("%s", c.redact(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Never followed (noRedirect): the headers and key would go
		// wherever it points. Detection stops here rather than read the
		// redirect as "not this API".
		return resp.StatusCode, nil, fmt.Errorf("GET %s: %s", RedactURL(u), c.redirectErr(resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, body, err
}

// getAttempts is the most times one GET is written: the first and one
// more, as a POST gets (see mayRetry).
const getAttempts = 2

// errReplayed ends a request the transport would write more often than
// boundAttempts allows.
var errReplayed = errors.New("the server refused it each time it was sent (an HTTP/2 GOAWAY or REFUSED_STREAM)")

// boundAttempts returns ctx ended, with errReplayed as its cause, before
// the transport can write a request under it more than n times. A GET has
// no body to refuse (errRefused), so net/http and x/net send it again by
// themselves after a GOAWAY, with no end: against a server answering
// every request with GOAWAY, one server-description read opened 1,558
// connections in 3 s, each with its GET. Every attempt asks for a
// connection (GetConn) before it writes its headers (WroteHeaders): the
// one asked for after n were written is refused.
func boundAttempts(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	var written atomic.Int64
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) {
			if written.Load() >= int64(n) {
				cancel(errReplayed)
			}
		},
		WroteHeaders: func() { written.Add(1) },
	})
	return ctx, func() { cancel(nil) }
}

// Models asks the server which models it serves, in its own order: the
// OpenAI model list, Ollama's tags, TGI's model_id. A generic API is asked
// for an OpenAI list (as the sim serves one).
func (c *Client) Models(ctx context.Context, raw string) ([]string, error) {
	ms, err := c.ModelList(ctx, raw)
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids, err
}

// ModelInfo is one model a server lists.
type ModelInfo struct {
	ID string
	// MaxModelLen is its context in tokens, prompt and output together,
	// where the server says (vLLM's max_model_len; 0: not said).
	MaxModelLen int
}

// ModelList is Models with what the server says of each model.
func (c *Client) ModelList(ctx context.Context, raw string) ([]ModelInfo, error) {
	u, err := parseBase(raw)
	if err != nil {
		return nil, err
	}
	root := *u
	root.Path, root.RawQuery = "", ""
	r := strings.TrimRight(root.String(), "/")
	var target string
	switch c.cfg.API {
	case Ollama, OllamaEmbed:
		target = r + "/api/tags"
	case TGI:
		target = r + "/info"
	default:
		target, _ = ModelsURL(raw)
		if c.cfg.API == Generic {
			target = r + "/v1/models"
		}
	}
	status, body, err := c.get(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("list models: GET %s: HTTP %d: %s", RedactURL(target), status, c.redact(string(body)))
	}
	var doc struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
		ModelID        string `json:"model_id"`
		MaxTotalTokens int    `json:"max_total_tokens"` // TGI's /info
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("list models: not a model list: %w", err)
	}
	var ms []ModelInfo
	refused := 0
	add := func(m ModelInfo) {
		switch {
		case m.ID == "":
		case len(m.ID) > MaxModelBytes:
			refused++
		default:
			ms = append(ms, m)
		}
	}
	for _, m := range doc.Data {
		add(ModelInfo{ID: m.ID, MaxModelLen: max(m.MaxModelLen, 0)})
	}
	for _, m := range doc.Models {
		add(ModelInfo{ID: firstNonEmpty(m.Name, m.Model)})
	}
	add(ModelInfo{ID: doc.ModelID, MaxModelLen: max(doc.MaxTotalTokens, 0)})
	if len(ms) == 0 && refused > 0 {
		return nil, fmt.Errorf("list models: GET %s: every model id listed (%d) is longer than %d bytes; pass --model", RedactURL(target), refused, MaxModelBytes)
	}
	return ms, nil
}

// MaxModelBytes is the longest model id taken from a server's list: real
// ones are a name or a path (tens of bytes, a few hundred at most), and
// the id goes into every request body and every summary (a 3 MB id made a
// 3 MB summary line and 3 MB requests).
const MaxModelBytes = 1024

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ServerInfo asks the server what it says of itself: its model list (or
// Ollama's tags, TGI's info) and /version where there is one. Failures are
// left out: this is for the record, never a reason to stop.
func (c *Client) ServerInfo(ctx context.Context, raw string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	u, err := parseBase(raw)
	if err != nil {
		return out
	}
	root := *u
	root.Path, root.RawQuery = "", ""
	r := strings.TrimRight(root.String(), "/")
	paths := map[string]string{"version": r + "/version"}
	switch c.cfg.API {
	case Ollama, OllamaEmbed:
		paths["models"], paths["version"] = r+"/api/tags", r+"/api/version"
	case TGI:
		paths["models"] = r + "/info"
	default:
		paths["models"], _ = ModelsURL(raw)
		if c.cfg.API == Generic {
			paths["models"] = r + "/v1/models"
		}
	}
	for name, p := range paths {
		status, body, err := c.get(ctx, p)
		if err == nil && status == http.StatusOK && json.Valid(body) && len(body) < 1<<20 {
			out[name] = json.RawMessage(body)
		}
	}
	return out
}
