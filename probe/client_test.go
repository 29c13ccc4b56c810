package probe

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixtureServer replays a recorded response: its status, Content-Type and
// body, flushing after every event with a pause so timing can be checked.
// A NAME-raw fixture keeps the HTTP chunk framing as recorded (curl --raw):
// it is replayed chunk by chunk, as the server sent it, so several events in
// one chunk arrive together.
func fixtureServer(t *testing.T, name string, gap time.Duration) *httptest.Server {
	srv, _ := timedFixtureServer(t, name, gap)
	return srv
}

// timedFixtureServer is fixtureServer that also says, for the last
// request, when each part was flushed, from the request's arrival.
func timedFixtureServer(t *testing.T, name string, gap time.Duration) (*httptest.Server, func() []time.Duration) {
	t.Helper()
	hdr, err := os.ReadFile(filepath.Join("testdata", name+".headers"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join("testdata", name+".body"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(hdr), "\r\n")
	status, _ := strconv.Atoi(strings.Fields(lines[0])[1])
	ctype := ""
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ": "); ok && strings.EqualFold(k, "Content-Type") {
			ctype = v
		}
	}
	var parts []string
	if strings.HasSuffix(name, "-raw") {
		if parts, err = unchunk(body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	} else {
		sep := "\n\n"
		if strings.Contains(ctype, "ndjson") {
			sep = "\n"
		}
		parts = strings.SplitAfter(string(body), sep)
	}
	var mu sync.Mutex
	var flushed []time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		var times []time.Duration
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		for _, part := range parts {
			time.Sleep(gap)
			// The time before the write: a client can read the event
			// before Flush returns (a busy machine ran the client first
			// and stamped after it: TTFT 44.3 ms, "flushed" at 46.7 ms),
			// never before it was written.
			times = append(times, time.Since(t0))
			fmt.Fprint(w, part)
			w.(http.Flusher).Flush()
		}
		mu.Lock()
		flushed = times
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return flushed
	}
}

// unchunk splits a body kept in HTTP/1.1 chunked framing into its chunks'
// data, checking the framing: hex sizes, CRLFs, the 0-length last chunk.
func unchunk(raw []byte) ([]string, error) {
	var parts []string
	for {
		line, rest, ok := bytes.Cut(raw, []byte("\r\n"))
		if !ok {
			return nil, fmt.Errorf("chunk size line without CRLF at %q", raw[:min(len(raw), 20)])
		}
		size, err := strconv.ParseUint(string(line), 16, 31)
		if err != nil {
			return nil, fmt.Errorf("chunk size %q: %v", line, err)
		}
		if size == 0 {
			if string(rest) != "\r\n" {
				return nil, fmt.Errorf("%d bytes after the last chunk", len(rest))
			}
			return parts, nil
		}
		if uint64(len(rest)) < size+2 || string(rest[size:size+2]) != "\r\n" {
			return nil, fmt.Errorf("chunk of %d bytes not ended by CRLF", size)
		}
		parts = append(parts, string(rest[:size]))
		raw = rest[size+2:]
	}
}

