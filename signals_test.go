package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestTwoSignals: in process, with the signals injected: the first
// SIGINT ends the run with a drain (the requests in flight may finish),
// the second stops it at once, long before the drain's minute; the
// report is written and counts the requests cut as incomplete.
func TestTwoSignals(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if n.Add(1) > 2 { // the first two answer, the rest hang until the test ends
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`)
	}))
	defer hs.Close()
	defer close(release)
	sigs := make(chan os.Signal, 2)
	var stderr lockedBuffer
	var stdout bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, signals: func() (<-chan os.Signal, func()) { return sigs, func() {} }}
	path := t.TempDir() + "/r.json"
	code := make(chan int, 1)
	go func() {
		code <- a.run([]string{"run", "--url", hs.URL + "/v1", "--api", "openai-chat", "--model", "m", "--no-stream", "-c", "3",
			"--duration", "10m", "--drain", "1m", "--server-metrics", "off", "--progress-every", "20ms", "--json", path})
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(stderr.String(), what) {
			select {
			case c := <-code:
				t.Fatalf("exit %d before %q:\n%s", c, what, stderr.String())
			case <-deadline:
				t.Fatalf("no %q in 30 s:\n%s", what, stderr.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitFor(" 2 ok 0 failed  in flight 3") // started: two answered, three hang
	sigs <- syscall.SIGINT
	waitFor("infertop: run ended: interrupted")
	sigs <- syscall.SIGINT
	if c := <-code; c != 0 {
		t.Fatalf("exit %d after two signals:\n%s", c, stderr.String())
	}
	if !strings.Contains(stderr.String(), "infertop: stopped: 3 requests in flight cancelled") {
		t.Errorf("no stop line:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "sent 5 = 2 completed + 0 failed + 3 incomplete") {
		t.Errorf("the summary does not count the cut requests:\n%s", stdout.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no report: %v", err)
	}
}
