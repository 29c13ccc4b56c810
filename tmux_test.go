package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/tools/tmuxterm"
)

// TestMain lets the test binary stand in for infertop itself, so the tmux
// test can run the real program without building it again.
func TestMain(m *testing.M) {
	if os.Getenv("INFERTOP_TEST_MAIN") == "1" {
		a := &app{stdout: os.Stdout, stderr: os.Stderr}
		injectPanic(a, os.Getenv("INFERTOP_TEST_PANIC"))
		injectStuck(a, os.Getenv("INFERTOP_TEST_STUCK"))
		os.Exit(a.run(os.Args[1:]))
	}
	if os.Getenv("INFERTOP_GUIDE_SHIM") == "1" { // the guides' commands (docs_test.go)
		os.Exit(guideShim(os.Args[1:]))
	}
	// The tests run this binary as infertop (in tmux, as `infertop ssh`),
	// and a -race build sleeps a second at each clean exit by default
	// (GORACE's atexit_sleep_ms, for other threads' reports to finish):
	// a second of every such test spent waiting. A tenth of one is plenty
	// for a report to be written; a GORACE of the caller's own that sets
	// it comes after, so it wins. Every child inherits this environment
	// (tmux's servers are started from this process).
	os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=100 "+os.Getenv("GORACE")))
	os.Exit(m.Run())
}

// TestDashboardInTmux runs infertop as a person would: in a terminal of
// 80x24 (tmux), watching the embedded sim; it reads the screen, presses
// keys and quits.
func TestDashboardInTmux(t *testing.T) {
	t.Parallel()
	self := selfForTmux(t)
	term := tmuxterm.New(t, fmt.Sprintf("infertop-test-%d", os.Getpid()), 80, 24,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms; echo EXITED $?; sleep 30", self))
	waitScreen := func(what string, cond func(string) bool) string {
		t.Helper()
		return term.Wait(what, term.Screen, cond)
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
	term.Keys("K")
	waitScreen("concurrency 16", func(s string) bool { return strings.Contains(s, "concurrency 16") })
	waitScreen("16 in flight", func(s string) bool { return strings.Contains(s, "16 of 16") })
	term.Keys("Space")
	waitScreen("paused", func(s string) bool { return strings.Contains(s, "paused") })
	term.Keys("q")
	waitScreen("a clean exit", func(s string) bool { return strings.Contains(s, "EXITED 0") })
}

// selfForTmux skips the test where tmux is missing, and returns the test
// binary, which TestMain turns into infertop.
func selfForTmux(t *testing.T) string {
	t.Helper()
	if err := tmuxterm.Installed(); err != nil {
		t.Skip("tmux not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// TestHeaderStopsAtDone: once --duration is reached the header says done
// and its clock stops, as the engine's snapshots do.
func TestHeaderStopsAtDone(t *testing.T) {
	t.Parallel()
	self := selfForTmux(t)
	term := tmuxterm.New(t, fmt.Sprintf("infertop-done-%d", os.Getpid()), 100, 30,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms --duration 1s -c 2 --prompt-tokens 16 --output-tokens 8 --sim-preset fast; echo EXITED $?; sleep 30", self))
	header := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	s := term.Wait("done", term.Screen, func(s string) bool { return strings.Contains(header(s), "done") })
	first := header(s)
	// What stays still has to be watched: the clock shows whole seconds,
	// so a clock still running would move the header within a second
	// (and a 100 ms redraw) of done. Watch it for half as long again.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if later := header(term.Screen()); later != first {
			t.Errorf("the header moved after done:\n%s\n%s", first, later)
			break
		}
	}
	if !strings.Contains(first, "duration reached") {
		t.Errorf("header %q does not say why the run is done", first)
	}
	term.Keys("q")
	term.Wait("a clean exit", term.Screen, func(s string) bool { return strings.Contains(s, "EXITED 0") })
}

// TestFindMaxInTmux: --find-max in the dashboard runs the search, the
// header says what it does, and a knob key hands the load back.
func TestFindMaxInTmux(t *testing.T) {
	t.Parallel()
	self := selfForTmux(t)
	term := tmuxterm.New(t, fmt.Sprintf("infertop-findmax-%d", os.Getpid()), 100, 30,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms --find-max 'ttft_p99<=2s' --from 2 --to 4 --sim-preset fast; echo EXITED $?; sleep 30", self))
	term.Wait("the search's header", term.Screen, func(s string) bool { return strings.Contains(s, "capacity search · step 1: concurrency 2") })
	term.Keys("k")
	s := term.Wait("the hand-back", term.Screen, func(s string) bool { return strings.Contains(s, "the search handed control back: concurrency 3") })
	if strings.Contains(s, "capacity search · step") {
		t.Errorf("the header still shows the search:\n%s", s)
	}
	term.Keys("q")
	term.Wait("a clean exit", term.Screen, func(s string) bool { return strings.Contains(s, "EXITED 0") })
}
