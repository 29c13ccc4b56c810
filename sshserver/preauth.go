package sshserver

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Defaults of the Config's bounds on connections not yet authenticated.
const (
	DefaultHandshakeTimeout        = 10 * time.Second
	DefaultMaxUnauthenticated      = 64
	DefaultMaxUnauthenticatedPerIP = 8
)

// Before a connection authenticates it costs a descriptor and a goroutine
// and gives nothing back: a client that sends its banner and then nothing
// would hold both until the idle timeout (30 m), so 1100 of them took every
// descriptor. Each connection is admitted by ConnCallback, counted until it
// authenticates or closes, and closed if it has not authenticated within
// HandshakeTimeout.
//
// Why not a deadline on the connection: the ssh package's serverConn sets
// the deadline again on every Read and Write (to now+IdleTimeout, or to
// none when neither IdleTimeout nor MaxTimeout is set), which would erase
// ours at the first byte; MaxTimeout bounds the whole connection, not its
// start. A timer that closes the connection cannot be undone that way.
// Why the AuthLogCallback: it is the one place that sees the handshake end
// in success (authErr nil breaks the auth loop); the PublicKeyHandler also
// answers queries and runs before the signature is checked.

// preAuth is one connection's way through the handshake.
type preAuth struct {
	s     *Server
	ip    string
	conn  net.Conn
	timer *time.Timer
	state atomic.Int32 // one of the pending… constants
	// After the login: the timer that closes a connection with no
	// session (SessionWait), whether one was opened, the channels open
	// (limits.go), and the once that gives back the connection's place.
	sessionTimer atomic.Pointer[time.Timer]
	sawChannel   atomic.Bool
	channels     atomic.Int32
	closeOnce    sync.Once
	closed       atomic.Bool
}

const (
	pendingAuth int32 = iota
	authenticated
	expired
	closedEarly
)

// preAuthKey is the context key of a connection's preAuth.
type preAuthKey struct{}

// admit is the ConnCallback: it counts the connection, or closes it (nil)
// when there are already too many open or not yet authenticated, from all
// or from its address.
func (s *Server) admit(ctx ssh.Context, conn net.Conn) net.Conn {
	ip := conn.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	s.mu.Lock()
	all, mine := s.pending, s.pendingByIP[ip]
	open, openMine := s.conns, s.connsByIP[ip]
	pendingOK := all < s.cfg.MaxUnauthenticated && mine < s.cfg.MaxUnauthenticatedPerIP
	openOK := open < s.cfg.MaxConnections && openMine < s.cfg.MaxConnectionsPerIP
	if pendingOK && openOK {
		s.pending++
		s.pendingByIP[ip]++
		s.conns++
		s.connsByIP[ip]++
	}
	s.mu.Unlock()
	switch {
	case !openOK:
		s.logf("refused %s: too many connections open (%d in all, %d from %s)", conn.RemoteAddr(), open, openMine, ip)
		return nil
	case !pendingOK:
		s.logf("refused %s: too many connections not yet authenticated (%d in all, %d from %s)", conn.RemoteAddr(), all, mine, ip)
		return nil
	}
	p := &preAuth{s: s, ip: ip, conn: conn}
	p.timer = time.AfterFunc(s.cfg.HandshakeTimeout, p.expire)
	ctx.SetValue(preAuthKey{}, p)
	return &preAuthConn{Conn: conn, p: p}
}

// serverConfig is the ServerConfigCallback: the connection's handshake
// reports its successful authentication.
func (s *Server) serverConfig(ctx ssh.Context) *gossh.ServerConfig {
	p, _ := ctx.Value(preAuthKey{}).(*preAuth)
	return &gossh.ServerConfig{AuthLogCallback: func(_ gossh.ConnMetadata, _ string, err error) {
		if err == nil && p != nil && p.leave(authenticated) {
			p.sessionTimer.Store(time.AfterFunc(s.cfg.SessionWait, p.noSession))
		}
	}}
}

// noSession closes a connection logged in that has opened no channel
// within SessionWait: logged in, it is past the pending bounds, and with
// any key let in, logging in is free.
func (p *preAuth) noSession() {
	if !p.sawChannel.Load() && !p.closed.Load() {
		p.s.logf("closed %s: no session within %s of the login", p.conn.RemoteAddr(), p.s.cfg.SessionWait)
		p.conn.Close()
	}
}

// leave moves the connection out of the pending state, once: it gives
// back its place and stops the timer. It reports whether this call did it.
func (p *preAuth) leave(to int32) bool {
	if !p.state.CompareAndSwap(pendingAuth, to) {
		return false
	}
	if to != expired {
		// The timer's own call must not read p.timer: it is set after
		// the timer starts, by the connection's goroutine, which is the
		// one every other call comes from.
		p.timer.Stop()
	}
	p.s.mu.Lock()
	p.s.pending--
	if p.s.pendingByIP[p.ip]--; p.s.pendingByIP[p.ip] == 0 {
		delete(p.s.pendingByIP, p.ip)
	}
	p.s.mu.Unlock()
	return true
}

// expire closes a connection still not authenticated at the deadline; the
// handshake's read fails and the ssh package ends the connection.
func (p *preAuth) expire() {
	if p.leave(expired) {
		p.s.logf("closed %s: not authenticated within %s", p.conn.RemoteAddr(), p.s.cfg.HandshakeTimeout)
		p.conn.Close()
	}
}

// preAuthConn tells its preAuth when the connection closes before it
// authenticated (a failed handshake, a client gone).
type preAuthConn struct {
	net.Conn
	p *preAuth
}

// Close closes the connection and gives back its places: among those
// not yet authenticated if it had one, and among those open.
func (c *preAuthConn) Close() error {
	p := c.p
	p.leave(closedEarly)
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		if t := p.sessionTimer.Load(); t != nil {
			t.Stop()
		}
		p.s.mu.Lock()
		p.s.conns--
		if p.s.connsByIP[p.ip]--; p.s.connsByIP[p.ip] == 0 {
			delete(p.s.connsByIP, p.ip)
		}
		p.s.mu.Unlock()
	})
	return c.Conn.Close()
}