// TestUnchunk: the raw recordings replay as Ollama sent them, one NDJSON
// line a chunk, and for /v1 one event a chunk but the finish chunk, the
// usage chunk and [DONE] in one.
func TestUnchunk(t *testing.T) {
	for name, want := range map[string][]int{
		"chat-stream-raw":              {17, 1, 1},
		"openai-chat-stream-usage-raw": {17, 1, 3},
	} {
		raw, err := os.ReadFile(filepath.Join("testdata/ollama", name+".body"))
		if err != nil {
			t.Fatal(err)
		}
		parts, err := unchunk(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		events := func(p string) int {
			if strings.HasPrefix(p, "data: ") {
				return strings.Count(p, "\n\n")
			}
			return strings.Count(p, "\n")
		}
		if len(parts) != want[0] || events(parts[0]) != want[1] || events(parts[len(parts)-1]) != want[2] {
			t.Errorf("%s: %d chunks, %d messages in the first, %d in the last; want %v", name, len(parts), events(parts[0]), events(parts[len(parts)-1]), want)
		}
	}
	for _, bad := range []string{"", "5\r\nabc\r\n0\r\n\r\n", "zz\r\n", "3\r\nabc\r\n0\r\n"} {
		if _, err := unchunk([]byte(bad)); err == nil {
			t.Errorf("unchunk(%q) accepted", bad)
		}
	}
}

func newTestClient(t *testing.T, url string, mode TTFTMode) *Client {
	t.Helper()
	c, err := New(Config{URL: url, Model: "m", APIKey: "sk-secretsecret", Timeout: 5 * time.Second, TTFT: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		fixture      string
		kind         Kind
		noStream     bool
		class        ErrorClass
		in, out      int
		estimated    bool
		messages     int
		status       int
		hasTTFT      bool
		errSubstring string
	}{
		{"vllm-sim/chat-stream-usage", OpenAIChat, false, OK, 16, 8, false, 8, 200, true, ""},
		{"vllm-sim/chat-stream-nousage", OpenAIChat, false, OK, 0, 5, true, 5, 200, true, ""},
		{"vllm-sim/chat-nostream", OpenAIChat, true, OK, 6, 5, false, 1, 200, false, ""},
		{"vllm-sim/completions-stream-usage", OpenAICompletions, false, OK, 4, 6, false, 6, 200, true, ""},
		{"vllm-sim/error-injected-429", OpenAIChat, false, HTTP429, 0, 0, true, 0, 429, false, "RateLimitError"},
		{"vllm-sim/error-injected-503", OpenAIChat, false, HTTP5xx, 0, 0, true, 0, 503, false, "503"},
		{"vllm-sim/error-unknown-model", OpenAIChat, false, HTTP4xx, 0, 0, true, 0, 404, false, "does not exist"},
		{"llamacpp/chat-stream-usage", OpenAIChat, false, OK, 41, 8, false, 8, 200, true, ""},
		{"llamacpp/chat-nostream", OpenAIChat, true, OK, 29, 5, false, 1, 200, false, ""},
		{"llamacpp/completions-stream-usage", OpenAICompletions, false, OK, 5, 6, false, 6, 200, true, ""},
		{"llamacpp/completion-native-stream", Generic, false, OK, 5, 5, false, 5, 200, true, ""},
		{"written/openai/chat-stream-usage", OpenAIChat, false, OK, 9, 5, false, 5, 200, true, ""},
		{"written/sglang/chat-stream-reasoning", OpenAIChat, false, OK, 12, 6, false, 6, 200, true, ""},
		{"written/awkward/chat-crlf-keepalive", OpenAIChat, false, OK, 4, 5, false, 2, 200, true, ""},
		{"written/tgi/generate-stream", TGI, false, OK, 0, 4, false, 3, 200, true, ""},
		{"written/tgi/generate", TGI, true, OK, 0, 3, false, 1, 200, false, ""},
		{"written/tgi/generate-stream-error", TGI, false, HTTP5xx, 0, 0, true, 0, 200, false, "CUDA out of memory"},
		{"written/tgi/error-validation", TGI, false, HTTP4xx, 0, 0, true, 0, 422, false, "Input validation error"},
		// Ollama v0.24.0, recorded: 16 tokens asked for (num_predict,
		// max_tokens), 16 content messages, a 2-token prompt; the counts
		// only on the done:true line or in the usage.
		{"ollama/chat-stream", Ollama, false, OK, 2, 16, false, 16, 200, true, ""},
		{"ollama/chat-stream-raw", Ollama, false, OK, 2, 16, false, 16, 200, true, ""},
		{"ollama/generate-stream", Ollama, false, OK, 2, 16, false, 16, 200, true, ""},
		{"ollama/chat-nostream", Ollama, true, OK, 2, 16, false, 1, 200, false, ""},
		{"ollama/generate-nostream", Ollama, true, OK, 2, 16, false, 1, 200, false, ""},
		{"ollama/error-chat-unknown-model", Ollama, false, HTTP4xx, 0, 0, true, 0, 404, false, "model 'does-not-exist' not found"},
		{"ollama/error-generate-unknown-model", Ollama, false, HTTP4xx, 0, 0, true, 0, 404, false, "model 'does-not-exist' not found"},
		{"ollama/openai-chat-stream-usage", OpenAIChat, false, OK, 2, 16, false, 16, 200, true, ""},
		{"ollama/openai-chat-stream-usage-raw", OpenAIChat, false, OK, 2, 16, false, 16, 200, true, ""},
		{"ollama/openai-chat-stream", OpenAIChat, false, OK, 0, 16, true, 16, 200, true, ""},
		{"ollama/openai-chat-nostream", OpenAIChat, true, OK, 2, 16, false, 1, 200, false, ""},
		{"ollama/openai-completions-stream-usage", OpenAICompletions, false, OK, 2, 16, false, 16, 200, true, ""},
		{"ollama/openai-completions-stream", OpenAICompletions, false, OK, 0, 16, true, 16, 200, true, ""},
		{"ollama/openai-completions-nostream", OpenAICompletions, true, OK, 2, 16, false, 1, 200, false, ""},
		{"ollama/error-openai-chat-unknown-model", OpenAIChat, true, HTTP4xx, 0, 0, true, 0, 404, false, "model 'does-not-exist' not found"},
		{"ollama/error-openai-chat-stream-unknown-model", OpenAIChat, false, HTTP4xx, 0, 0, true, 0, 404, false, "model 'does-not-exist' not found"},
		// No recording has these: written.
		{"written/ollama/chat-stream-cut", Ollama, false, StreamCut, 0, 0, true, 0, 200, false, "middle of a message"},
		{"written/ollama/chat-stream-error", Ollama, false, HTTP5xx, 0, 0, true, 0, 200, false, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			srv := fixtureServer(t, tt.fixture, 0)
			cfg := Config{URL: srv.URL, Model: "m", APIKey: "sk-secretsecret", Timeout: 5 * time.Second, API: tt.kind, NoStream: tt.noStream}
			if strings.Contains(tt.fixture, "ollama/generate") || strings.Contains(tt.fixture, "ollama/error-generate") {
				cfg.URL += "/api/generate" // the prompt form of the body
			}
			if tt.kind == Generic { // llama.cpp's own /completion API, as a generic SSE stream
				cfg.Generic = GenericOptions{Stream: "sse", ChunkPath: "content"}
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			live := &Live{Origin: time.Now()}
			res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 8, Live: live})
			if res.Class != tt.class || res.Status != tt.status {
				t.Fatalf("class %v status %d (err %q), want %v %d", res.Class, res.Status, res.Err, tt.class, tt.status)
			}
			if tt.class != OK {
				if !strings.Contains(res.Err, tt.errSubstring) {
					t.Fatalf("err %q lacks %q", res.Err, tt.errSubstring)
				}
				return
			}
			if tt.in >= 0 && (res.InputTokens != tt.in || res.OutputTokens != tt.out || res.OutputEstimated != tt.estimated) {
				t.Fatalf("tokens in %d out %d est %v, want %d %d %v", res.InputTokens, res.OutputTokens, res.OutputEstimated, tt.in, tt.out, tt.estimated)
			}
			if res.HasTTFT != tt.hasTTFT || (tt.messages >= 0 && res.Messages != tt.messages) {
				t.Fatalf("messages %d hasTTFT %v, want %d %v", res.Messages, res.HasTTFT, tt.messages, tt.hasTTFT)
			}
			if tt.hasTTFT && live.Len() != res.Messages {
				t.Fatalf("%d message times for %d messages", live.Len(), res.Messages)
			}
			if res.Messages > 0 && res.TokensPerMessage() != float64(res.OutputTokens)/float64(res.Messages) {
				t.Fatalf("tokens per message %v", res.TokensPerMessage())
			}
			if !tt.hasTTFT && (res.TTFT != 0 || live.Len() != 0) {
				t.Fatalf("TTFT %v reported for a whole answer", res.TTFT)
			}
		})
	}
}

