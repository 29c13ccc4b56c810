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
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("infertop-test-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	cmd := fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms; echo EXITED $?; sleep 30", self)
	tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24", cmd)
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	screen := func() string { return tmux("capture-pane", "-p", "-t", "t") }
	waitScreen := func(what string, cond func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := screen()
			if cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("screen never showed %s:\n%s", what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
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
