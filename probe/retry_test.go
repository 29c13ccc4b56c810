package probe

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// retryAnswer is a short streamed chat completion, event by event.
var retryAnswer = []string{
	`data: {"id":"r","choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n",
	`data: {"id":"r","choices":[{"delta":{"content":"one "}}]}` + "\n\n",
	`data: {"id":"r","choices":[{"delta":{"content":"two"},"finish_reason":"stop"}]}` + "\n\n",
	`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\n",
	"data: [DONE]\n\n",
}

// writeAnswer streams retryAnswer through a ResponseWriter.
func writeAnswer(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range retryAnswer {
		io.WriteString(w, ev)
		w.(http.Flusher).Flush()
	}
}

// rawAnswer is retryAnswer as a whole HTTP/1.1 response, chunked, with the
// headers llama.cpp's server sends: they invite the client to keep the
// connection, which the server then closes.
func rawAnswer() string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, ev := range retryAnswer {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(ev), ev)
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// hijack takes the connection from the server after reading the request's
// body (unread bytes would turn the close into a reset that can destroy
// the answer in flight).
func hijack(t *testing.T, w http.ResponseWriter, r *http.Request) net.Conn {
	io.Copy(io.Discard, r.Body)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return nil
	}
	return conn
}

// hammer sends n requests from conc workers and returns their results.
func hammer(c *Client, n, conc int) []Result {
	results := make([]Result, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				results[i] = c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 2})
			}
		})
	}
	wg.Wait()
	return results
}

// tally fails the test for any failed result and counts the retried ones,
// which must have gone out on a new connection.
func tally(t *testing.T, results []Result) (retried int) {
	t.Helper()
	for i, r := range results {
		if !r.OK() || r.OutputTokens != 2 {
			t.Errorf("request %d: %v %s (retried %v, out %d)", i, r.Class, r.Err, r.Retried, r.OutputTokens)
		}
		if r.Retried {
			retried++
			if r.ConnReused {
				t.Errorf("request %d retried on a reused connection", i)
			}
		}
	}
	return retried
}

// TestRetryServerClosesAfterAnswer is llama.cpp's server: keep-alive
// headers, then the connection closed a moment after every streamed answer,
// so the next request on it races the close.
func TestRetryServerClosesAfterAnswer(t *testing.T) {
	answer := rawAnswer()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn := hijack(t, w, r)
		if conn == nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, answer)
		// The moment cpp-httplib takes to close: the client has the
		// connection back in its pool, and sometimes a request on it.
		time.Sleep(time.Duration(rand.N(3000)) * time.Microsecond)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, TTFTFirstOutput)
	retried := tally(t, hammer(c, 100, 2))
	if retried == 0 {
		t.Fatal("no request was retried: the test did not meet the race")
	}
	t.Logf("%d of 100 requests retried", retried)
}

// flakyConn is a server connection that a test may close while it is
// idle. busy is set by the first write of a response and cleared when the
// server says the connection is idle again, so a close never cuts an
// answer the server has begun.
type flakyConn struct {
	net.Conn
	mu   sync.Mutex
	busy bool
}

func (c *flakyConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.busy = true
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// closeIfIdle closes the connection unless a response began on it since it
// last went idle.
func (c *flakyConn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.busy {
		c.Conn.Close()
	}
}

type flakyListener struct{ net.Listener }

func (l flakyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &flakyConn{Conn: c}, nil
}

// TestRetryServerClosesIdleAtRandom: a server that closes half its idle
// connections after a random moment, as a proxy with a short idle timeout
// or a restarting backend does. Requests that met a closing connection
// are retried; none fails.
func TestRetryServerClosesIdleAtRandom(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond) // prefill: the window a close can land in
		writeAnswer(w)
	}))
	srv.Listener = flakyListener{srv.Listener}
	var closers sync.WaitGroup
	srv.Config.ConnState = func(conn net.Conn, s http.ConnState) {
		fc, ok := conn.(*flakyConn)
		if !ok || s != http.StateIdle {
			return
		}
		fc.mu.Lock()
		fc.busy = false
		fc.mu.Unlock()
		if rand.N(2) == 0 {
			delay := time.Duration(rand.N(2000)) * time.Microsecond
			closers.Go(func() {
				time.Sleep(delay)
				fc.closeIfIdle()
			})
		}
	}
	srv.Start()
	// The server first: once it is closed no hook can start a closer.
	defer closers.Wait()
	defer srv.Close()
	c := newTestClient(t, srv.URL, TTFTFirstOutput)
	retried := tally(t, hammer(c, 200, 4))
	if retried == 0 {
		t.Fatal("no request was retried: the test did not meet the race")
	}
	t.Logf("%d of 200 requests retried", retried)
}