// TestTiming checks TTFT, ITL and E2E against a stream with known gaps: the
// role-only first chunk does not end TTFT, the finish and usage chunks do
// not extend E2E.
func TestTiming(t *testing.T) {
	// The server says when it flushed each event; the client's figures are
	// held to those (within lag), not to the sleeps between them, which a
	// busy machine stretches.
	const gap = 20 * time.Millisecond
	const lag = 12 * time.Millisecond
	srv, flushed := timedFixtureServer(t, "vllm-sim/chat-stream-usage", gap)
	c := newTestClient(t, srv.URL, TTFTFirstOutput)
	live := &Live{Origin: time.Now()}
	res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 8, Live: live})
	if !res.OK() {
		t.Fatalf("failed: %v %s", res.Class, res.Err)
	}
	sent := flushed()
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if got < want || got > want+lag {
			t.Errorf("%s %v, the server flushed it at %v", what, got, want)
		}
	}
	// Event 1 is the role chunk; the first content arrives with event 2.
	near("TTFT", res.TTFT, sent[1])
	if start, ok := live.Start(); !ok || start != res.Start.Sub(live.Origin) {
		t.Fatalf("the live start %v, the result's %v", start, res.Start.Sub(live.Origin))
	}
	if at, _ := live.At(0); at-res.Start.Sub(live.Origin) != res.TTFT {
		t.Fatalf("the live first message at %v from the start, the result's TTFT %v", at-res.Start.Sub(live.Origin), res.TTFT)
	}
	n := 0
	live.ITLs(func(d time.Duration) {
		n++
		if want := sent[n+1] - sent[n]; d < want-lag || d > want+lag {
			t.Errorf("ITL %d %v, the server's gap %v", n, d, want)
		}
	})
	if n != 7 {
		t.Fatalf("%d ITLs, want 7", n)
	}
	// 9 events up to the last content chunk (the 10th is the finish chunk).
	near("E2E", res.E2E, sent[8])
	tpot, ok := res.TPOT()
	if want := (sent[8] - sent[1]) / 7; !ok || tpot < want-lag || tpot > want+lag {
		t.Fatalf("TPOT %v %v, the server's %v", tpot, ok, want)
	}
	if res.TTFB <= 0 || res.TTFB > res.TTFT {
		t.Fatalf("TTFB %v not within (0, TTFT=%v]", res.TTFB, res.TTFT)
	}

	// vLLM's first-chunk mode: the role chunk ends TTFT.
	first := newTestClient(t, srv.URL, TTFTFirstChunk).Do(context.Background(), Request{Prompt: "hi"})
	near("first-chunk TTFT", first.TTFT, flushed()[0])
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		class ErrorClass
	}{
		{"error object mid-stream", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `data: {"error":{"message":"boom","code":500}}` + "\n\n", HTTP5xx},
		{"error event", "event: error\ndata: {\"message\":\"overloaded\",\"code\":429}\n\n", HTTP429},
		{"not json", "data: <html>oops</html>\n\n", Malformed},
		{"ends without DONE", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n", StreamCut},
		{"cut mid-line", `data: {"choices":[{"delta":{"cont`, StreamCut},
		{"vLLM error object mid-stream", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `data: {"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}` + "\n\n", HTTP4xx},
		{"llama.cpp error line", `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" + `error: {"code":500,"message":"context shift disabled","type":"server_error"}` + "\n\n", HTTP5xx},
		{"finished without DONE", `data: {"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}` + "\n\n", OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			res := newTestClient(t, srv.URL, TTFTFirstOutput).Do(context.Background(), Request{Prompt: "x"})
			if res.Class != tt.class {
				t.Fatalf("class %v (%s), want %v", res.Class, res.Err, tt.class)
			}
		})
	}
}

