package probe

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBodies(t *testing.T) {
	temp, topP, seed := 0.5, 0.9, int64(7)
	full := BodyOptions{IgnoreEOS: true, MinTokens: true, Temperature: &temp, TopP: &topP, Seed: &seed, Extra: map[string]any{"priority": 3.0}}
	tests := []struct {
		name string
		cfg  Config
		want map[string]any // dot paths to values
		not  []string
	}{
		{"chat", Config{API: OpenAIChat, Body: full}, map[string]any{
			"model": "m", "stream": true, "max_tokens": 5.0, "messages.0.content": "p", "messages.0.role": "user",
			"stream_options.include_usage": true, "ignore_eos": true, "min_tokens": 5.0, "temperature": 0.5, "top_p": 0.9, "seed": 7.0, "priority": 3.0,
		}, nil},
		{"chat, max_completion_tokens, not streamed", Config{API: OpenAIChat, NoStream: true, Body: BodyOptions{MaxTokensField: "max_completion_tokens"}},
			map[string]any{"max_completion_tokens": 5.0, "stream": false}, []string{"max_tokens", "stream_options", "ignore_eos", "temperature"}},
		{"completions", Config{API: OpenAICompletions}, map[string]any{"prompt": "p", "max_tokens": 5.0, "stream": true}, []string{"messages"}},
		{"ollama chat", Config{API: Ollama, URL: "http://h/api/chat", Body: full}, map[string]any{
			"messages.0.content": "p", "options.num_predict": 5.0, "options.temperature": 0.5, "options.seed": 7.0, "stream": true}, []string{"prompt", "max_tokens"}},
		{"ollama generate", Config{API: Ollama, URL: "http://h/api/generate"}, map[string]any{"prompt": "p", "options.num_predict": 5.0}, []string{"messages"}},
		{"tgi", Config{API: TGI, Body: full}, map[string]any{"inputs": "p", "parameters.max_new_tokens": 5.0, "parameters.details": true, "parameters.top_p": 0.9}, []string{"model"}},
		{"generic default", Config{API: Generic}, map[string]any{"model": "m", "input": "p", "max_tokens": 5.0}, nil},
		{"generic template", Config{API: Generic, Generic: GenericOptions{Template: `{"q":"{{prompt}}","n":{{max_tokens}},"m":"{{model}}"}`}, Body: BodyOptions{Extra: map[string]any{"x": 1.0}}},
			map[string]any{"q": "p", "n": 5.0, "m": "m", "x": 1.0}, []string{"input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.URL == "" {
				tt.cfg.URL = "http://h/"
			}
			p, err := newProtocol(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.body("m", Request{Prompt: "p", MaxTokens: 5})
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			for path, want := range tt.want {
				if got := dig(doc, path); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s = %v, want %v (body %s)", path, got, want, b)
				}
			}
			for _, path := range tt.not {
				if got := dig(doc, path); got != nil {
					t.Errorf("%s present (%v) in %s", path, got, b)
				}
			}
		})
	}
	// A template whose prompt needs escaping stays valid JSON.
	p, _ := newProtocol(&Config{API: Generic, Generic: GenericOptions{Template: `{"q":"{{prompt}}"}`}})
	b, _ := p.body("m", Request{Prompt: "say \"hi\"\n\\"})
	if !json.Valid(b) {
		t.Fatalf("escaped template body %s is not JSON", b)
	}
	for _, bad := range []Config{
		{API: Generic, Generic: GenericOptions{Template: `{"q":{{prompt}}`}},
		{API: Generic, Generic: GenericOptions{Stream: "sse"}},
		{API: Generic, Generic: GenericOptions{Stream: "carrier-pigeon", ChunkPath: "x"}},
		{API: "smoke-signals"},
	} {
		if err := bad.Validate(); err == nil { // New calls it before newProtocol
			t.Errorf("%+v accepted", bad)
		}
	}
}

