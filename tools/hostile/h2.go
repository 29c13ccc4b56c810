package hostile

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// H2Kind names a misbehaviour of an HTTP/2 server at the frame level,
// where net/http's handlers cannot reach: every request, of any method,
// gets it.
type H2Kind string

// The HTTP/2 behaviours.
const (
	// WindowOverflow answers each request with two WINDOW_UPDATEs of
	// 0x7fffffff on its stream and two on the connection: each one
	// overflows the client's send window. Go's bundled HTTP/2 client
	// (net/http, Go 1.26) deadlocks on it for good: processWindowUpdate
	// holds cc.mu and abortStream takes it again.
	WindowOverflow H2Kind = "h2-window-overflow"
	// GoAway answers each request with GOAWAY(last_stream_id=0): the
	// server processed nothing, so a client may send the request again,
	// and net/http does, on a new connection, with no end.
	GoAway H2Kind = "h2-goaway"
	// RefusedStream answers each request with RST_STREAM(REFUSED_STREAM)
	// and keeps the connection: net/http sends the request again up to
	// six times.
	RefusedStream H2Kind = "h2-refused-stream"
)

// H2 is a running hostile HTTP/2 server. It counts what it received, so a
// test can hold the client's count of its requests against it.
type H2 struct {
	// URL is the base URL (https://127.0.0.1:port/v1); the certificate
	// is httptest's, so clients need --insecure.
	URL   string
	conns atomic.Int64
	posts atomic.Int64
	reqs  atomic.Int64
}

// Conns is the number of HTTP/2 connections opened to the server.
func (s *H2) Conns() int64 { return s.conns.Load() }

// Posts is the number of POST requests (HEADERS frames opening a stream
// with :method POST) the server received.
func (s *H2) Posts() int64 { return s.posts.Load() }

// Requests is the number of requests of any method (POST, GET) the
// server received.
func (s *H2) Requests() int64 { return s.reqs.Load() }

// StartH2 serves kind over TLS on 127.0.0.1, speaking HTTP/2 only, until
// the test ends. Its connections end when the client closes them or the
// server is closed, so nothing outlives the test.
func StartH2(t testing.TB, kind H2Kind) *H2 {
	t.Helper()
	s := &H2{}
	hs := httptest.NewUnstartedServer(http.NotFoundHandler())
	hs.TLS = &tls.Config{NextProtos: []string{http2.NextProtoTLS}}
	// A TLSNextProto entry of its own takes the connection after the
	// handshake, instead of net/http's HTTP/2 server.
	hs.Config.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
		http2.NextProtoTLS: func(_ *http.Server, c *tls.Conn, _ http.Handler) {
			s.conns.Add(1)
			s.serve(c, kind)
		},
	}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/v1"
	return s
}

// serve speaks HTTP/2 on c: its settings, acks and pings answered, every
// request met with kind. It returns when c fails or closes.
func (s *H2) serve(c *tls.Conn, kind H2Kind) {
	defer c.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if fr.WriteSettings() != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.PingFrame:
			if !f.IsAck() && fr.WritePing(true, f.Data) != nil {
				return
			}
		case *http2.MetaHeadersFrame:
			s.reqs.Add(1)
			if f.PseudoValue("method") == http.MethodPost {
				s.posts.Add(1)
			}
			if misbehave(fr, f.StreamID, kind) != nil {
				return
			}
		}
	}
}

// misbehave answers the request on stream id as kind does.
func misbehave(fr *http2.Framer, id uint32, kind H2Kind) error {
	switch kind {
	case WindowOverflow:
		for _, sid := range []uint32{id, id, 0, 0} {
			if err := fr.WriteWindowUpdate(sid, 0x7fffffff); err != nil {
				return err
			}
		}
	case GoAway:
		// The connection stays open: a client that closed on the GOAWAY
		// is told nothing more, one that did not could only wait.
		return fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	case RefusedStream:
		return fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
	}
	return nil
}