// stallServer never answers until the client gives up (or the test ends).
func stallServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

func TestTransportFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		res := newTestClient(t, "http://"+addr+"/v1/chat/completions", TTFTFirstOutput).Do(context.Background(), Request{})
		if res.Class != Connection {
			t.Fatalf("class %v (%s), want connection", res.Class, res.Err)
		}
	})
	t.Run("reset after headers", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"choices":[{"delta":{"content":"a"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.Flush()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}))
		defer srv.Close()
		res := newTestClient(t, srv.URL, TTFTFirstOutput).Do(context.Background(), Request{})
		if res.Class != StreamCut {
			t.Fatalf("class %v (%s), want stream_cut", res.Class, res.Err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		srv := stallServer(t)
		c, _ := New(Config{URL: srv.URL, Timeout: 100 * time.Millisecond})
		defer c.Close()
		res := c.Do(context.Background(), Request{})
		if res.Class != Timeout {
			t.Fatalf("class %v (%s), want timeout", res.Class, res.Err)
		}
	})
	t.Run("cancelled by caller", func(t *testing.T) {
		srv := stallServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res := newTestClient(t, srv.URL, TTFTFirstOutput).Do(ctx, Request{})
		if res.Class != Canceled {
			t.Fatalf("class %v (%s), want canceled", res.Class, res.Err)
		}
	})
}

