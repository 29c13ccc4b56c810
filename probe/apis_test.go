package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAPIFixtures replays the Responses, Anthropic Messages and
// embeddings recordings (Ollama v0.24.0) and the written streams of what
// Ollama never sends (reasoning, failures mid-stream, cuts): counts, the
// split of reasoning and answer, and errors by class.
func TestAPIFixtures(t *testing.T) {
	tests := []struct {
		fixture         string
		kind            Kind
		noStream        bool
		batch           int
		class           ErrorClass
		status          int
		in, out         int
		messages        int
		reasoning       int // reasoning tokens
		reasoningMsgs   int
		estimated       bool // reasoning tokens estimated
		inputs          int
		errSubstring    string
		reasoningBefore bool // TTFR before TTFO
	}{
		{fixture: "ollama/openai-responses-stream", kind: OpenAIResponses, status: 200, in: 2, out: 16, messages: 16},
		{fixture: "ollama/openai-responses-stream-raw", kind: OpenAIResponses, status: 200, in: 2, out: 16, messages: 16},
		{fixture: "ollama/openai-responses-instructions", kind: OpenAIResponses, status: 200, in: 2, out: 16, messages: 16},
		{fixture: "ollama/openai-responses-input-messages", kind: OpenAIResponses, status: 200, in: 5, out: 16, messages: 16},
		{fixture: "ollama/openai-responses-nostream", kind: OpenAIResponses, noStream: true, status: 200, in: 2, out: 16, messages: 1},
		{fixture: "ollama/error-openai-responses-unknown-model", kind: OpenAIResponses, noStream: true, class: HTTP4xx, status: 404, errSubstring: "model 'does-not-exist' not found"},
		{fixture: "ollama/error-openai-responses-stream-unknown-model", kind: OpenAIResponses, class: HTTP4xx, status: 404, errSubstring: "model 'does-not-exist' not found"},
		{fixture: "ollama/anthropic-messages-stream", kind: Anthropic, status: 200, in: 2, out: 16, messages: 16},
		{fixture: "ollama/anthropic-messages-stream-raw", kind: Anthropic, status: 200, in: 2, out: 16, messages: 16},
		// message_start says 6 (Ollama's estimate), message_delta 2.
		{fixture: "ollama/anthropic-messages-system", kind: Anthropic, status: 200, in: 2, out: 16, messages: 16},
		{fixture: "ollama/anthropic-messages-nostream", kind: Anthropic, noStream: true, status: 200, in: 2, out: 16, messages: 1},
		{fixture: "ollama/error-anthropic-messages-unknown-model", kind: Anthropic, noStream: true, class: HTTP4xx, status: 404, errSubstring: "model 'does-not-exist' not found"},
		{fixture: "ollama/error-anthropic-messages-stream-unknown-model", kind: Anthropic, class: HTTP4xx, status: 404, errSubstring: "model 'does-not-exist' not found"},
		{fixture: "ollama/error-anthropic-messages-no-max-tokens", kind: Anthropic, class: HTTP4xx, status: 400, errSubstring: "max_tokens is required"},
		{fixture: "ollama/openai-embeddings-string", kind: OpenAIEmbeddings, status: 200, in: 2, inputs: 1},
		{fixture: "ollama/openai-embeddings-base64", kind: OpenAIEmbeddings, status: 200, in: 2, inputs: 1},
		{fixture: "ollama/openai-embeddings-array", kind: OpenAIEmbeddings, batch: 3, status: 200, in: 10, inputs: 3},
		{fixture: "ollama/openai-embeddings-array", kind: OpenAIEmbeddings, batch: 2, class: Malformed, status: 200, errSubstring: "3 embeddings for 2 inputs"},
		{fixture: "ollama/embed", kind: OllamaEmbed, status: 200, in: 2, inputs: 1},
		{fixture: "ollama/embed-array", kind: OllamaEmbed, batch: 3, status: 200, in: 10, inputs: 3},
		{fixture: "ollama/error-openai-embeddings-unknown-model", kind: OpenAIEmbeddings, class: HTTP4xx, status: 404, errSubstring: `model "does-not-exist" not found`},
		{fixture: "ollama/error-embed-unknown-model", kind: OllamaEmbed, class: HTTP4xx, status: 404, errSubstring: `model "does-not-exist" not found`},
		// Reasoning: the server's split where it gives one, else shared
		// by messages.
		{fixture: "written/responses/stream-reasoning", kind: OpenAIResponses, status: 200, in: 7, out: 5, messages: 5, reasoning: 3, reasoningMsgs: 3, reasoningBefore: true},
		{fixture: "written/responses/stream-reasoning-noevent", kind: OpenAIResponses, status: 200, in: 7, out: 5, messages: 5, reasoning: 3, reasoningMsgs: 3, reasoningBefore: true},
		{fixture: "written/sglang/chat-stream-reasoning", kind: OpenAIChat, status: 200, in: 12, out: 6, messages: 6, reasoning: 4, reasoningMsgs: 4, estimated: true, reasoningBefore: true},
		{fixture: "written/anthropic/stream-thinking", kind: Anthropic, status: 200, in: 12, out: 5, messages: 5, reasoning: 3, reasoningMsgs: 3, estimated: true, reasoningBefore: true},
		{fixture: "written/ollama/chat-stream-thinking", kind: Ollama, status: 200, in: 4, out: 5, messages: 5, reasoning: 3, reasoningMsgs: 3, estimated: true, reasoningBefore: true},
		{fixture: "written/responses/stream-incomplete-length", kind: OpenAIResponses, status: 200, in: 3, out: 2, messages: 2},
		{fixture: "written/responses/stream-incomplete-filter", kind: OpenAIResponses, class: HTTP4xx, status: 200, errSubstring: "content_filter"},
		{fixture: "written/responses/stream-failed", kind: OpenAIResponses, class: HTTP5xx, status: 200, errSubstring: "The model crashed"},
		{fixture: "written/responses/stream-error", kind: OpenAIResponses, class: HTTP429, status: 200, errSubstring: "Rate limit reached"},
		{fixture: "written/responses/stream-error-noevent", kind: OpenAIResponses, class: HTTP429, status: 200, errSubstring: "Rate limit reached"},
		{fixture: "written/responses/stream-cut", kind: OpenAIResponses, class: StreamCut, status: 200, errSubstring: "before the answer was complete"},
		{fixture: "written/anthropic/stream-error", kind: Anthropic, class: HTTP5xx, status: 200, errSubstring: "Overloaded"},
		{fixture: "written/anthropic/stream-error-noevent", kind: Anthropic, class: HTTP5xx, status: 200, errSubstring: "Overloaded"},
		{fixture: "written/anthropic/stream-cut", kind: Anthropic, class: StreamCut, status: 200, errSubstring: "before the answer was complete"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			srv := fixtureServer(t, tt.fixture, 0)
			cfg := Config{URL: srv.URL, Model: "m", APIKey: "sk-secretsecret", Timeout: 5 * time.Second, API: tt.kind, NoStream: tt.noStream}
			cfg.Body.Batch = tt.batch
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 16})
			if res.Class != tt.class || res.Status != tt.status {
				t.Fatalf("class %v status %d (err %q), want %v %d", res.Class, res.Status, res.Err, tt.class, tt.status)
			}
			if tt.class != OK {
				if !strings.Contains(res.Err, tt.errSubstring) {
					t.Fatalf("err %q lacks %q", res.Err, tt.errSubstring)
				}
				return
			}
			if res.InputTokens != tt.in || res.OutputTokens != tt.out || res.InputEstimated || (tt.out > 0 && res.OutputEstimated) {
				t.Fatalf("tokens in %d out %d (estimated %v %v), want %d %d", res.InputTokens, res.OutputTokens, res.InputEstimated, res.OutputEstimated, tt.in, tt.out)
			}
			if res.Messages != tt.messages || res.Inputs != tt.inputs {
				t.Fatalf("%d messages %d inputs, want %d %d", res.Messages, res.Inputs, tt.messages, tt.inputs)
			}
			if res.ReasoningTokens != tt.reasoning || res.ReasoningMessages != tt.reasoningMsgs || res.ReasoningEstimated != tt.estimated {
				t.Fatalf("reasoning: %d tokens in %d messages (estimated %v), want %d %d %v",
					res.ReasoningTokens, res.ReasoningMessages, res.ReasoningEstimated, tt.reasoning, tt.reasoningMsgs, tt.estimated)
			}
			if res.AnswerTokens() != tt.out-tt.reasoning {
				t.Fatalf("answer tokens %d", res.AnswerTokens())
			}
			streamed := !tt.noStream && !tt.kind.Embeds()
			if res.HasTTFT != streamed || res.HasTTFO != streamed || res.HasTTFR != tt.reasoningBefore {
				t.Fatalf("TTFT %v TTFO %v TTFR %v, want %v %v %v", res.HasTTFT, res.HasTTFO, res.HasTTFR, streamed, streamed, tt.reasoningBefore)
			}
			switch {
			case tt.reasoningBefore && (res.TTFR != res.TTFT || res.TTFO < res.TTFR):
				t.Fatalf("TTFR %v TTFT %v TTFO %v: TTFT is the first reasoning, TTFO later", res.TTFR, res.TTFT, res.TTFO)
			case streamed && !tt.reasoningBefore && res.TTFO != res.TTFT:
				t.Fatalf("TTFO %v differs from TTFT %v with no reasoning", res.TTFO, res.TTFT)
			}
			if tt.kind.Embeds() && (res.HasTTFT || res.E2E <= 0) {
				t.Fatalf("embeddings: TTFT %v E2E %v", res.HasTTFT, res.E2E)
			}
		})
	}
}

