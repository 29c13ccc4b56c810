package probe

import (
	"context"
	"testing"
	"time"

	"github.com/infertop/infertop/tools/hostile"
)

// h2Client is a client of a hostile HTTP/2 server (httptest's certificate:
// --insecure).
func h2Client(t *testing.T, s *hostile.H2) *Client {
	t.Helper()
	c, err := New(Config{URL: s.URL + "/chat/completions", Model: "m", Insecure: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestH2WindowOverflow: a server whose WINDOW_UPDATEs overflow the
// client's windows, on the stream and on the connection, fails the
// request at once (a connection error), and the client closes, where Go's
// bundled HTTP/2 client deadlocked for good on its connection's lock.
func TestH2WindowOverflow(t *testing.T) {
	s := hostile.StartH2(t, hostile.WindowOverflow)
	c := h2Client(t, s)
	for i := range 3 {
		t0 := time.Now()
		res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 2})
		if took := time.Since(t0); took > 5*time.Second {
			t.Errorf("request %d took %v", i, took)
		}
		if res.Class != Connection || res.Retried {
			t.Errorf("request %d: %v %q, retried %v: want a connection error, not retried", i, res.Class, res.Err, res.Retried)
		}
	}
	t0 := time.Now()
	c.Close()
	if took := time.Since(t0); took > closeWait+time.Second {
		t.Errorf("Close took %v", took)
	}
	if n := s.Posts(); n != 3 {
		t.Errorf("the server received %d POSTs for 3 requests", n)
	}
}