// dig follows a dot path through decoded JSON.
func dig(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func TestEndpointURL(t *testing.T) {
	tests := []struct {
		kind   Kind
		in     string
		stream bool
		want   string
	}{
		{OpenAIChat, "http://h:8000/v1", true, "http://h:8000/v1/chat/completions"},
		{OpenAICompletions, "http://h:8000/v1", true, "http://h:8000/v1/completions"},
		{OpenAICompletions, "http://h:8000", true, "http://h:8000/v1/completions"},
		{Ollama, "http://h:11434", true, "http://h:11434/api/chat"},
		{Ollama, "http://h:11434/v1", true, "http://h:11434/api/chat"},
		{Ollama, "http://h:11434/api/generate", true, "http://h:11434/api/generate"},
		{TGI, "http://h:3000", true, "http://h:3000/generate_stream"},
		{TGI, "http://h:3000/generate_stream", false, "http://h:3000/generate"},
		{TGI, "http://h:3000/generate", true, "http://h:3000/generate_stream"},
		{Generic, "http://h:8000", false, "http://h:8000/v1/infer"},
		{Generic, "http://h:8000/api/v2/predict", false, "http://h:8000/api/v2/predict"},
	}
	for _, tt := range tests {
		if got, err := EndpointURL(tt.kind, tt.in, tt.stream); err != nil || got != tt.want {
			t.Errorf("EndpointURL(%s, %s) = %q, %v; want %q", tt.kind, tt.in, got, err, tt.want)
		}
	}
	for in, want := range map[string]Kind{
		"http://h/v1/chat/completions": OpenAIChat, "http://h/v1/completions": OpenAICompletions,
		"http://h/api/chat": Ollama, "http://h/api/generate": Ollama, "http://h/generate_stream": TGI,
		"http://h/generate": TGI, "http://h/v1/infer": Generic,
	} {
		if k, why, ok := KindFromPath(in); !ok || k != want || why == "" {
			t.Errorf("KindFromPath(%s) = %s %q %v, want %s", in, k, why, ok, want)
		}
	}
	if _, _, ok := KindFromPath("http://h:8000/v1"); ok {
		t.Error("a bare base said something")
	}
}

// discoveryServer answers like one kind of server would.
func discoveryServer(t *testing.T, kind Kind) *httptest.Server {
	mux := http.NewServeMux()
	switch kind {
	case OpenAIChat:
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"llama-3"},{"id":"other"}]}`)
		})
	case Ollama:
		mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","size":2019393189}]}`)
		})
	case TGI:
		mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"model_id":"bigscience/bloom-560m","model_dtype":"torch.float16","max_input_tokens":1024}`)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestDetectAndModels(t *testing.T) {
	for kind, model := range map[Kind]string{OpenAIChat: "llama-3", Ollama: "llama3.2:latest", TGI: "bigscience/bloom-560m"} {
		srv := discoveryServer(t, kind)
		got, why, err := Detect(context.Background(), Config{}, srv.URL)
		if err != nil || got != kind || why == "" {
			t.Errorf("%s: detected %s (%q), %v", kind, got, why, err)
			continue
		}
		c, err := New(Config{URL: srv.URL + "/x", API: kind})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := c.Models(context.Background(), srv.URL)
		c.Close()
		if err != nil || len(ids) == 0 || ids[0] != model {
			t.Errorf("%s: models %v, %v; want %s first", kind, ids, err, model)
		}
	}
	srv := discoveryServer(t, "nothing")
	if _, _, err := Detect(context.Background(), Config{}, srv.URL); !errors.Is(err, ErrUndetected) || !strings.Contains(err.Error(), "/v1/models: 404") {
		t.Errorf("undetectable server: %v", err)
	}
	// A query stays a query: the documents' paths go before it (a
	// gateway's ?api-version= reaches /v1/models), and a token in it is
	// never quoted in the error.
	if _, _, err := Detect(context.Background(), Config{}, srv.URL+"/v1?token=QSECRET99"); !errors.Is(err, ErrUndetected) || strings.Contains(err.Error(), "QSECRET99") ||
		!strings.Contains(err.Error(), "/v1/models: 404") {
		t.Errorf("a URL with a query: %v", err)
	}
	var query string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openai/v1/models" {
			query = r.URL.RawQuery
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer gw.Close()
	if k, _, err := Detect(context.Background(), Config{}, gw.URL+"/openai/v1?api-version=2025-01-01"); err != nil || k != OpenAIChat || query != "api-version=2025-01-01" {
		t.Errorf("a gateway's base with its query: %s %v, the query it got %q", k, err, query)
	}
	// The path decides without asking.
	if k, _, err := Detect(context.Background(), Config{}, "http://127.0.0.1:1/api/chat"); err != nil || k != Ollama {
		t.Errorf("path detection: %s %v", k, err)
	}
}

func TestTLSAndHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\ndata: [DONE]\n\n", r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	// Unverified: refused, then accepted with --insecure.
	c, _ := New(Config{URL: srv.URL})
	if res := c.Do(context.Background(), Request{}); res.Class != Connection || !strings.Contains(res.Err, "certificate") {
		t.Fatalf("untrusted certificate: %v %s", res.Class, res.Err)
	}
	c.Close()
	c, _ = New(Config{URL: srv.URL, Insecure: true})
	if res := c.Do(context.Background(), Request{}); !res.OK() || res.TLS <= 0 {
		t.Fatalf("--insecure: %v %s, TLS %v", res.Class, res.Err, res.TLS)
	}
	c.Close()
	// Trusted through --cacert, and HTTP/2 is used where offered.
	path := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: srv.URL, CACert: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := c.Do(context.Background(), Request{})
	second := c.Do(context.Background(), Request{})
	if !first.OK() || !second.OK() || first.Proto != "HTTP/2.0" {
		t.Fatalf("--cacert: %v %s, proto %q", first.Class, first.Err, first.Proto)
	}
	if first.ConnReused || first.Connect <= 0 || !second.ConnReused || second.Connect != 0 {
		t.Fatalf("connection phases: first reused %v connect %v; second reused %v connect %v",
			first.ConnReused, first.Connect, second.ConnReused, second.Connect)
	}
	var se *SettingError
	if _, err := New(Config{URL: srv.URL, CACert: filepath.Join(t.TempDir(), "none.pem")}); !errors.As(err, &se) || se.Setting != SettingCACert {
		t.Fatalf("missing CA file: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"slow down"}}`)
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL})
	defer c.Close()
	res := c.Do(context.Background(), Request{})
	if res.Class != HTTP429 || res.RetryAfter != 3*time.Second {
		t.Fatalf("class %v retry-after %v", res.Class, res.RetryAfter)
	}
	if d := retryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); d < 59*time.Minute {
		t.Fatalf("HTTP-date Retry-After read as %v", d)
	}
}

