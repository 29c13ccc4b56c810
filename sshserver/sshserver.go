// Package sshserver serves infertop's dashboard over SSH with wish: one
// engine puts the load on the endpoint and every session gets its own view
// of it, its own renderer (colours its terminal can show) and its own size.
// Keys listed as controllers turn the knobs; every other session watches.
// A comparison (a canary beside the engine, or the groups of a split) is
// served the same way: each session subscribes to the canary itself, and
// the keys act on the comparison's controller, which moves both loads.
package sshserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/wish"
	bm "github.com/charmbracelet/wish/bubbletea"
	"github.com/muesli/termenv"
	gossh "golang.org/x/crypto/ssh"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/ratelog"
	"github.com/infertop/infertop/readlimit"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/ui"
)

// Config configures the server.
type Config struct {
	// HostKeyPath is the server's ed25519 key, generated on first start.
	HostKeyPath string
	// AuthorizedKeys lists the keys that may connect; AllowAnyKey lets any
	// key in (never a password).
	AuthorizedKeys string
	AllowAnyKey    bool
	// Controllers lists the keys that may turn the knobs.
	Controllers string
	// MaxSessions bounds the sessions at once; IdleTimeout ends a session
	// that sends nothing for that long (0: never).
	MaxSessions int
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the time from a connection's arrival to its
	// authentication (default DefaultHandshakeTimeout); past it the
	// connection is closed. MaxUnauthenticated bounds the connections not
	// yet authenticated, in all (default DefaultMaxUnauthenticated) and
	// MaxUnauthenticatedPerIP from one address (default
	// DefaultMaxUnauthenticatedPerIP): one more is closed at once.
	HandshakeTimeout        time.Duration
	MaxUnauthenticated      int
	MaxUnauthenticatedPerIP int
	// MaxConnections and MaxConnectionsPerIP bound the connections open,
	// authenticated or not, in all and from one address (defaults
	// DefaultMaxConnections, DefaultMaxConnectionsPerIP); SessionWait
	// closes a connection logged in that opens no session within it
	// (default DefaultSessionWait). See limits.go.
	MaxConnections      int
	MaxConnectionsPerIP int
	SessionWait         time.Duration
	// Log gets one line per connection and disconnection, per refused
	// key or connection, and warnings; at most LogLinesPerSecond a second.
	Log io.Writer
	// Watch is the one load every session watches (in a comparison, the
	// baseline's): each session subscribes to its snapshots.
	Watch Subscriber
	// Controller is what a controller's keys act on (nil: Watch, when it
	// is a controller itself, as *load.Engine is). In a
	// comparison it is the session.Pair, whose knobs move both loads, or
	// the session.Split, whose new setting starts its groups' comparison
	// over: turning Engine's knobs alone would leave them behind.
	Controller load.Controller
	// Canary, if set, makes every session's view a comparison's: it
	// subscribes to the canary's snapshots, called when a session starts,
	// and its cancel is called when the session ends (a channel cannot be
	// shared: each view reads its own). View.Compare is then the live
	// comparison.
	Canary func() (<-chan load.Snapshot, func())
	// View is the template every session's dashboard starts from (its
	// Theme the default theme, its Objectives, Save and Figures, and a
	// comparison's Compare or a split's Groups). Per session the server
	// sets Renderer, Snapshots, Canary (from Canary above; the template's
	// is ignored) and ReadOnly (a template's ReadOnly, a load that takes
	// no keys, as followed agents', holds for controllers too), sets
	// Theme when the session asks for one, and drops Save for a watcher:
	// saving is acting on the load, which only controllers do.
	View ui.Options
	// Model, if set, is every session's view instead of a load's
	// dashboard (Watch, Controller, Canary and View are then unused):
	// infertop watch's fleet, which has no knobs, so every session only
	// watches. It builds one session's model, drawn with r, and what
	// ends the model's subscriptions when the session does.
	Model func(r *lipgloss.Renderer) (m tea.Model, unsubscribe func())
}

