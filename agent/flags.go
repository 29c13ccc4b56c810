package agent

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
)

// Flags are infertop agent's own flags: its share, its start, where and
// how it serves its state, how long it keeps its last word.
type Flags struct {
	Index, Of                          int
	StartAt                            string
	Listen, TokenFile, TLSCert, TLSKey string
	PlainLoopback                      bool
	Linger                             time.Duration
}

// AddFlags binds the agent's flags to fs.
func AddFlags(fs *pflag.FlagSet) *Flags {
	defer flaghelp.Group(fs, "This agent: its share, its start, its door")()
	f := &Flags{}
	fs.IntVar(&f.Index, "index", -1, "this agent's index, 0..N-1 (an Indexed Job's JOB_COMPLETION_INDEX)")
	fs.IntVar(&f.Of, "of", 0, "the number of agents sharing the load")
	fs.StringVar(&f.StartAt, "start-at", "", "start the load at this instant (RFC 3339) on this machine's clock; empty: at once")
	fs.StringVar(&f.Listen, "listen", "127.0.0.1:7070", "serve the agent's live state on this address")
	fs.StringVar(&f.TokenFile, "token-file", "", "the token the dashboard and the agents share (required; kept out of ps)")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "the agent's TLS certificate (PEM)")
	fs.StringVar(&f.TLSKey, "tls-key", "", "the certificate's key (PEM)")
	fs.BoolVar(&f.PlainLoopback, "plain-http-loopback", false, "serve plain HTTP, allowed only on a loopback --listen (tests, one machine)")
	fs.DurationVar(&f.Linger, "linger", time.Minute, "after the run, serve the final result this long, or until a follower (run --agents) has fetched it")
	return f
}

// Board is the board of the share the flags name, of an agent of
// version, waiting for --start-at.
func (f *Flags) Board(version string) (*Board, error) {
	share := Share{Index: f.Index, Of: f.Of}
	if err := share.Check(); err != nil {
		return nil, fmt.Errorf("%w (give --index and --of)", err)
	}
	b := &Board{Share: share, Version: version}
	if f.StartAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.StartAt)
		if err != nil {
			return nil, fmt.Errorf("agent: --start-at %q: want an RFC 3339 instant such as 2026-12-02T00:00:00Z", f.StartAt)
		}
		b.StartAt = &t
	}
	return b, nil
}

// Open opens the agent's port as the flags say (TLS, or plain HTTP on a
// loopback address where allowed) and reads the shared token.
func (f *Flags) Open() (net.Listener, []byte, error) {
	if f.TokenFile == "" { // else: "open : no such file or directory"
		return nil, nil, errors.New("agent: --token-file is required: the file of the token the dashboard and the agents share")
	}
	token, err := ReadToken(f.TokenFile)
	if err != nil {
		return nil, nil, err
	}
	tc, err := LoadTLS(f.TLSCert, f.TLSKey)
	if err != nil {
		return nil, nil, err
	}
	ln, err := Listen(f.Listen, tc, f.PlainLoopback)
	if err != nil {
		return nil, nil, err
	}
	return ln, token, nil
}
