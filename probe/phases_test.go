package probe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHTTPPhases: the phases add up to E2E; a new connection's Blocked
// holds its connect, a reused one's has none; the server's wait before
// its headers is Waiting, its wait after them Receiving.
func TestHTTPPhases(t *testing.T) {
	const before, after = 30 * time.Millisecond, 20 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(before) // the server's own time; the test waits on the client's figures alone
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		time.Sleep(after)
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/v1/chat/completions"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, reused := range []bool{false, true} {
		res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 1})
		p, ok := res.HTTPPhases()
		if !res.OK() || !ok || res.ConnReused != reused {
			t.Fatalf("request %d: %v %s, phases %v, reused %v", i, res.Class, res.Err, ok, res.ConnReused)
		}
		if sum := p[Blocked] + p[Sending] + p[Waiting] + p[Receiving]; sum != res.E2E {
			t.Errorf("request %d: phases %v sum to %v, E2E %v", i, p, sum, res.E2E)
		}
		if p[Waiting] < before || p[Receiving] < after {
			t.Errorf("request %d: waiting %v (server %v), receiving %v (server %v)", i, p[Waiting], before, p[Receiving], after)
		}
		if reused && (p[Connecting] != 0 || p[TLSHandshaking] != 0) {
			t.Errorf("reused connection: connecting %v, TLS %v", p[Connecting], p[TLSHandshaking])
		}
		if !reused && (p[Connecting] <= 0 || p[Blocked] < p[Connecting]) {
			t.Errorf("new connection: blocked %v, connecting %v", p[Blocked], p[Connecting])
		}
		for ph, d := range p {
			if d < 0 {
				t.Errorf("request %d: %s %v", i, HTTPPhase(ph), d)
			}
		}
	}
	if _, ok := (&Result{Class: Connection}).HTTPPhases(); ok {
		t.Fatal("phases of a request that got no answer")
	}
	if HTTPPhase(0).String() != "http_req_blocked" || Receiving.String() != "http_req_receiving" || NumHTTPPhases.String() != "unknown" {
		t.Fatal("names")
	}
}
