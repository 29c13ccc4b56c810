package probe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStreamIgnoredOrAPage: a server that answers a streamed request
// whole (it ignored "stream") is read, and the result says so
// (Unstreamed); a 200 web page (a proxy's, a login) is no answer, and is
// said to be one, not called a cut stream.
func TestStreamIgnoredOrAPage(t *testing.T) {
	var page bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if page {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<html><body>Sign in to continue</body></html>")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"one two three"},"finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}`)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "m", API: OpenAIChat, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 3})
	if !res.OK() || !res.Unstreamed || res.HasTTFT || res.OutputTokens != 3 {
		t.Fatalf("a whole answer to a streamed request: %+v", res)
	}
	page = true
	res = c.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 3})
	if res.Class != Malformed || !strings.Contains(res.Err, "text/html") || !strings.Contains(res.Err, "Sign in") {
		t.Fatalf("a web page: %v %q", res.Class, res.Err)
	}
}
