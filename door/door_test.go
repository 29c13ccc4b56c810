package door_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/door"
	"github.com/infertop/infertop/exporter"
	"github.com/infertop/infertop/watch"
)

// pipes is a listener of in-memory connections, for a server on a
// virtual clock.
type pipes struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newPipes() *pipes { return &pipes{conns: make(chan net.Conn), done: make(chan struct{})} }

func (p *pipes) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipes) Close() error   { p.closeOnce.Do(func() { close(p.done) }); return nil }
func (p *pipes) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial is a connection the server accepts when it takes one.
func (p *pipes) dial() net.Conn {
	client, server := net.Pipe()
	go func() {
		select {
		case p.conns <- server:
		case <-p.done:
			server.Close()
		}
	}()
	return client
}

// ask sends GET PATH on c and reads the answer's status line.
func ask(c net.Conn, path string) error {
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// TestBounded: each door (the package's own server, watch's --serve,
// the --metrics-addr exporter) holds at most door.MaxConns connections;
// one past them waits until an idle one is closed, after door.Idle.
// Before the bounds, connections that asked once and then kept silent
// were held for ever (15,000 of them: 326 MB behind --serve, 290 MB
// behind --metrics-addr).
func TestBounded(t *testing.T) {
	for _, c := range []struct {
		name, path string
		serve      func(t *testing.T, ln net.Listener) (stop func())
	}{
		{"door", "/", func(t *testing.T, ln net.Listener) func() {
			srv := door.Server(http.NotFoundHandler())
			done := make(chan struct{})
			go func() { defer close(done); srv.Serve(door.Limit(ln)) }()
			return func() { srv.Close(); <-done }
		}},
		{"watch --serve", "/verdict", func(t *testing.T, ln net.Listener) func() {
			w, err := watch.New(watch.Config{Source: watch.NewScrape("test", func(context.Context) ([]watch.Target, error) { return nil, nil }, nil, time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return w.Serve(ln)
		}},
		{"--metrics-addr", "/metrics", func(t *testing.T, ln net.Listener) func() {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); exporter.Serve(ctx, ln) }()
			return func() { cancel(); <-done }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { bounded(t, c.path, c.serve) })
		})
	}
}

// bounded is TestBounded of one door, in a bubble.
func bounded(t *testing.T, path string, serve func(*testing.T, net.Listener) func()) {
	ln := newPipes()
	stop := serve(t, ln)
	idle := make([]net.Conn, door.MaxConns)
	var all []net.Conn
	defer func() {
		for _, c := range all {
			c.Close()
		}
		stop()
	}()
	for i := range idle {
		idle[i] = ln.dial()
		all = append(all, idle[i])
		if err := ask(idle[i], path); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	extra := ln.dial()
	all = append(all, extra)
	answered := make(chan error, 1)
	go func() { answered <- ask(extra, path) }()
	synctest.Wait()
	select {
	case err := <-answered:
		t.Fatalf("a connection past %d served while the others were open: %v", door.MaxConns, err)
	default:
	}
	time.Sleep(door.Idle + time.Second)
	synctest.Wait()
	for i, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("idle connection %d still open after %v: %v", i, door.Idle, err)
		}
	}
	if err := <-answered; err != nil {
		t.Errorf("the waiting connection: %v", err)
	}
}
