package probe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

var traceparentRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`)

func TestTraceContextFormat(t *testing.T) {
	tc := NewTraceContext(0x0102030405060708, 0x090a0b0c0d0e0f10, 0xa1a2a3a4a5a6a7a8)
	if got, want := tc.Traceparent(), "00-0102030405060708090a0b0c0d0e0f10-a1a2a3a4a5a6a7a8-01"; got != want {
		t.Fatalf("traceparent %s, want %s", got, want)
	}
	if tc.ID() != "0102030405060708090a0b0c0d0e0f10" {
		t.Fatalf("id %s", tc.ID())
	}
	zero := NewTraceContext(0, 0, 0) // W3C forbids all-zero ids
	if !traceparentRE.MatchString(zero.Traceparent()) || zero.ID() == "00000000000000000000000000000000" || zero.SpanID == ([8]byte{}) {
		t.Fatalf("zero draws gave %s", zero.Traceparent())
	}
	if (TraceContext{}).ID() != "" {
		t.Fatal("the zero TraceContext has an id")
	}
}

// TestTraceHeaders: every request carries a traceparent and an
// x-request-id that is its trace id; the one given is the one sent and
// the result's, one not given is drawn, and the sim logs the trace id.
func TestTraceHeaders(t *testing.T) {
	p, _ := sim.Preset("fast")
	ss, c := simClient(t, p, Config{})
	given := NewTraceContext(1, 2, 3)
	res := c.Do(context.Background(), Request{Prompt: "a b c", MaxTokens: 4, Trace: given})
	if !res.OK() || res.Trace != given {
		t.Fatalf("%v %s, trace %s, want %s", res.Class, res.Err, res.Trace.ID(), given.ID())
	}
	drawn := c.Do(context.Background(), Request{Prompt: "a b c", MaxTokens: 4})
	if !drawn.OK() || drawn.Trace.IsZero() || drawn.Trace == given {
		t.Fatalf("drawn trace %s", drawn.Trace.ID())
	}
	recs := ss.Sim.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for i, want := range []TraceContext{given, drawn.Trace} {
		if recs[i].TraceID != want.ID() || recs[i].RequestID != want.ID() {
			t.Fatalf("record %d: trace %q request %q, want %s", i, recs[i].TraceID, recs[i].RequestID, want.ID())
		}
	}
}

// TestTraceHeadersUsersOwn: a user's own traceparent goes as given, and
// no trace of infertop's is claimed for the request.
func TestTraceHeadersUsersOwn(t *testing.T) {
	var got http.Header
	srv := sseServer(t, func(r *http.Request) { got = r.Header.Clone() })
	own := "00-11111111111111111111111111111111-2222222222222222-00"
	c, err := New(Config{URL: srv, Header: http.Header{HeaderTraceparent: {own}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 1})
	if !res.OK() || !res.Trace.IsZero() || got.Get(HeaderTraceparent) != own || got.Get(HeaderRequestID) != "" {
		t.Fatalf("%v %s: trace %q, sent %q / %q", res.Class, res.Err, res.Trace.ID(), got.Get(HeaderTraceparent), got.Get(HeaderRequestID))
	}
	res = c.Do(context.Background(), Request{Prompt: "x", MaxTokens: 1})
	if !res.OK() || got.Get(HeaderTraceparent) != own {
		t.Fatal("second request changed the user's header")
	}
}

// sseServer serves a one-word streamed answer, telling see each request.
func sseServer(t *testing.T, see func(*http.Request)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		see(r)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/chat/completions"
}

// simClient starts a sim of p and a client of it, cfg's URL and model
// set; both end with the test.
func simClient(t *testing.T, p sim.Params, cfg Config) (*simtest.Server, *Client) {
	t.Helper()
	ss := simtest.Start(t, p)
	cfg.URL, cfg.Model = ss.ChatURL, p.Model
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return ss, c
}
