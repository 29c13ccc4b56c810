package watch

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

// ask sends GET /verdict on c and reads the answer's status line.
func ask(c net.Conn) error {
	if _, err := io.WriteString(c, "GET /verdict HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
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

// TestServeBounded: --serve's door holds at most maxServeConns
// connections; one past them waits until an idle one is closed, after
// serveIdle. Before the bounds, connections that asked once and then
// kept silent were held for ever (15,000 of them: 326 MB).
func TestServeBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := New(Config{Source: NewScrape("test", func(context.Context) ([]Target, error) { return nil, nil }, nil, time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		ln := newPipes()
		stop := w.Serve(ln)
		idle := make([]net.Conn, maxServeConns)
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
			if err := ask(idle[i]); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
		}
		extra := ln.dial()
		all = append(all, extra)
		answered := make(chan error, 1)
		go func() { answered <- ask(extra) }()
		synctest.Wait()
		select {
		case err := <-answered:
			t.Fatalf("a connection past %d served while the others were open: %v", maxServeConns, err)
		default:
		}
		time.Sleep(serveIdle + time.Second)
		synctest.Wait()
		for i, c := range idle {
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("idle connection %d still open after %v: %v", i, serveIdle, err)
			}
		}
		if err := <-answered; err != nil {
			t.Errorf("the waiting connection: %v", err)
		}
	})
}