// Subscriber is a load's snapshots: *load.Engine, a runner, a session's
// side.
type Subscriber interface {
	Subscribe() (<-chan load.Snapshot, func())
}

// Error is a kind of error New returns, naming the part of the Config at
// fault, so that a caller can say it in its own terms (a command's flag).
// Test for one with errors.Is; the message after it says what went wrong.
type Error string

// Error returns the kind's name, which starts the wrapping message.
func (e Error) Error() string { return string(e) }

// The errors New wraps. They are constants, not variables: nothing can
// reassign them.
const (
	// ErrAuthorizedKeys: AuthorizedKeys could not be read or parsed.
	ErrAuthorizedKeys Error = "authorized keys"
	// ErrNoKeys comes with ErrAuthorizedKeys when the file lists no key
	// and AllowAnyKey is off, so no one could connect.
	ErrNoKeys Error = "lists no keys"
	// ErrControllers: Controllers could not be read or parsed.
	ErrControllers Error = "controller keys"
	// ErrHostKey: the host key at HostKeyPath could not be created or
	// read.
	ErrHostKey Error = "host key"
)

// The largest window a session's dashboard is drawn for. A client asks
// for its window size, and a dashboard's cost grows with its area: a
// 65535×65535 request took 8 GB in 20 s. Both the PTY request and every
// window change are clamped to this before the program sees them; a
// bigger terminal shows the frame in its top left corner. 500×200 is wider
// and taller than any screen a person reads.
const (
	MaxColumns = 500
	MaxRows    = 200
)

// Server is the SSH server.
type Server struct {
	cfg         Config
	srv         *ssh.Server
	allowed     []ssh.PublicKey
	controllers []ssh.PublicKey
	active      atomic.Int64

	// log is the log, bounded (see logf).
	log *ratelog.Limiter

	// stopping is closed when Serve stops: each session's program quits
	// and the session says why.
	stopping chan struct{}
	stopOnce sync.Once

	// mu guards the counts of connections not yet authenticated and of
	// those open.
	mu          sync.Mutex
	pending     int
	pendingByIP map[string]int
	conns       int
	connsByIP   map[string]int
}

// New builds a server; the host key is created at HostKeyPath if missing.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	orDefault(&cfg.MaxSessions, 16)
	orDefault(&cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	orDefault(&cfg.MaxUnauthenticated, DefaultMaxUnauthenticated)
	orDefault(&cfg.MaxUnauthenticatedPerIP, DefaultMaxUnauthenticatedPerIP)
	orDefault(&cfg.MaxConnections, DefaultMaxConnections)
	orDefault(&cfg.MaxConnectionsPerIP, DefaultMaxConnectionsPerIP)
	orDefault(&cfg.SessionWait, DefaultSessionWait)
	if c, ok := cfg.Watch.(load.Controller); ok && cfg.Controller == nil {
		cfg.Controller = c
	}
	s := &Server{cfg: cfg, pendingByIP: map[string]int{}, connsByIP: map[string]int{}, stopping: make(chan struct{})}
	s.log = s.newLog()
	var err error
	if !cfg.AllowAnyKey {
		if s.allowed, err = readKeys(cfg.AuthorizedKeys); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAuthorizedKeys, err)
		}
		if len(s.allowed) == 0 {
			return nil, fmt.Errorf("%w: %s %w", ErrAuthorizedKeys, cfg.AuthorizedKeys, ErrNoKeys)
		}
	}
	if cfg.Controllers != "" {
		if s.controllers, err = readKeys(cfg.Controllers); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrControllers, err)
		}
	}
	if err := ensureHostKey(cfg.HostKeyPath); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHostKey, err)
	}
	// Read here, bounded: the library would read a file of any size
	// (/dev/zero given as --host-key).
	pem, err := readlimit.File(cfg.HostKeyPath, readlimit.Secret)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHostKey, err)
	}
	opts := []ssh.Option{
		wish.WithHostKeyPEM(pem),
		wish.WithPublicKeyAuth(s.checkKey),
		wish.WithMiddleware(
			bm.MiddlewareWithProgramHandler(s.program, termenv.ANSI256),
			s.gate, // runs first: the middleware listed last wraps the others
		),
	}
	if cfg.IdleTimeout > 0 {
		opts = append(opts, wish.WithIdleTimeout(cfg.IdleTimeout))
	}
	// Of the options only the host key's can fail (it is generated, or
	// read and parsed, here).
	if s.srv, err = wish.NewServer(opts...); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrHostKey, cfg.HostKeyPath, err)
	}
	s.srv.ConnCallback, s.srv.ServerConfigCallback = s.admit, s.serverConfig
	s.srv.ChannelHandlers = map[string]ssh.ChannelHandler{"session": s.sessionChannel}
	// The key may be older than us, or copied with its mode lost: whoever
	// reads it can pose as this server to every watcher.
	if fi, err := os.Stat(cfg.HostKeyPath); err == nil && fi.Mode().Perm()&0o066 != 0 {
		s.logf("warning: host key %s has mode %04o: group or others have access to it; chmod 600 it", cfg.HostKeyPath, fi.Mode().Perm())
	}
	return s, nil
}

