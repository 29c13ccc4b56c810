package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/tools/tmuxterm"
)

// injectPanic makes the dashboard panic, for TestPanicRestoresTerminal:
// "update" in the model's Update when ! is pressed (bubbletea's event
// loop), "worker" in the engine's own goroutine on the 20th request.
func injectPanic(a *app, where string) {
	switch where {
	case "update":
		a.wrapModel = func(m tea.Model) tea.Model { return panicky{m} }
	case "worker":
		var n atomic.Int64
		a.wrapDo = func(do runner.Do) runner.Do {
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
	t.Parallel()
	self := selfForTmux(t)
	for _, where := range []string{"update", "worker"} {
		t.Run(where, func(t *testing.T) {
			cmd := fmt.Sprintf("env INFERTOP_TEST_MAIN=1 INFERTOP_TEST_PANIC=%s TERM=xterm-256color %q --tick 100ms -c 2 --prompt-tokens 16 --output-tokens 8 2>&1;"+
				" echo EXITED $?; if stty -a | grep -q -- -icanon; then echo RAW; else echo COOKED; fi; sleep 30", where, self)
			term := tmuxterm.New(t, fmt.Sprintf("infertop-panic-%d-%s", os.Getpid(), where), 100, 40, cmd)
			wait := func(what ...string) string {
				t.Helper()
				return term.Wait(fmt.Sprintf("%q", what), term.Scrollback, func(s string) bool { // with what scrolled off
					for _, w := range what {
						if strings.Contains(s, w) {
							return true
						}
					}
					return false
				})
			}
			if where == "update" {
				wait("Latency")
				term.Keys("!")
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
			if alt := strings.TrimSpace(term.Display("#{alternate_on} #{cursor_flag}")); alt != "0 1" {
				t.Errorf("alternate screen and cursor flags %q, want the main screen and a visible cursor (0 1)", alt)
			}
		})
	}
}
