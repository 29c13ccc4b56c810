package agent

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestShare: the shares add up to the whole, the remainder on the first
// indexes, each seed its own.
func TestShare(t *testing.T) {
	for _, tt := range []struct {
		whole int64
		of    int
	}{{5, 2}, {7, 3}, {2, 4}, {64, 4}, {0, 3}} {
		var sum int64
		seeds := map[uint64]bool{}
		for i := range tt.of {
			s := Share{Index: i, Of: tt.of}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			c := s.Count(tt.whole)
			if d := c - tt.whole/int64(tt.of); d < 0 || d > 1 || (d == 1) != (int64(i) < tt.whole%int64(tt.of)) {
				t.Errorf("%d of %d ways, index %d: %d", tt.whole, tt.of, i, c)
			}
			sum += c
			seeds[s.Seed(1)] = true
		}
		if sum != tt.whole || len(seeds) != tt.of {
			t.Errorf("%d split %d ways: %d in all, %d seeds", tt.whole, tt.of, sum, len(seeds))
		}
	}
	if r := (Share{1, 4}).Rate(10); r != 2.5 {
		t.Errorf("rate %g", r)
	}
	for _, s := range []Share{{-1, 2}, {2, 2}, {0, 0}, {0, MaxAgents + 1}} {
		if s.Check() == nil {
			t.Errorf("%+v passed", s)
		}
	}
}

// TestToken: the token is compared, a refusal logged without what was
// sent; a token file is bounded and a short token refused.
func TestToken(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	h := NewHandler([]byte("0123456789abcdef"), func() State { return State{Index: 1, Of: 2} }, func(_ context.Context, w io.Writer) (bool, error) {
		_, err := io.WriteString(w, `{"infertop":{}}`)
		return false, err
	}, func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, f)
	})
	for _, tt := range []struct {
		path, auth string
		code       int
	}{
		{"/state", "Bearer 0123456789abcdef", 200},
		{"/state", "Bearer 0123456789abcdeX", 401},
		{"/state", "Bearer 0123456789abcdef0", 401},
		{"/state", "", 401},
		{"/state", "Basic 0123456789abcdef", 401},
		{"/healthz", "", 200},
		{"/result", "Bearer 0123456789abcdef", 200},
		{"/result", "Bearer nope", 401},
		{"/other", "Bearer 0123456789abcdef", 404},
	} {
		r := httptest.NewRequest(http.MethodGet, tt.path, nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.code || (tt.code == 200 && tt.path == "/state" && !strings.Contains(w.Body.String(), `"of":2`)) {
			t.Errorf("%s with %q: %d %s", tt.path, tt.auth, w.Code, w.Body.String())
		}
	}
	if h.Refused() != 5 || len(logs) != 5 {
		t.Errorf("%d refused, %d logged", h.Refused(), len(logs))
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		content string
		ok      bool
	}{{"0123456789abcdef\n", true}, {"abc12\n", false}, {strings.Repeat("x", MaxTokenBytes+1), false},
		{"0123456789\nabcdef\n", false}, {"0123456789\x1babcdef", false}} { // a line break inside: no header carries it
		p := filepath.Join(dir, "token")
		if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		tok, err := ReadToken(p)
		if (err == nil) != tt.ok || (err != nil && strings.Contains(err.Error(), tt.content[:5])) {
			t.Errorf("%d bytes: %q, %v", len(tt.content), tok, err)
		}
	}
}

// TestListenPlain: plain HTTP only on a loopback address, and only when
// asked for.
func TestListenPlain(t *testing.T) {
	for _, tt := range []struct {
		addr  string
		plain bool
		ok    bool
	}{{"127.0.0.1:0", true, true}, {"127.0.0.1:0", false, false}, {"0.0.0.0:0", true, false}, {":0", true, false}, {"[::1]:0", true, true}} {
		ln, err := Listen(tt.addr, nil, tt.plain)
		if ln != nil {
			ln.Close()
		}
		if (err == nil) != tt.ok && !(tt.addr == "[::1]:0" && err != nil && strings.Contains(err.Error(), "assign")) {
			t.Errorf("%s plain=%t: %v", tt.addr, tt.plain, err)
		}
	}
}

// TestStreamsState: a load's streams survive an agent's state, and an
// age an agent should never send (negative, past a day, not a number)
// is none.
func TestStreamsState(t *testing.T) {
	in := load.Streams{Waiting: 2, Generating: 5, Stalled: 1, OldestWaiting: 1500 * time.Millisecond, OldestGenerating: 61 * time.Second,
		LongestStall: 3 * time.Second}
	if got := StreamsOf(in).Load(); got != in {
		t.Errorf("round trip: %+v, want %+v", got, in)
	}
	bad := StreamsState{Waiting: -3, OldestWaitingMS: -1, OldestGeneratingMS: 1e12, LongestStallMS: math.NaN()}
	if got := bad.Load(); got != (load.Streams{}) {
		t.Errorf("nonsense taken: %+v", got)
	}
}

// TestRefusalsBounded: a flood of refused requests with 15 KB method
// names writes at most the bound a second (and a count), each line cut
// and sanitised; every refusal is still counted.
func TestRefusalsBounded(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	h := NewHandler([]byte("a-token-of-sixteen-bytes"), func() State { return State{} }, nil, func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, a...))
	})
	method := strings.Repeat("X", 15<<10) + "\x1b[2J"
	for range 500 {
		r := httptest.NewRequest(http.MethodGet, "/state", nil)
		r.Method = method
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	mu.Lock()
	defer mu.Unlock()
	if h.Refused() != 500 {
		t.Errorf("refused %d, want 500 counted", h.Refused())
	}
	if len(lines) > 2*LogLinesPerSecond {
		t.Errorf("%d lines for 500 refusals, want at most %d a second", len(lines), LogLinesPerSecond)
	}
	for _, l := range lines {
		if len(l) > 1024 || strings.Contains(l, "\x1b") {
			t.Fatalf("a line of %d bytes, or unsanitised", len(l))
		}
	}
}