// orDefault sets *v to d when it is not positive (unset).
func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// readKeys parses an authorized_keys file.
func readKeys(path string) ([]ssh.PublicKey, error) {
	data, err := readlimit.File(path, readlimit.Certs)
	if err != nil {
		return nil, err
	}
	var keys []ssh.PublicKey
	for len(data) > 0 {
		key, _, _, rest, err := gossh.ParseAuthorizedKey(data)
		if err != nil {
			if len(strings.TrimSpace(string(data))) == 0 {
				break
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		keys = append(keys, key)
		data = rest
	}
	return keys, nil
}

func contains(keys []ssh.PublicKey, k ssh.PublicKey) bool {
	for _, x := range keys {
		if ssh.KeysEqual(x, k) {
			return true
		}
	}
	return false
}

func (s *Server) authorized(k ssh.PublicKey) bool {
	return s.cfg.AllowAnyKey || contains(s.allowed, k)
}

// checkKey is the public key handler: it logs the keys it refuses. The
// handshake asks once per key and connection (x/crypto caches the answer),
// and at most MaxAuthTries (6) keys per connection.
func (s *Server) checkKey(ctx ssh.Context, k ssh.PublicKey) bool {
	if s.authorized(k) {
		return true
	}
	// The user name is the client's: quoted, so that it cannot forge a
	// line, and shortened, so that it cannot make the line long.
	s.logf("refused %s user %q: key %s %s not authorized", ctx.RemoteAddr(), quoteUser(ctx.User()), k.Type(), gossh.FingerprintSHA256(k))
	return false
}

func (s *Server) controller(k ssh.PublicKey) bool {
	return k != nil && contains(s.controllers, k)
}

// gate refuses sessions past MaxSessions and without a terminal, and logs
// every connection and disconnection.
func (s *Server) gate(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		role := "watcher"
		if s.controller(sess.PublicKey()) {
			role = "controller"
		}
		fp := "no key"
		if k := sess.PublicKey(); k != nil {
			fp = gossh.FingerprintSHA256(k)
		}
		if _, _, ok := sess.Pty(); !ok {
			wish.Fatalln(sess, "infertop: a terminal is needed: connect with ssh -t")
			s.logf("refused %s %s: no terminal", sess.RemoteAddr(), fp)
			return
		}
		ls := clamped(sess)
		// The session's context is its connection's, which may carry
		// other sessions and outlive this one (ssh -o ControlMaster): what
		// this session started ends here, when its handler returns.
		defer ls.end()
		sess = ls
		// Counted before the look at stopping: Serve closes stopping and
		// then waits for the count to fall, so either this session sees
		// the stop or Serve sees the session.
		n := s.active.Add(1)
		if s.stopped() {
			s.active.Add(-1)
			wish.Fatalln(sess, stoppedLine)
			s.logf("refused %s %s: stopping", sess.RemoteAddr(), fp)
			return
		}
		if n > int64(s.cfg.MaxSessions) {
			s.active.Add(-1)
			wish.Fatalf(sess, "infertop: the server is full (%s); try again later\n", plural(s.cfg.MaxSessions, "session"))
			s.logf("refused %s %s: full", sess.RemoteAddr(), fp)
			return
		}
		start := time.Now()
		s.logf("connected %s %s as %s", sess.RemoteAddr(), fp, role)
		defer func() {
			s.active.Add(-1)
			s.logf("disconnected %s %s as %s after %s", sess.RemoteAddr(), fp, role, time.Since(start).Round(time.Second))
		}()
		next(sess)
		if s.stopped() { // the program has quit, the screen is the terminal's again
			wish.Println(sess, stoppedLine)
		}
	}
}

// stoppedLine is what a session reads last when the server stops.
const stoppedLine = "infertop: the server stopped"

// stopped reports whether Serve is stopping.
func (s *Server) stopped() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// clampedSession is a session whose PTY and window changes report at
// most MaxColumns×MaxRows, and which knows its own end. bm's middleware
// reads the size from Pty() and forwards the window channel as
// WindowSizeMsg, so clamping what the session reports clamps what the
// program sees, without forking the middleware (its colour profile key is
// its own).
type clampedSession struct {
	ssh.Session
	pty   ssh.Pty
	winch chan ssh.Window
	// ended is closed when the gate's handler returns (end): the session
	// is over though its connection, and its context, may go on.
	ended chan struct{}
	// mu guards atEnd, what end calls: the session's subscriptions'
	// cancels.
	mu    sync.Mutex
	atEnd []func()
}

// clamped wraps sess; sess must have a PTY. The PTY is read once, here:
// the ssh package writes the PTY's window on every window change, so a
// later read would race with it.
func clamped(sess ssh.Session) *clampedSession {
	pty, in, _ := sess.Pty()
	pty.Window = clamp(pty.Window)
	c := &clampedSession{Session: sess, pty: pty, winch: make(chan ssh.Window, 1), ended: make(chan struct{})}
	go func() {
		for {
			select {
			case <-c.ended:
				return
			case <-sess.Context().Done():
				return
			case w, ok := <-in:
				if !ok {
					return // not closed in turn: bm's loop would spin on a closed channel
				}
				w = clamp(w)
				// Only the latest size matters: a size the program has not
				// taken yet is replaced, so this never blocks (it is the
				// only sender) and a burst of changes costs one resize.
				select {
				case c.winch <- w:
				default:
					select {
					case <-c.winch:
					default:
					}
					c.winch <- w
				}
			}
		}
	}()
	return c
}

// onEnd has end call f.
func (c *clampedSession) onEnd(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.atEnd = append(c.atEnd, f)
}

// end ends the session's goroutines and calls what onEnd was given; the
// gate calls it once, when the session's handler returns.
func (c *clampedSession) end() {
	close(c.ended)
	c.mu.Lock()
	fs := c.atEnd
	c.atEnd = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Pty reports the session's PTY with its window clamped.
func (c *clampedSession) Pty() (ssh.Pty, <-chan ssh.Window, bool) {
	return c.pty, c.winch, true
}

// clamp bounds a window to MaxColumns×MaxRows.
func clamp(w ssh.Window) ssh.Window {
	if w.Width > MaxColumns {
		w.Width = MaxColumns
	}
	if w.Height > MaxRows {
		w.Height = MaxRows
	}
	w.WidthPixels, w.HeightPixels = 0, 0 // they would no longer match
	return w
}

// theme is the session's theme: 'theme=NAME' as the command, or
// INFERTOP_THEME in its environment, else the default.
func (s *Server) theme(sess ssh.Session) string {
	for _, arg := range sess.Command() {
		if v, ok := strings.CutPrefix(arg, "theme="); ok {
			return v
		}
	}
	for _, kv := range sess.Environ() {
		if v, ok := strings.CutPrefix(kv, "INFERTOP_THEME="); ok {
			return v
		}
	}
	for _, kv := range sess.Environ() { // COLORFGBG=fg;bg: a light background is 7 or 15
		if v, ok := strings.CutPrefix(kv, "COLORFGBG="); ok && (strings.HasSuffix(v, ";15") || strings.HasSuffix(v, ";7")) {
			return "light"
		}
	}
	return s.cfg.View.Theme
}

// program builds one session's dashboard. Its subscriptions are the
// session's: the goroutine below, the session's too, ends them with it.
func (s *Server) program(sess ssh.Session) *tea.Program {
	var m tea.Model
	var unsubscribe func()
	if s.cfg.Model != nil {
		m, unsubscribe = s.cfg.Model(bm.MakeRenderer(sess))
	} else {
		m, unsubscribe = s.dashboard(sess)
	}
	// No WithContext: the middleware quits the program when the session
	// ends, which is a clean exit rather than a "killed" error on stderr.
	p := tea.NewProgram(m, append(bm.MakeOptions(sess), tea.WithAltScreen(), tea.WithoutSignalHandler(), tea.WithFPS(ui.FPS))...)
	cs, ok := sess.(*clampedSession)
	if !ok { // the gate passes every session on as one; any other ends with its connection
		cs = &clampedSession{Session: sess, ended: make(chan struct{})}
		go func() { <-sess.Context().Done(); cs.end() }()
	}
	cs.onEnd(unsubscribe)
	go func() {
		select {
		case <-cs.ended:
		case <-s.stopping:
			// Quit, not Kill: the program leaves the alt screen and shows
			// the cursor while the connection is still there to carry it.
			// Quit waits for Run to take it; the middleware runs the
			// program as soon as this returns (the gate checked the PTY).
			p.Quit()
		}
	}()
	return p
}

// dashboard builds one session's view of the load: its own
// subscriptions, renderer and theme, read-only unless its key is a
// controller's.
func (s *Server) dashboard(sess ssh.Session) (tea.Model, func()) {
	snaps, unsubscribe := s.cfg.Watch.Subscribe()
	opts := s.cfg.View // a copy: the template stays as it is
	opts.Renderer, opts.Theme, opts.Snapshots, opts.Canary = bm.MakeRenderer(sess), s.theme(sess), snaps, nil
	if s.cfg.Canary != nil {
		canary, unsubscribeCanary := s.cfg.Canary()
		opts.Canary = canary
		base := unsubscribe
		unsubscribe = func() { base(); unsubscribeCanary() }
	}
	opts.ReadOnly = s.cfg.View.ReadOnly || !s.controller(sess.PublicKey())
	if opts.ReadOnly {
		opts.Save = nil
	}
	m, err := ui.New(s.cfg.Controller, opts)
	if err != nil { // an unknown theme asked for: the default instead, and say so
		opts.Theme = s.cfg.View.Theme
		opts.Notice = fmt.Sprintf("%v; using %s (t cycles the themes)", sanitizeTheme(err), s.cfg.View.Theme)
		m, _ = ui.New(s.cfg.Controller, opts)
	}
	return m, unsubscribe
}

// stopGrace bounds the wait for the sessions to quit when Serve stops (a
// client that reads nothing would hold its session's last frame).
const stopGrace = 2 * time.Second

// Serve accepts sessions on ln until ctx ends, then stops every session
// (its dashboard quits, its screen restored, and it reads stoppedLine) and
// closes every connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.log.Flush() // the count of lines left out, now rather than later
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		// First the sessions: each program quits, restores its screen and
		// says the server stopped, over a connection still open. Then the
		// connections.
		s.stopOnce.Do(func() { close(s.stopping) })
		for deadline := time.Now().Add(stopGrace); s.Active() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.srv.Shutdown(sctx); err != nil {
			s.srv.Close()
		}
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, ssh.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("ssh: %w", err)
	}
}

// Active is the number of sessions open.
func (s *Server) Active() int { return int(s.active.Load()) }

// plural is n and a noun, an s added when n is not 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// sanitizeTheme is a theme error as a session sees it: the name it asked
// for came from the client, so it is shown escaped.
func sanitizeTheme(err error) string { return sanitize.Text(err.Error()) }