func TestRequestCarriesKeyAndUsage(t *testing.T) {
	var auth, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		b := bufio.NewScanner(r.Body)
		for b.Scan() {
			body += b.Text()
		}
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":"bad key sk-secretsecret"}`)
	}))
	defer srv.Close()
	res := newTestClient(t, srv.URL, TTFTFirstOutput).Do(context.Background(), Request{Prompt: "p", MaxTokens: 3})
	if auth != "Bearer sk-secretsecret" {
		t.Fatalf("Authorization %q", auth)
	}
	for _, want := range []string{`"stream":true`, `"include_usage":true`, `"max_tokens":3`, `"model":"m"`} {
		if !strings.Contains(body, want) {
			t.Errorf("body %s lacks %s", body, want)
		}
	}
	if strings.Contains(res.Err, "secretsecret") || res.Class != HTTP4xx {
		t.Fatalf("error %q (class %v) leaks the key or is misclassed", res.Err, res.Class)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"Authorization: Bearer abc.def-123":   "Authorization: Bearer [REDACTED]",
		"key sk-abcdefghij failed":            "key [REDACTED] failed",
		`{"api_key": "hunter22"}`:             `{"api_key": "[REDACTED]"}`,
		"token=zzzzzzzz&x=1":                  "token=[REDACTED]&x=1",
		"my-literal-secret-value appears":     "[REDACTED] appears",
		"multi\n  line\twhitespace collapses": "multi line whitespace collapses",
	} {
		if got := Redact(in, 0, "my-literal-secret-value"); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Redact(strings.Repeat("a", 50), 10); got != strings.Repeat("a", 9)+"…" {
		t.Errorf("shortened to %q", got)
	}
}

func TestEndpointURLs(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8000/v1":                     "http://h:8000/v1/chat/completions",
		"http://h:8000/v1/":                    "http://h:8000/v1/chat/completions",
		"http://h:8000":                        "http://h:8000/v1/chat/completions",
		"https://h/openai/v1/chat/completions": "https://h/openai/v1/chat/completions",
		"http://h/v1/models":                   "http://h/v1/chat/completions",
	} {
		got, err := ChatURL(in)
		if err != nil || got != want {
			t.Errorf("ChatURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if m, _ := ModelsURL("http://h:8000/v1/chat/completions"); m != "http://h:8000/v1/models" {
		t.Errorf("ModelsURL = %q", m)
	}
	for _, bad := range []string{"h:8000", "ftp://h/v1", "http://", "::"} {
		if _, err := ChatURL(bad); err == nil {
			t.Errorf("ChatURL(%q) accepted", bad)
		}
	}
	if got := RedactURL("http://user:pw@h/v1?api_key=zz&x=1"); strings.Contains(got, "pw") || strings.Contains(got, "zz") {
		t.Errorf("RedactURL leaked: %s", got)
	}
	if got := RedactURL("http://user:hunter22@h%zz/v1"); strings.Contains(got, "hunter22") || !strings.Contains(got, "h%zz/v1") {
		t.Errorf("RedactURL of a URL that does not parse: %s", got)
	}
}

func TestListModels(t *testing.T) {
	data, _ := os.ReadFile("testdata/vllm-sim/models.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/v1/chat/completions", TTFTFirstOutput)
	ids, err := c.Models(context.Background(), srv.URL+"/v1")
	if err != nil || len(ids) != 1 || ids[0] != "sim-model" {
		t.Fatalf("ids %v err %v", ids, err)
	}
}

func BenchmarkDoStream(b *testing.B) {
	var sb strings.Builder
	for range 128 {
		sb.WriteString(`data: {"id":"x","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":128}}` + "\n\ndata: [DONE]\n\n")
	payload := sb.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, payload)
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL})
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if r := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 128}); !r.OK() {
			b.Fatal(r.Err)
		}
	}
	b.ReportMetric(float64(b.N*128)/b.Elapsed().Seconds(), "msgs/s")
}

func FuzzChunkParse(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"delta":{"content":"a"},"finish_reason":null}],"usage":null}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":{"code":500}}`, `[]`, `null`, `{"choices":[{"text":"x","finish_reason":"stop"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p parser
		info, err := (&openaiProto{chat: true, stream: true}).parse(&p, data)
		if err != nil && (info.output || info.usage != nil) {
			t.Fatalf("error %v with a result %+v", err, info)
		}
	})
}