// replayEvents reads a recorded SSE body as readStream does and returns
// each event's name and the JSON's type, and the index of the first
// message that carries output.
func replayEvents(t *testing.T, p protocol, file string) (names, types []string, first int) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	st := getStreamState(bytes.NewReader(body))
	defer st.release()
	r := NewSSEReader(bytes.NewReader(body))
	first = -1
	for i := 0; ; i++ {
		ev, err := r.Next()
		if err == io.EOF {
			return names, types, first
		}
		if err != nil {
			t.Fatal(err)
		}
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(ev.Data, &typ); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		info, err := p.parse(&st.parser, ev.Data)
		if err != nil || info.errMsg != nil {
			t.Fatalf("event %d: %v %s", i, err, info.errMsg)
		}
		if info.output && first < 0 {
			first = i
		}
		names, types = append(names, ev.Name), append(types, typ.Type)
	}
}

// TestRecordedEventOrder holds the parser to the recordings' event
// order: the event: line names the JSON's type, the first output is the
// first delta (after 4 opening events on Responses, 2 on Anthropic), and
// the stream closes with response.completed / message_stop.
func TestRecordedEventOrder(t *testing.T) {
	for _, tt := range []struct {
		file          string
		p             protocol
		n, first      int
		opens, closes string
	}{
		{"ollama/openai-responses-stream.body", &responsesProto{stream: true}, 24, 4, "response.created", "response.completed"},
		{"ollama/openai-responses-input-messages.body", &responsesProto{stream: true}, 24, 4, "response.created", "response.completed"},
		{"ollama/anthropic-messages-stream.body", &anthropicProto{stream: true}, 21, 2, "message_start", "message_stop"},
		{"written/anthropic/stream-thinking.body", &anthropicProto{stream: true}, 14, 3, "message_start", "message_stop"},
	} {
		names, types, first := replayEvents(t, tt.p, tt.file)
		if len(names) != tt.n || first != tt.first || types[0] != tt.opens || types[len(types)-1] != tt.closes {
			t.Errorf("%s: %d events, first output at %d, %s … %s; want %d, %d, %s … %s",
				tt.file, len(names), first, types[0], types[len(types)-1], tt.n, tt.first, tt.opens, tt.closes)
		}
		for i := range names {
			if names[i] != types[i] {
				t.Errorf("%s: event %d named %q, its type %q", tt.file, i, names[i], types[i])
			}
		}
	}
}