// TestNoRetry: the cases a request is not sent again, each on a connection
// the client reused (the first request of each server answers in full and
// leaves its connection in the pool). attempts counts requests the server
// received.
func TestNoRetry(t *testing.T) {
	cases := []struct {
		name string
		// second answers (or fails) every request after the first.
		second   func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{})
		timeout  time.Duration
		class    ErrorClass
		attempts int64
		retried  bool
	}{
		{
			// Headers and a message, then the connection closed: the
			// server was answering, so the request is a stream cut.
			name: "cut after headers",
			second: func(t *testing.T, w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, retryAnswer[1])
				w.(http.Flusher).Flush()
				if conn := hijack(t, w, r); conn != nil {
					conn.Close()
				}
			},
			class: StreamCut, attempts: 2,
		},
		{
			// Part of a status line: a byte of an answer came.
			name: "cut inside the status line",
			second: func(t *testing.T, w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				if conn := hijack(t, w, r); conn != nil {
					io.WriteString(conn, "HTTP/1.1 20")
					conn.Close()
				}
			},
			class: Connection, attempts: 2,
		},
		{
			// The request's timeout ends a stalled answer: never retried.
			name: "timeout",
			second: func(t *testing.T, w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				select {
				case <-r.Context().Done():
				case <-done:
				}
			},
			timeout: 150 * time.Millisecond, class: Timeout, attempts: 2,
		},
		{
			// Closed before any byte, again on the new connection: sent
			// twice, exactly, and then a connection failure.
			name: "closed before answering, twice",
			second: func(t *testing.T, w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				if conn := hijack(t, w, r); conn != nil {
					conn.Close()
				}
			},
			class: Connection, attempts: 3, retried: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int64
			done := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if attempts.Add(1) == 1 {
					writeAnswer(w)
					return
				}
				tc.second(t, w, r, done)
			}))
			defer srv.Close()
			defer close(done)
			c := newTestClient(t, srv.URL, TTFTFirstOutput)
			if tc.timeout > 0 {
				c.cfg.Timeout = tc.timeout
			}
			if r := c.Do(context.Background(), Request{Prompt: "x"}); !r.OK() || r.ConnReused {
				t.Fatalf("first request: %v %s (reused %v)", r.Class, r.Err, r.ConnReused)
			}
			r := c.Do(context.Background(), Request{Prompt: "x"})
			if r.Class != tc.class || r.Retried != tc.retried || attempts.Load() != tc.attempts {
				t.Fatalf("%v %q, retried %v, %d attempts; want %v, retried %v, %d attempts",
					r.Class, r.Err, r.Retried, attempts.Load(), tc.class, tc.retried, tc.attempts)
			}
			if !tc.retried && !r.ConnReused {
				t.Fatal("the second request did not reuse the connection: the case tested nothing")
			}
		})
	}
}

// TestNoRetryOnNewConnection: a server that hangs up on every request
// before answering. Each request goes out on a new connection (there is
// none to reuse), so each is sent once and fails as a connection error.
func TestNoRetryOnNewConnection(t *testing.T) {
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		if conn := hijack(t, w, r); conn != nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, TTFTFirstOutput)
	for i := range 3 {
		r := c.Do(context.Background(), Request{Prompt: "x"})
		if r.Class != Connection || r.Retried || r.ConnReused || attempts.Load() != int64(i+1) {
			t.Fatalf("request %d: %v %q, retried %v, reused %v, %d attempts", i, r.Class, r.Err, r.Retried, r.ConnReused, attempts.Load())
		}
	}
}

// TestRetryTimedFromFirstAttempt: the time lost on the dead connection is
// in the request's TTFT and E2E, and the connection phases are the new
// connection's.
func TestRetryTimedFromFirstAttempt(t *testing.T) {
	const lost = 60 * time.Millisecond
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 2 {
			// The second request, on the kept connection: a server slow
			// to notice it had meant to close it.
			if conn := hijack(t, w, r); conn != nil {
				time.Sleep(lost)
				conn.Close()
			}
			return
		}
		writeAnswer(w)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, TTFTFirstOutput)
	if r := c.Do(context.Background(), Request{Prompt: "x"}); !r.OK() {
		t.Fatalf("first request: %v %s", r.Class, r.Err)
	}
	r := c.Do(context.Background(), Request{Prompt: "x"})
	if !r.OK() || !r.Retried || r.ConnReused || attempts.Load() != 3 {
		t.Fatalf("%v %q, retried %v, reused %v, %d attempts", r.Class, r.Err, r.Retried, r.ConnReused, attempts.Load())
	}
	if r.TTFB < lost || r.TTFT < lost || r.E2E < r.TTFT {
		t.Fatalf("TTFB %v TTFT %v E2E %v: the lost attempt's %v is not in them", r.TTFB, r.TTFT, r.E2E, lost)
	}
	if r.Connect <= 0 {
		t.Fatalf("connect %v: the new connection's setup is not recorded", r.Connect)
	}
}

// TestRetriedRequestCarriesBody: the retry sends the same body again (the
// first attempt consumed its reader).
func TestRetriedRequestCarriesBody(t *testing.T) {
	var attempts atomic.Int64
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if attempts.Add(1) == 2 {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		writeAnswer(w)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, TTFTFirstOutput)
	c.Do(context.Background(), Request{Prompt: "first"})
	r := c.Do(context.Background(), Request{Prompt: "second"})
	mu.Lock()
	defer mu.Unlock()
	if !r.OK() || !r.Retried || len(bodies) != 3 || bodies[1] != bodies[2] || !strings.Contains(bodies[2], "second") {
		t.Fatalf("%v %q retried %v; bodies %q", r.Class, r.Err, r.Retried, bodies)
	}
}
