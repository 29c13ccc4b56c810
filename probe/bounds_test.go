package probe

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/tools/hostile"
)

// numbers is a JSON message whose "usage" is n zeros: cheap to send,
// dear to parse (one value each).
func numbers(n int) string {
	return `{"id":"x","choices":[],"usage":[` + strings.Repeat("0,", n-1) + `0]}`
}

// TestOneMessageBounded: one message of JSON values, streamed or whole,
// costs a bounded multiple of its size and ends as malformed, naming the
// cap; before the caps a 15 MB message took 3.97 GB at -c 1 (about 450
// bytes allocated for each "0,"). An honest message as large, in the kind
// that legitimately sends one (embeddings through generic), still reads.
func TestOneMessageBounded(t *testing.T) {
	tests := []struct {
		name   string
		api    Kind
		stream bool
		body   string
		want   string // in Err; "" for a success
		budget uint64 // bytes allocated by the request, at most
	}{
		// Under the line cap, past the value cap: the values stop it.
		{"stream of values", OpenAIChat, true, "data: " + numbers(500_000) + "\n\n", "cap on one message's values", 24 << 20},
		// Past the line cap: the line stops it before any parse.
		{"stream line of values", OpenAIChat, true, "data: " + numbers(8_000_000) + "\n\n", "cap on one line", 24 << 20},
		{"whole of values", OpenAIChat, false, numbers(2_000_000), "cap on one message's values", 48 << 20},
		{"whole past its cap", OpenAIChat, false, numbers(8_000_000), "cap on one whole answer", 48 << 20},
		{"ollama line of values", Ollama, true, `{"done":true,"context":[` + strings.Repeat("0,", 400_000) + "0]}\n", "cap on one message's values", 24 << 20},
		{"tgi whole of values", TGI, false, `{"generated_text":"x","details":{"tokens":[` + strings.Repeat("0,", 1_000_000) + "0]}}", "cap on one message's values", 48 << 20},
		// An embeddings-like answer of 262,144 floats (4,096 dimensions
		// by 64) in 5 MB is an honest answer of the generic kind.
		{"generic embeddings", Generic, false, `{"output":"x","data":[` + strings.Repeat("-0.0123456789,", 262_143) + "0.5]}", "", 256 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case tt.api == Ollama:
					w.Header().Set("Content-Type", "application/x-ndjson")
				case tt.stream:
					w.Header().Set("Content-Type", "text/event-stream")
				default:
					w.Header().Set("Content-Type", "application/json")
				}
				w.Write(body)
			}))
			defer srv.Close()
			c, err := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "m", API: tt.api, NoStream: !tt.stream, Timeout: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var res Result
			got := hostile.Allocated(func() { res = c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 16}) })
			t.Logf("%d-byte message: %d MiB allocated, %v: %s", len(body), got>>20, res.Class, res.Err)
			if tt.want == "" {
				if res.Class != OK {
					t.Fatalf("class %v (%s), want a success", res.Class, res.Err)
				}
			} else if res.Class != Malformed || !strings.Contains(res.Err, tt.want) {
				t.Fatalf("class %v (%q), want malformed naming %q", res.Class, res.Err, tt.want)
			}
			if got > tt.budget {
				t.Errorf("allocated %d MiB for one %d-byte message, want at most %d MiB", got>>20, len(body), tt.budget>>20)
			}
		})
	}
}

// TestEndlessStreamsAddUp: 64 streams of one endless line each hold at
// most a line cap apiece, so the bytes the client allocates between them
// stay far below what the old 16 MiB cap cost (1.8 GB resident at -c 64).
// Every request is counted as malformed.
func TestEndlessStreamsAddUp(t *testing.T) {
	if testing.Short() {
		t.Skip("64 endless streams")
	}
	srv := endlessServer(t, "text/event-stream", "data: ", "xxxxxxxx")
	c, err := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "m", Timeout: 60 * time.Second, MaxConns: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const streams = 64
	results := make([]Result, streams)
	got := hostile.Allocated(func() {
		var wg sync.WaitGroup
		for i := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 256})
			}()
		}
		wg.Wait()
	})
	for _, res := range results {
		if res.Class != Malformed || !strings.Contains(res.Err, "cap on one line") {
			t.Fatalf("class %v (%q), want malformed at the line cap", res.Class, res.Err)
		}
	}
	t.Logf("%d endless streams: %d MiB allocated", streams, got>>20)
	// A line cap each, grown by doubling (about twice the cap), and the
	// reads' buffers: not gigabytes.
	if want := uint64(streams) * 4 * MaxLineBytes; got > want {
		t.Errorf("allocated %d MiB over %d streams, want at most %d MiB", got>>20, streams, want>>20)
	}
}

// FuzzCheckValues: checkValues never lets through a message of more JSON
// values than its limit (counted by encoding/json: elements, members and
// the message itself).
func FuzzCheckValues(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,3],"b":{"c":"d,e[f"}}`, `[[[[[]]]]]`, `"x\"[,,,"`, `{"k\\":[0,0,0,0,0,0,0,0,0]}`} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = 1 + abs(limit)%16
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		if n := countJSON(v); n > limit && checkValues([]byte(s), limit) == nil {
			t.Fatalf("%q holds %d values, passed a limit of %d", s, n, limit)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}

// countJSON counts a decoded value's values.
func countJSON(v any) int {
	n := 1
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n += countJSON(e)
		}
	case map[string]any:
		for _, e := range x {
			n += countJSON(e)
		}
	}
	return n
}

// TestHugeHeadersRefused: an answer with 8 MB of headers fails as a
// connection error at the bound rather than being held whole, in every
// request in flight.
func TestHugeHeadersRefused(t *testing.T) {
	big := strings.Repeat("h", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 8000 {
			w.Header().Add("X-H"+strconv.Itoa(i), big)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "m", API: OpenAIChat, NoStream: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var res Result
	got := hostile.Allocated(func() { res = c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 16}) })
	t.Logf("%d KiB allocated, %v: %s", got>>10, res.Class, res.Err)
	if res.Class == OK || !strings.Contains(res.Err, "header") {
		t.Errorf("class %v (%q), want a failure naming the headers", res.Class, res.Err)
	}
	if got > 4<<20 {
		t.Errorf("allocated %d MiB for one answer's headers", got>>20)
	}
}
