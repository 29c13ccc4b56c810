package sshserver

import (
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Bounds on the door after login. With any key let in (the demo mode),
// logging in is free: 3,000 idle authenticated connections held 3,019
// descriptors and 234 MB, 100,000 empty channels on one connection 851 MB
// and 100,000 env requests 520 MB. So connections are counted from their
// arrival to their close, from one address and in all; a connection that
// opens no session soon after its login is closed; a connection carries a
// few channels at once (ssh -o ControlMaster shares one), and a session a
// few env requests.
const (
	// DefaultMaxConnections and DefaultMaxConnectionsPerIP bound the
	// connections open, authenticated or not, in all and from one
	// address: four times the default sessions, and one address the
	// default sessions (a demo's audience may share one NAT).
	DefaultMaxConnections      = 64
	DefaultMaxConnectionsPerIP = 16
	// DefaultSessionWait is how long a connection may stay logged in with
	// no session: a client opens its session at once.
	DefaultSessionWait = 10 * time.Second
	// MaxChannelsPerConnection bounds the channels open at once on one
	// connection.
	MaxChannelsPerConnection = 4
	// MaxEnvRequests and MaxEnvBytes bound a session's environment (it
	// reads INFERTOP_THEME and COLORFGBG; a shell sends LANG and a few
	// more): requests past either are refused.
	MaxEnvRequests = 32
	MaxEnvBytes    = 16 << 10
	// maxQuotedUser shortens the client's user name where a log line
	// quotes it: 200 KB names made 4 MB of log a second.
	maxQuotedUser = 64
)

// sessionChannel is the "session" channel handler: ssh's own, within
// MaxChannelsPerConnection and with the env requests bounded.
func (s *Server) sessionChannel(srv *ssh.Server, conn *gossh.ServerConn, nc gossh.NewChannel, ctx ssh.Context) {
	if p, ok := ctx.Value(preAuthKey{}).(*preAuth); ok {
		p.sawChannel.Store(true)
		if n := p.channels.Add(1); n > MaxChannelsPerConnection {
			p.channels.Add(-1)
			nc.Reject(gossh.ResourceShortage, "too many channels on one connection")
			s.logf("refused a channel from %s: more than %d on one connection", conn.RemoteAddr(), MaxChannelsPerConnection)
			return
		}
		defer p.channels.Add(-1)
	}
	ssh.DefaultSessionHandler(srv, conn, envBounded{nc}, ctx)
}

// envBounded is a new channel whose env requests are bounded.
type envBounded struct{ gossh.NewChannel }

// Accept accepts the channel and passes its requests on, refusing the env
// requests past MaxEnvRequests or MaxEnvBytes; the requests' channel is
// closed when the channel's is.
func (e envBounded) Accept() (gossh.Channel, <-chan *gossh.Request, error) {
	ch, in, err := e.NewChannel.Accept()
	if err != nil {
		return ch, in, err
	}
	out := make(chan *gossh.Request)
	go func() {
		defer close(out)
		n, size := 0, 0
		for req := range in {
			if req.Type == "env" {
				n, size = n+1, size+len(req.Payload)
				if n > MaxEnvRequests || size > MaxEnvBytes {
					req.Reply(false, nil)
					continue
				}
			}
			out <- req
		}
	}()
	return ch, out, nil
}

// quoteUser is a client's user name as a log line quotes it: at most
// maxQuotedUser bytes, cut at a whole character.
func quoteUser(u string) string {
	if len(u) <= maxQuotedUser {
		return u
	}
	cut := maxQuotedUser
	for cut > 0 && !utf8.RuneStart(u[cut]) {
		cut--
	}
	return u[:cut] + "…"
}
