package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestResponseIDCapped: a server's response id is kept cut to maxIDBytes,
// streamed and whole, in every kind that reads one (an 8 MB id was copied
// into the requests log of every request: 159 MB from 19).
func TestResponseIDCapped(t *testing.T) {
	id := "chatcmpl-" + strings.Repeat("é", 250_000) // 500 KB, under the line cap
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/responses":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":1,"output_tokens":1}}`, id)
		case r.URL.Path == "/v1/messages":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`, id)
		case strings.Contains(r.URL.RawQuery, "whole=true"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, id)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":%q,\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", id)
			fmt.Fprintf(w, "data: {\"id\":%q,\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", id)
		}
	}))
	defer srv.Close()
	for _, tt := range []struct {
		api   Kind
		path  string
		whole bool
	}{
		{OpenAIChat, "/v1/chat/completions?whole=false", false},
		{OpenAIChat, "/v1/chat/completions?whole=true", true},
		{OpenAIResponses, "/v1/responses", true},
		{Anthropic, "/v1/messages", true},
	} {
		c, err := New(Config{URL: srv.URL + tt.path, API: tt.api, Model: "m", NoStream: tt.whole, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 4})
		c.Close()
		if !res.OK() || len(res.ID) > maxIDBytes || !strings.HasPrefix(res.ID, "chatcmpl-é") {
			t.Fatalf("%s %s: %v (%s), id of %d bytes", tt.api, tt.path, res.Class, res.Err, len(res.ID))
		}
		t.Logf("%s %s: a %d-byte id kept as %d bytes", tt.api, tt.path, len(id), len(res.ID))
	}
}

// TestAbsurdModelRefused: a model id past MaxModelBytes in /v1/models is
// never taken (a 3 MB one made a 3 MB summary line and went into every
// request body): the next one is, and a list of nothing else is an error
// that says so. The server receives no request body with it.
func TestAbsurdModelRefused(t *testing.T) {
	huge := strings.Repeat("m", 3<<20)
	var only atomic.Bool
	var bodyBytes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			if only.Load() {
				fmt.Fprintf(w, `{"object":"list","data":[{"id":%q}]}`, huge)
				return
			}
			fmt.Fprintf(w, `{"object":"list","data":[{"id":%q},{"id":"sim-llama-8b"}]}`, huge)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		bodyBytes.Add(n)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "m", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids, err := c.Models(context.Background(), srv.URL+"/v1")
	if err != nil || len(ids) != 1 || ids[0] != "sim-llama-8b" {
		t.Fatalf("models %d %v", len(ids), err)
	}
	only.Store(true)
	ids, err = c.Models(context.Background(), srv.URL+"/v1")
	if err == nil || len(ids) != 0 || !strings.Contains(err.Error(), "longer than 1024 bytes; pass --model") || len(err.Error()) > 300 {
		t.Fatalf("models %d, err %.300v", len(ids), err)
	}
	t.Logf("%s", err)
	if bodyBytes.Load() != 0 {
		t.Fatalf("%d body bytes sent", bodyBytes.Load())
	}
}
