// Package tmuxterm runs a program in a real terminal, tmux, and drives it
// as a person would: it starts a session of a given size running a shell
// command, sends keys, reads the screen (with or without what scrolled
// off it), asks tmux for its view of the pane (display-message) and waits
// for the screen to show something.
//
// Each Term is a tmux server of its own (tmux -L socket) with one session,
// so Terms never meet each other or a person's own tmux. Term's methods
// return errors, for programs (the endurance harness); T wraps a Term for a
// test, failing it on any error of tmux and killing the server at its end.
package tmuxterm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// session is the name of each server's one session.
const session = "main"

// ErrTimeout is wrapped by Wait's error when the condition never held.
var ErrTimeout = errors.New("tmuxterm: timed out")

// Installed reports, with an error, that tmux is not on the PATH.
func Installed() error {
	if _, err := exec.LookPath("tmux"); err != nil {
		return fmt.Errorf("tmuxterm: tmux is needed: %w", err)
	}
	return nil
}

// Term is a tmux server on its own socket with one session running a
// command. Kill ends it; until then the session outlives the command only
// if the command itself lingers (end it with "; sleep 30" to read its
// last screen and exit status).
type Term struct {
	socket string
}

var sockets atomic.Int64

// Start starts tmux on socket (a name of its own for this process when
// empty) with one w x h session running cmd, a line for sh.
func Start(socket string, w, h int, cmd string) (*Term, error) {
	if socket == "" {
		socket = fmt.Sprintf("tmuxterm-%d-%d", os.Getpid(), sockets.Add(1))
	}
	t := &Term{socket: socket}
	if _, err := t.Tmux("new-session", "-d", "-s", session, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), cmd); err != nil {
		t.Kill() // a server that started without its session
		return nil, err
	}
	return t, nil
}

// Socket is the tmux -L socket: `tmux -L SOCKET attach` shows the session
// to a person.
func (t *Term) Socket() string { return t.socket }

// Tmux runs a tmux command on this server and returns its output.
func (t *Term) Tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", t.socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmuxterm: tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Keys sends keys to the session, in tmux send-keys' names ("q", "Space",
// "Enter", "C-c").
func (t *Term) Keys(keys ...string) error {
	_, err := t.Tmux(append([]string{"send-keys", "-t", session}, keys...)...)
	return err
}

// Screen is what the terminal shows now.
func (t *Term) Screen() (string, error) { return t.Tmux("capture-pane", "-p", "-t", session) }

// Scrollback is the screen with all the history that scrolled off above
// it. What a program draws on the alternate screen is never in history.
func (t *Term) Scrollback() (string, error) {
	return t.Tmux("capture-pane", "-p", "-S", "-", "-t", session)
}

// Display is tmux's display-message -p of format for the pane, without
// its newline: "#{alternate_on} #{cursor_flag}" says whether the program
// left the alternate screen on and the cursor shown.
func (t *Term) Display(format string) (string, error) {
	s, err := t.Tmux("display-message", "-p", "-t", session, format)
	return strings.TrimRight(s, "\n"), err
}

// Wait reads the terminal with read (Screen, Scrollback) every poll until
// cond holds of what it read, and returns that. Past timeout it returns
// the last read and an error wrapping ErrTimeout; an error of read is
// returned at once.
func (t *Term) Wait(timeout, poll time.Duration, read func() (string, error), cond func(string) bool) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		s, err := read()
		if err != nil {
			return s, err
		}
		if cond(s) {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("%w after %v", ErrTimeout, timeout)
		}
		time.Sleep(poll)
	}
}

// Kill ends the tmux server, its session and what runs in it.
func (t *Term) Kill() { exec.Command("tmux", "-L", t.socket, "kill-server").Run() }

// WaitTimeout and WaitPoll are how long T.Wait waits at most and how
// often it reads the terminal meanwhile. The bound is only a failure's:
// a wait ends at its event. 60 s, not 20: under -race, beside the rest
// of the suite, a split's verdict in tmux took longer than 20 s to have
// its data (47 requests in 18 s at load average 5).
const (
	WaitTimeout = 60 * time.Second
	WaitPoll    = 100 * time.Millisecond
)

// T is a Term for a test: it fails the test on any error of tmux.
type T struct {
	tb   testing.TB
	term *Term
}

// New starts cmd in a w x h terminal on socket (see Start) for the test,
// skipping it where tmux is not installed, and kills the server when the
// test ends.
func New(tb testing.TB, socket string, w, h int, cmd string) *T {
	tb.Helper()
	if err := Installed(); err != nil {
		tb.Skip("tmux not installed")
	}
	term, err := Start(socket, w, h, cmd)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(term.Kill)
	return &T{tb: tb, term: term}
}

// Term is the terminal itself, for its methods that return errors.
func (t *T) Term() *Term { return t.term }

func (t *T) must(s string, err error) string {
	t.tb.Helper()
	if err != nil {
		t.tb.Fatal(err)
	}
	return s
}

// Tmux runs a tmux command on the test's server and returns its output.
func (t *T) Tmux(args ...string) string {
	t.tb.Helper()
	return t.must(t.term.Tmux(args...))
}

// Keys sends keys to the session (see Term.Keys).
func (t *T) Keys(keys ...string) {
	t.tb.Helper()
	t.must("", t.term.Keys(keys...))
}

// Screen is what the terminal shows now.
func (t *T) Screen() string {
	t.tb.Helper()
	return t.must(t.term.Screen())
}

// Scrollback is the screen with the history that scrolled off it.
func (t *T) Scrollback() string {
	t.tb.Helper()
	return t.must(t.term.Scrollback())
}

// Display is display-message -p of format for the pane (see Term.Display).
func (t *T) Display(format string) string {
	t.tb.Helper()
	return t.must(t.term.Display(format))
}

// Wait reads the terminal with read (t.Screen, t.Scrollback) until cond
// holds, for up to WaitTimeout, and returns what it read; past that it
// fails the test, naming what the screen never showed.
func (t *T) Wait(what string, read func() string, cond func(string) bool) string {
	t.tb.Helper()
	s, err := t.term.Wait(WaitTimeout, WaitPoll, func() (string, error) { return read(), nil }, cond)
	if err != nil {
		t.tb.Fatalf("screen never showed %s:\n%s", what, s)
	}
	return s
}