// TestAPIBodies checks what each new kind sends: the Responses API's
// input, instructions and max_output_tokens; Anthropic's max_tokens,
// system and messages; the embeddings' batch of inputs.
func TestAPIBodies(t *testing.T) {
	conv := Request{Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, MaxTokens: 9}
	temp := 0.5
	for _, tt := range []struct {
		p    protocol
		req  Request
		want string
	}{
		{&responsesProto{stream: true}, Request{Prompt: "hi", MaxTokens: 9}, `{"input":"hi","max_output_tokens":9,"model":"m","stream":true}`},
		{&responsesProto{opts: BodyOptions{Temperature: &temp}}, conv, `{"input":"hi","instructions":"be brief","max_output_tokens":9,"model":"m","stream":false,"temperature":0.5}`},
		{&responsesProto{}, Request{Messages: []Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}}, MaxTokens: 9},
			`{"input":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"max_output_tokens":9,"model":"m","stream":false}`},
		{&anthropicProto{stream: true}, conv, `{"max_tokens":9,"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"system":"be brief"}`},
		{&anthropicProto{}, Request{Prompt: "hi"}, `{"max_tokens":1,"messages":[{"role":"user","content":"hi"}],"model":"m"}`},
		// --fixed-output: vLLM's engine takes ignore_eos on both.
		{&responsesProto{opts: BodyOptions{IgnoreEOS: true, MinTokens: true}}, Request{Prompt: "hi", MaxTokens: 9}, `{"ignore_eos":true,"input":"hi","max_output_tokens":9,"model":"m","stream":false}`},
		{&anthropicProto{opts: BodyOptions{IgnoreEOS: true, MinTokens: true}}, Request{Prompt: "hi", MaxTokens: 9}, `{"ignore_eos":true,"max_tokens":9,"messages":[{"role":"user","content":"hi"}],"model":"m"}`},
		{&embedProto{}, Request{Prompt: "hi"}, `{"encoding_format":"float","input":"hi","model":"m"}`},
		{&embedProto{opts: BodyOptions{Batch: 3}}, Request{Prompt: "hi"}, `{"encoding_format":"float","input":["hi","1 hi","2 hi"],"model":"m"}`},
		{&embedProto{native: true, opts: BodyOptions{Batch: 2}}, Request{Prompt: "hi"}, `{"input":["hi","1 hi"],"model":"m"}`},
	} {
		b, err := tt.p.body("m", tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != tt.want {
			t.Errorf("body\n%s\nwant\n%s", got, tt.want)
		}
	}
}

