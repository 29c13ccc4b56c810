package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorText reads the message out of every error shape recorded from
// a real server, and keeps a body that is no such JSON as it is.
func TestErrorText(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"vllm-sim/error-unknown-model.body", "The model `nope` does not exist. (NotFoundError)"},
		{"vllm-sim/error-injected-429.body", "Simulated error triggered by X-Return-Error header (code 429) (RateLimitError)"},
		{"ollama/error-chat-unknown-model.body", "model 'does-not-exist' not found"},
		{"ollama/error-openai-chat-unknown-model.body", "model 'does-not-exist' not found (not_found_error)"},
	} {
		body, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := errorText(body); got != c.want {
			t.Errorf("%s: %q, want %q", c.file, got, c.want)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","code":400}`, "This model's maximum context length is 8192 tokens. (BadRequestError)"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{`{"error":"Input validation error: inputs tokens + max_new_tokens must be <= 4096","error_type":"validation"}`, "Input validation error: inputs tokens + max_new_tokens must be <= 4096"},
		{"upstream   connect error\n or disconnect", "upstream connect error or disconnect"},
		{`{"error":{"message":"cut at the excerpt`, `{"error":{"message":"cut at the excerpt`},
		{`{"error":{"code":500}}`, `{"error":{"code":500}}`},
		{`{"error":{"message":"two\n\nlines"}}`, "two lines"},
		{"", ""},
	} {
		if got := errorText([]byte(c.body)); got != c.want {
			t.Errorf("%q: %q, want %q", c.body, got, c.want)
		}
	}
	if got := errorText([]byte(`{"error":{"message":"` + strings.Repeat("x", 3000) + `"}}`)); len(got) != 3000 {
		t.Errorf("a long message: %d bytes", len(got))
	}
}
