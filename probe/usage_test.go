package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAbsurdUsage: counts that cannot be true are set aside for the
// counted messages, and flagged. Before, 10^18 completion tokens printed
// -2374500088985038336.0 tok/s out.
func TestAbsurdUsage(t *testing.T) {
	const content = `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n"
	tests := []struct {
		name              string
		usage             string
		out, in           int
		outEst, inEst, ig bool
	}{
		{"honest", `{"prompt_tokens":7,"completion_tokens":3}`, 3, 7, false, false, false},
		{"10^18 out", `{"prompt_tokens":7,"completion_tokens":1000000000000000000}`, 3, 7, true, false, true},
		{"negative out", `{"prompt_tokens":7,"completion_tokens":-5}`, 3, 7, true, false, true},
		{"1e30 out", `{"prompt_tokens":7,"completion_tokens":1e30}`, 3, 7, true, false, true},
		{"past int64 out", `{"prompt_tokens":7,"completion_tokens":99999999999999999999}`, 3, 7, true, false, true},
		{"fraction out", `{"prompt_tokens":7,"completion_tokens":2.5}`, 3, 7, true, false, true},
		{"just past the cap", `{"prompt_tokens":7,"completion_tokens":105}`, 3, 7, true, false, true},
		{"at the cap", `{"prompt_tokens":7,"completion_tokens":104}`, 104, 7, false, false, false},
		{"whole float", `{"prompt_tokens":7,"completion_tokens":3.0}`, 3, 7, false, false, false},
		{"10^18 in", `{"prompt_tokens":1000000000000000000,"completion_tokens":3}`, 3, 0, false, true, true},
		{"negative in", `{"prompt_tokens":-5,"completion_tokens":3}`, 3, 0, false, true, true},
		{"1e30 in", `{"prompt_tokens":1e30,"completion_tokens":3}`, 3, 0, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Repeat(content, 3) + `data: {"choices":[],"usage":` + tt.usage + "}\n\ndata: [DONE]\n\n"
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, body)
			}))
			defer srv.Close()
			// max_tokens 10: the output cap is 4×10+64 = 104.
			res := newTestClient(t, srv.URL, TTFTFirstOutput).Do(context.Background(), Request{Prompt: "hello", MaxTokens: 10})
			if !res.OK() {
				t.Fatalf("%v: %s", res.Class, res.Err)
			}
			if res.OutputTokens != tt.out || res.InputTokens != tt.in || res.OutputEstimated != tt.outEst || res.InputEstimated != tt.inEst || res.UsageIgnored != tt.ig {
				t.Fatalf("out %d (estimated %v), in %d (estimated %v), ignored %v; want %d (%v), %d (%v), %v",
					res.OutputTokens, res.OutputEstimated, res.InputTokens, res.InputEstimated, res.UsageIgnored,
					tt.out, tt.outEst, tt.in, tt.inEst, tt.ig)
			}
		})
	}
	t.Run("whole answer", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1e30,"completion_tokens":-5}}`)
		}))
		defer srv.Close()
		res := newTestClient(t, srv.URL, TTFTFirstOutput).Do(context.Background(), Request{Prompt: "hello", MaxTokens: 10})
		if !res.OK() || res.OutputTokens != 1 || !res.OutputEstimated || !res.InputEstimated || !res.UsageIgnored {
			t.Fatalf("%+v", res)
		}
	})
}
