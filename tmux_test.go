package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for infertop itself, so the tmux
// test can run the real program without building it again.
func TestMain(m *testing.M) {
	if os.Getenv("INFERTOP_TEST_MAIN") == "1" {
		injectPanic(os.Getenv("INFERTOP_TEST_PANIC"))
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestDashboardInTmux runs infertop as a person would: in a terminal of
// 80x24 (tmux), watching the embedded sim; it reads the screen, presses
// keys and quits.
func TestDashboardInTmux(t *testing.T) {
	self := selfForTmux(t)
	term := newTmux(t, fmt.Sprintf("infertop-test-%d", os.Getpid()), 80, 24,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms; echo EXITED $?; sleep 30", self))
	tmux, screen := term.run, term.screen
	waitScreen := func(what string, cond func(string) bool) string {
		t.Helper()
		return term.wait(what, screen, cond)
	}
	s := waitScreen("a request's TTFT", func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "TTFT ") && strings.Contains(l, "ms") {
				return true
			}
		}
		return false
	})
	for _, want := range []string{"infertop", "sim-llama-8b", "concurrency 8", "Latency", "Throughput", "Errors", "In flight", "Phases"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	tmux("send-keys", "-t", "t", "K")
	waitScreen("concurrency 16", func(s string) bool { return strings.Contains(s, "concurrency 16") })
	waitScreen("16 in flight", func(s string) bool { return strings.Contains(s, "16 of 16") })
	tmux("send-keys", "-t", "t", "Space")
	waitScreen("paused", func(s string) bool { return strings.Contains(s, "paused") })
	tmux("send-keys", "-t", "t", "q")
	waitScreen("a clean exit", func(s string) bool { return strings.Contains(s, "EXITED 0") })
}

// selfForTmux skips the test where tmux is missing, and returns the test
// binary, which TestMain turns into infertop.
func selfForTmux(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// tmuxTerm is a tmux server on its own socket with one session, "t".
type tmuxTerm struct {
	t    *testing.T
	sock string
}

// newTmux starts cmd in a w x h session, killed when the test ends.
func newTmux(t *testing.T, sock string, w, h int, cmd string) *tmuxTerm {
	t.Helper()
	m := &tmuxTerm{t: t, sock: sock}
	m.run("new-session", "-d", "-s", "t", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), cmd)
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	return m
}

func (m *tmuxTerm) run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", m.sock}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// screen is what the terminal shows; scrollback adds what scrolled off.
func (m *tmuxTerm) screen() string     { return m.run("capture-pane", "-p", "-t", "t") }
func (m *tmuxTerm) scrollback() string { return m.run("capture-pane", "-p", "-S", "-300", "-t", "t") }

// wait reads the terminal with read until cond holds, for up to 20 s.
func (m *tmuxTerm) wait(what string, read func() string, cond func(string) bool) string {
	m.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := read()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("screen never showed %s:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