// TestAnthropicKey: the key goes in x-api-key with anthropic-version,
// never as a bearer token; a header given wins over both; and a key
// echoed in an error never reaches the Result.
func TestAnthropicKey(t *testing.T) {
	const key = "sk-ant-secretsecret"
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+r.Header.Get("x-api-key")+`"}}`)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		header      http.Header
		key, wantV  string
		wantKeyHead string
	}{
		{nil, key, AnthropicVersion, key},
		{http.Header{"Anthropic-Version": {"2024-01-01"}, "X-Api-Key": {"sk-ant-fromheader"}}, "", "2024-01-01", "sk-ant-fromheader"},
	} {
		c, err := New(Config{URL: srv.URL + "/v1/messages", Model: "m", API: Anthropic, APIKey: tt.key, Header: tt.header, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 4})
		c.Close()
		h := <-got
		if h.Get("Authorization") != "" || h.Get("x-api-key") != tt.wantKeyHead || h.Get("anthropic-version") != tt.wantV {
			t.Errorf("headers %v", h)
		}
		if res.Class != HTTP4xx || strings.Contains(res.Err, "secretsecret") || strings.Contains(res.Err, "fromheader") {
			t.Errorf("class %v err %q", res.Class, res.Err)
		}
	}
}

// TestAPIPaths: the new kinds' endpoints from a base URL, and the paths
// that name them.
func TestAPIPaths(t *testing.T) {
	for _, tt := range []struct {
		kind      Kind
		raw, want string
	}{
		{OpenAIResponses, "http://h:1/v1", "http://h:1/v1/responses"},
		{OpenAIResponses, "http://h:1/v1/chat/completions", "http://h:1/v1/responses"},
		{Anthropic, "http://h:1", "http://h:1/v1/messages"},
		{Anthropic, "http://h:1/v1/messages", "http://h:1/v1/messages"},
		{OpenAIEmbeddings, "http://h:1/v1/", "http://h:1/v1/embeddings"},
		{OllamaEmbed, "http://h:11434", "http://h:11434/api/embed"},
		{OllamaEmbed, "http://h:11434/api/chat", "http://h:11434/api/embed"},
		{OllamaEmbed, "http://h:11434/api/embed", "http://h:11434/api/embed"},
	} {
		if got, err := EndpointURL(tt.kind, tt.raw, true); err != nil || got != tt.want {
			t.Errorf("EndpointURL(%s, %s) = %s, %v; want %s", tt.kind, tt.raw, got, err, tt.want)
		}
	}
	for raw, want := range map[string]Kind{
		"http://h/v1/responses": OpenAIResponses, "http://h/v1/messages": Anthropic,
		"http://h/v1/embeddings": OpenAIEmbeddings, "http://h/api/embed": OllamaEmbed,
	} {
		if k, _, ok := KindFromPath(raw); !ok || k != want {
			t.Errorf("KindFromPath(%s) = %s, %v; want %s", raw, k, ok, want)
		}
	}
}

// TestAPIEventCap: a Responses or Messages stream that sends events
// without end, none of them the answer's end, is stopped at the cap on
// one request's messages, as every stream is, and counted malformed.
func TestAPIEventCap(t *testing.T) {
	for kind, event := range map[Kind]string{
		OpenAIResponses: "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"r\"}}\n\n",
		Anthropic:       "event: ping\ndata: {\"type\":\"ping\"}\n\n",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < 10*OutputCap(4) && r.Context().Err() == nil; i++ {
				io.WriteString(w, event)
			}
		}))
		c, err := New(Config{URL: srv.URL, Model: "m", API: kind, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 4})
		c.Close()
		srv.Close()
		if res.Class != Malformed || !strings.Contains(res.Err, "more than") {
			t.Errorf("%s: %v %q", kind, res.Class, res.Err)
		}
	}
}