func TestNDJSONReader(t *testing.T) {
	r := NewNDJSONReader(strings.NewReader("{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\""))
	var got []string
	var partial []bool
	for {
		line, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(line))
		partial = append(partial, r.Partial)
	}
	if strings.Join(got, "|") != `{"a":1}|{"b":2}|{"c"` || fmt.Sprint(partial) != "[false false true]" {
		t.Fatalf("lines %q partial %v", got, partial)
	}
	_, err := NewNDJSONReader(strings.NewReader(strings.Repeat("x", MaxLineBytes+1))).Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("huge line: %v", err)
	}
}

func FuzzNDJSONReader(f *testing.F) {
	for _, s := range []string{"{}\n", "{\"a\":1}\r\n{\"b\"", "\n\n\n", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewNDJSONReader(strings.NewReader(string(in)))
		total := 0
		for {
			line, err := r.Next()
			if err != nil {
				break
			}
			total += len(line)
			if total > len(in) {
				t.Fatalf("read %d bytes from %d", total, len(in))
			}
		}
	})
}

func BenchmarkNDJSONReader(b *testing.B) {
	msg := `{"model":"llama3.2","created_at":"2026-11-29T21:01:30Z","message":{"role":"assistant","content":" word"},"done":false}` + "\n"
	in := strings.Repeat(msg, 1000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewNDJSONReader(strings.NewReader(in))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}

// BenchmarkParse is the cost of reading one message's meaning, per kind.
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct {
		kind Kind
		msg  string
	}{
		{OpenAIChat, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}`},
		{Ollama, `{"model":"llama3.2","created_at":"2026-11-29T21:01:30Z","message":{"role":"assistant","content":" word"},"done":false}`},
		{TGI, `{"index":1,"token":{"id":578,"text":" word","logprob":-0.25,"special":false},"generated_text":null,"details":null}`},
	} {
		b.Run(string(c.kind), func(b *testing.B) {
			proto, _ := newProtocol(&Config{API: c.kind, URL: "http://h/"})
			var p parser
			data := []byte(c.msg)
			b.ReportAllocs()
			for b.Loop() {
				if info, err := proto.parse(&p, data); err != nil || !info.output {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestWholeAnswerNotJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>502 Bad Gateway</html>")
	}))
	defer srv.Close()
	for _, kind := range []Kind{OpenAIChat, Ollama, TGI, Generic} {
		c, _ := New(Config{URL: srv.URL, API: kind, NoStream: true})
		res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 1})
		c.Close()
		if res.Class != Malformed || !strings.Contains(res.Err, "text/html") || !strings.Contains(res.Err, "502 Bad Gateway") {
			t.Errorf("%s: class %v (%s), want malformed: a web page", kind, res.Class, res.Err)
		}
	}
}

func TestConversationBodies(t *testing.T) {
	req := Request{Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, MaxTokens: 3}
	chat, _ := newProtocol(&Config{API: OpenAIChat})
	b, _ := chat.body("m", req)
	var doc any
	json.Unmarshal(b, &doc)
	if dig(doc, "messages.0.role") != "system" || dig(doc, "messages.1.content") != "hi" {
		t.Fatalf("chat body %s", b)
	}
	comp, _ := newProtocol(&Config{API: OpenAICompletions})
	b, _ = comp.body("m", req)
	json.Unmarshal(b, &doc)
	if dig(doc, "prompt") != "be brief\nhi" {
		t.Fatalf("completions body %s", b)
	}
}
