// Package hostile is a set of deliberately hostile inference endpoints
// for tests: each answers like an OpenAI-compatible server but puts
// terminal escapes, bidi overrides or lies where a server's text or counts
// go, or (StartH2) misbehaves at the HTTP/2 frame level. They serve
// 127.0.0.1 only (httptest) and are bounded in time.
package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Payload is the text a hostile server hides in what it sends: a window
// title, a cleared screen, the clipboard through OSC 52 and reversed text.
const Payload = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;aGk=\x07\u202egnp.exe"

// Kind names a hostile behaviour.
type Kind string

// The behaviours.
const (
	// ErrorBody answers every completion with HTTP 500 and Payload in
	// its body.
	ErrorBody Kind = "error-body"
	// StreamError streams one chunk, then an error object whose message
	// holds Payload (a raw ESC inside a JSON string passes JSON parsers).
	StreamError Kind = "stream-error"
	// ModelName lists a model whose id holds Payload and streams answers
	// that say nothing wrong.
	ModelName Kind = "model-name"
)

// Start serves kind on 127.0.0.1 until the test ends and returns the base
// URL (".../v1").
func Start(t testing.TB, kind Kind) string {
	t.Helper()
	hs := httptest.NewServer(Handler(kind))
	t.Cleanup(hs.Close)
	return hs.URL + "/v1"
}

// Handler is kind's endpoint.
func Handler(kind Kind) http.Handler {
	mux := http.NewServeMux()
	model := "m"
	if kind == ModelName {
		model = "m" + Payload
	}
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		id, _ := json.Marshal(model) // valid JSON: \u001b decodes to ESC
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%s,"object":"model"}]}`, id)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		switch kind {
		case ErrorBody:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"message":"%s"}}`, rawJSON(Payload))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		chunk := func(s string) {
			fmt.Fprintf(w, "data: %s\n\n", s)
			if fl != nil {
				fl.Flush()
			}
		}
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
		time.Sleep(time.Millisecond)
		if kind == StreamError {
			chunk(fmt.Sprintf(`{"error":{"message":"%s","type":"server_error"}}`, rawJSON(Payload)))
			return
		}
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}`)
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}`)
		chunk("[DONE]")
	})
	return mux
}

// rawJSON puts s inside a JSON string with its control bytes left raw,
// as a hostile server would (only quotes and backslashes escaped).
func rawJSON(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// Allocated returns the bytes the process allocated while fn ran, over
// all its goroutines: a bound on what fn cost that holds under -race,
// where the heap's size does not (tests' servers should write from
// buffers built before).
func Allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
