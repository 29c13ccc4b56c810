// Package sshflag binds the SSH server's configuration (sshserver.Config)
// and infertop ssh's own settings to command-line flags (pflag): where it
// listens, who may connect and who may turn the knobs, its host key, its
// limits; sshserver itself knows nothing of flags.
package sshflag

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/sshserver"
)

// Flags are infertop ssh's flags, bound to the server's configuration.
type Flags struct {
	Server                     sshserver.Config
	Listen, LogPath, ReportDir string
	// Local shows the dashboard on this terminal too, as a controller.
	Local bool
	watch *pflag.FlagSet // AddWatch's, for CheckWatch
}

// Add binds the flags to fs, the files' defaults under the user's home
// and configuration folders.
func Add(fs *pflag.FlagSet) *Flags {
	defer flaghelp.Group(fs, "SSH server")()
	sf := &Flags{}
	own := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError) // to mark them the server's
	own.SortFlags = fs.SortFlags
	own.StringVar(&sf.Listen, "listen", "127.0.0.1:2222", "address to serve SSH on")
	sf.server(own, "let any public key connect (watchers unless in --controllers)", "write connection lines here instead of stderr (they would cross --local's dashboard)")
	own.StringVar(&sf.Server.Controllers, "controllers", "", "public keys (authorized_keys format) that may turn the knobs")
	own.BoolVar(&sf.Local, "local", false, "show the dashboard on this terminal too, as a controller")
	own.StringVar(&sf.ReportDir, "report-dir", ".", "where a controller's s key writes the reports")
	own.VisitAll(func(f *pflag.Flag) { flaghelp.Follower(own, f.Name) }) // the server's, no load's: taken beside --agents
	fs.AddFlagSet(own)
	return sf
}

// AddWatch binds the flags infertop watch serves its dashboard over SSH
// with: --ssh, the address (none: not served), and the server's keys,
// host key and limits. A fleet watched has no knobs: no --controllers,
// and every session only watches.
func AddWatch(fs *pflag.FlagSet) *Flags {
	defer flaghelp.Group(fs, "SSH server")()
	sf := &Flags{}
	fs.StringVar(&sf.Listen, "ssh", "", "serve the dashboard over SSH on this address too (ssh -t -p PORT HOST)")
	sf.server(fs, "let any public key connect (every session watches)", "write connection lines here instead of stderr")
	sf.watch = fs
	return sf
}

// CheckWatch checks AddWatch's flags: the server's are given only with
// --ssh, and its limits hold.
func (sf *Flags) CheckWatch() error {
	if sf.Listen == "" {
		for _, name := range []string{"authorized-keys", "allow-any-key", "host-key", "max-sessions", "idle-timeout", "log"} {
			if sf.watch.Changed(name) {
				return fmt.Errorf("--%s needs --ssh ADDR", name)
			}
		}
		return nil
	}
	return sf.Check()
}

// server binds the flags of the server itself: who may connect, its key,
// its limits and its log.
func (sf *Flags) server(fs *pflag.FlagSet, anyKeyHelp, logHelp string) {
	home, _ := os.UserHomeDir()
	confDir, err := os.UserConfigDir()
	if err != nil {
		confDir = filepath.Join(home, ".config")
	}
	c := &sf.Server
	fs.StringVar(&c.AuthorizedKeys, "authorized-keys", filepath.Join(home, ".ssh", "authorized_keys"), "public keys that may connect")
	fs.BoolVar(&c.AllowAnyKey, "allow-any-key", false, anyKeyHelp)
	fs.StringVar(&c.HostKeyPath, "host-key", filepath.Join(confDir, "infertop", "ssh_host_ed25519"), "the server's key, generated (ed25519) on first start and reused")
	fs.IntVar(&c.MaxSessions, "max-sessions", 16, "most sessions at once")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 10*time.Minute, "end a connection that sends and receives nothing for this long (0: never)")
	fs.StringVar(&sf.LogPath, "log", "", logHelp)
}

// Check checks the server's limits.
func (sf *Flags) Check() error {
	if sf.Server.MaxSessions < 1 || sf.Server.IdleTimeout < 0 {
		return errors.New("--max-sessions must be at least 1 and --idle-timeout not negative")
	}
	return nil
}

// Terminal is stdout when --local asks for the dashboard there too (an
// error if it is no terminal), else nil.
func (sf *Flags) Terminal(stdout io.Writer) (*os.File, error) {
	if !sf.Local {
		return nil, nil
	}
	if t, ok := stdout.(*os.File); ok && isatty.IsTerminal(t.Fd()) {
		return t, nil
	}
	return nil, errors.New("--local needs a terminal")
}

// Serving is the line infertop ssh says when it serves what on addr.
func Serving(what string, addr net.Addr) string {
	_, port, _ := net.SplitHostPort(addr.String())
	return fmt.Sprintf("infertop ssh: serving %s on %s (ssh -t -p %s HOST); Ctrl+C stops", what, addr, port)
}

// StillWatched is the line --local's terminal reads when its dashboard
// closes while n other sessions on addr still watch.
func StillWatched(n int, addr net.Addr) string {
	who := fmt.Sprintf("%d other sessions still watch", n)
	if n == 1 {
		who = "1 other session still watches"
	}
	return fmt.Sprintf("infertop ssh: your dashboard is closed; %s %s. Ctrl+C stops the server.", who, addr)
}

// Log is where the connection lines go: --log, else stderr, or nowhere
// beside --local's dashboard; closeLog closes a --log file.
func (sf *Flags) Log(stderr io.Writer) (w io.Writer, closeLog func(), err error) {
	switch {
	case sf.LogPath != "":
		fh, err := os.OpenFile(sf.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--log: %w", err)
		}
		return fh, func() { fh.Close() }, nil
	case sf.Local:
		return io.Discard, func() {}, nil
	}
	return stderr, func() {}, nil
}

// ServerError names the flag behind an error of the SSH server's set-up;
// an error of no flag's is returned as it is.
func ServerError(err error) error {
	for _, m := range []struct {
		err  error
		flag string
	}{{sshserver.ErrAuthorizedKeys, "--authorized-keys"}, {sshserver.ErrControllers, "--controllers"}, {sshserver.ErrHostKey, "--host-key"}} {
		if errors.Is(err, m.err) && m.err == sshserver.ErrAuthorizedKeys && errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w (or --allow-any-key to let any key in)", m.flag, err)
		}
		if errors.Is(err, m.err) {
			return fmt.Errorf("%s: %w", m.flag, err)
		}
	}
	return err
}
