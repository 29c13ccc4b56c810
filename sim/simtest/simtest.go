// Package simtest runs the simulated endpoint in-process for tests, as
// net/http/httptest does for a handler: one call starts the engine and an
// HTTP server on 127.0.0.1, and the test's cleanup stops both. Tests of
// clients and engines measure against the sim's server-side records, so
// they need the sim itself, not a canned handler, and every such test
// started it the same way; the start-up lives here once, so a change to
// how the sim must be started (ConfigureHTTP's hooks) reaches them all.
package simtest

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/infertop/infertop/sim"
)

// Server is a running sim. Its fields are set by Start and must not be
// changed.
type Server struct {
	// Sim is the simulated server; its Records are the ground truth a
	// test holds client-side figures against.
	Sim *sim.Server
	// Origin is the scheme and host, "http://127.0.0.1:PORT", with no
	// path: the paths outside the API (/health, /metrics, /dcgm) hang off
	// it, and it is what a user may give as a base for detection.
	Origin string
	// URL is the API's base, Origin+"/v1", as a user passes it in --url.
	URL string
	// ChatURL is the chat-completions endpoint, URL+"/chat/completions",
	// the one most tests send to.
	ChatURL string

	hs     *httptest.Server
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start builds a sim with p and serves it on 127.0.0.1 until the test
// ends (or Close). Bad parameters fail the test at once. The HTTP server
// carries the sim's ConfigureHTTP hooks, so each Record's Arrived is taken
// when the request's first byte is read, as under `infertop sim`.
func Start(t testing.TB, p sim.Params) *Server {
	t.Helper()
	srv, err := sim.New(p)
	if err != nil {
		t.Fatalf("simtest: %v", err)
	}
	// Not t.Context(): a test may stop the sim itself before it ends (to
	// read the records of a finished run), and Close must stop it in order.
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Sim: srv, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(s.done); srv.Run(ctx) }()
	s.hs = httptest.NewUnstartedServer(srv.Handler())
	srv.ConfigureHTTP(s.hs.Config)
	s.hs.Start()
	s.Origin = s.hs.URL
	s.URL = s.Origin + "/v1"
	s.ChatURL = s.URL + "/chat/completions"
	t.Cleanup(s.Close)
	return s
}

// Close stops the engine, then the HTTP server. The engine goes first so
// that streams still open end (their handlers see the sim stop) rather
// than hold the HTTP server's Close until their clients give up. Close may
// be called more than once; the records stay readable after it.
func (s *Server) Close() {
	s.once.Do(func() {
		s.cancel()
		<-s.done
		s.hs.Close()
	})
}