func TestChunkParse(t *testing.T) {
	tests := []struct {
		in                      string
		output, choices, finish bool
		prompt, completion      int
		err, hasErr             bool
	}{
		{in: `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, choices: true},
		{in: `{"choices":[{"delta":{"role":"assistant","content":null}}]}`, choices: true},
		{in: `{"choices":[{"delta":{"content":"hi"}}]}`, output: true, choices: true},
		{in: `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, output: true, choices: true},
		{in: `{"choices":[{"delta":{"reasoning":"hm"}}]}`, output: true, choices: true},
		{in: `{"choices":[{"text":" a","finish_reason":null}]}`, output: true, choices: true},
		{in: `{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`, choices: true, finish: true, prompt: 3, completion: 4},
		{in: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}`, prompt: 5, completion: 6},
		// Ollama v0.24.0's /v1/completions with include_usage: an all-zero
		// usage on every chunk, before the real one: no usage at all.
		{in: `{"id":"cmpl-760","object":"text_completion","created":1796106461,"choices":[{"text":"cup","index":0,"finish_reason":null}],"model":"tiny","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, output: true, choices: true},
		{in: `{"error":{"message":"x","code":400}}`, hasErr: true},
		{in: `{"error":null,"choices":[]}`},
		{in: `{"choices":[{"delta":{"content":"a"}}`, err: true},
		{in: `"just a string"`, err: true},
	}
	for _, tt := range tests {
		var p parser
		info, err := (&openaiProto{chat: true, stream: true}).parse(&p, []byte(tt.in))
		if (err != nil) != tt.err {
			t.Errorf("%s: err %v", tt.in, err)
			continue
		}
		if info.output != tt.output || info.choices != tt.choices || info.finished != tt.finish || (info.errMsg != nil) != tt.hasErr {
			t.Errorf("%s: %+v", tt.in, info)
		}
		if tt.prompt == 0 && info.usage != nil {
			t.Errorf("%s: usage %+v from none", tt.in, info.usage)
		}
		if tt.prompt > 0 && (info.usage == nil || info.usage.PromptTokens != tt.prompt || info.usage.CompletionTokens != tt.completion) {
			t.Errorf("%s: usage %+v", tt.in, info.usage)
		}
	}
}

// benchStream is a recorded vLLM stream, its content messages repeated to
// 200.
func benchStream(b *testing.B) string {
	rec, err := os.ReadFile("testdata/vllm-sim/chat-stream-usage.body")
	if err != nil {
		b.Fatal(err)
	}
	events := bytes.SplitAfter(rec, []byte("\n\n"))
	var content [][]byte
	for _, e := range events[1:] {
		if bytes.Contains(e, []byte(`"content":"`)) {
			content = append(content, e)
		}
	}
	var stream bytes.Buffer
	stream.Write(events[0])
	for i := range 200 {
		stream.Write(content[i%len(content)])
	}
	for _, e := range events[1:] {
		if !bytes.Contains(e, []byte(`"content":"`)) {
			stream.Write(e)
		}
	}
	return stream.String()
}

// BenchmarkReadStream reads a recorded vLLM stream, its content messages
// repeated to 200, from memory: the client's own work per message, with no
// network or server. "raw" is the bench's raw reader on the same bytes (a
// line scanner and a substring test per line), the floor for any client.
func BenchmarkReadStream(b *testing.B) {
	payload := []byte(benchStream(b))
	b.Run("infertop", func(b *testing.B) {
		c, _ := New(Config{URL: "http://127.0.0.1:1/v1/chat/completions"})
		live := &Live{Origin: time.Now()}
		live.Reserve(256)
		b.ReportAllocs()
		for b.Loop() {
			res := Result{Start: time.Now()}
			live.Begin(res.Start)
			c.readStream(context.Background(), bytes.NewReader(payload), frameSSE, &res, Request{MaxTokens: 200, Live: live})
			if !res.OK() || res.Messages != 200 {
				b.Fatalf("%d messages, %v", res.Messages, res.Err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/msg")
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sc := bufio.NewScanner(bytes.NewReader(payload))
			n := 0
			for sc.Scan() {
				if bytes.Contains(sc.Bytes(), []byte(`"content":"`)) {
					n++
				}
			}
			if n != 200 {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/msg")
	})
}
