package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/probe"
)

// injectPanic makes the dashboard panic, for TestPanicRestoresTerminal:
// "update" in the model's Update when ! is pressed (bubbletea's event
// loop), "worker" in the engine's own goroutine on the 20th request.
func injectPanic(where string) {
	switch where {
	case "update":
		wrapModel = func(m tea.Model) tea.Model { return panicky{m} }
	case "worker":
		var n atomic.Int64
		wrapDo = func(do func(context.Context, probe.Request) probe.Result) func(context.Context, probe.Request) probe.Result {
			return func(ctx context.Context, r probe.Request) probe.Result {
				if n.Add(1) == 20 {
					panic("injected in a worker")
				}
				return do(ctx, r)
			}
		}
	}
}

type panicky struct{ tea.Model }

func (p panicky) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && k.String() == "!" {
		panic("injected in Update")
	}
	m, cmd := p.Model.Update(msg)
	return panicky{m}, cmd
}

// TestPanicRestoresTerminal panics the dashboard in tmux, in the event loop
// and in a goroutine of the engine, and reads what a person would see
// after: the panic and its stack on the main screen, the cursor shown, the
// terminal back in cooked mode, exit status 2.
func TestPanicRestoresTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, where := range []string{"update", "worker"} {
		t.Run(where, func(t *testing.T) {
			sock := fmt.Sprintf("infertop-panic-%d-%s", os.Getpid(), where)
			tmux := func(args ...string) string {
				out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %v: %v: %s", args, err, out)
				}
				return string(out)
			}
			cmd := fmt.Sprintf("env INFERTOP_TEST_MAIN=1 INFERTOP_TEST_PANIC=%s TERM=xterm-256color %q --tick 100ms -c 2 --prompt-tokens 16 --output-tokens 8 2>&1;"+
				" echo EXITED $?; if stty -a | grep -q -- -icanon; then echo RAW; else echo COOKED; fi; sleep 30", where, self)
			tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "40", cmd)
			t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
			wait := func(what ...string) string {
				t.Helper()
				deadline := time.Now().Add(20 * time.Second)
				for {
					s := tmux("capture-pane", "-p", "-S", "-300", "-t", "t") // with what scrolled off
					for _, w := range what {
						if strings.Contains(s, w) {
							return s
						}
					}
					if time.Now().After(deadline) {
						t.Fatalf("screen never showed %q:\n%s", what, s)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			if where == "update" {
				wait("Latency")
				tmux("send-keys", "-t", "t", "!")
			}
			s := wait("COOKED", "RAW")
			for _, want := range []string{"infertop: panic: injected", "goroutine ", "The terminal was restored", "EXITED 2", "COOKED"} {
				if !strings.Contains(s, want) {
					t.Errorf("screen lacks %q:\n%s", want, s)
				}
			}
			if strings.Contains(s, "Latency") {
				t.Errorf("the dashboard is still on the screen:\n%s", s)
			}
			if alt := strings.TrimSpace(tmux("display", "-p", "-t", "t", "#{alternate_on} #{cursor_flag}")); alt != "0 1" {
				t.Errorf("alternate screen and cursor flags %q, want the main screen and a visible cursor (0 1)", alt)
			}
		})
	}
}
