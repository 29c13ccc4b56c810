package tmuxterm

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTerm drives cat in a 40x10 terminal after 30 lines have scrolled
// past: the screen, the scrollback, keys, a display-message query and a
// wait that times out.
func TestTerm(t *testing.T) {
	term := New(t, "", 40, 10, "for i in $(seq 1 30); do echo line$i; done; cat")
	term.Wait("line30", term.Screen, func(s string) bool { return strings.Contains(s, "line30\n") })
	if s := term.Screen(); strings.Contains(s, "line1\n") {
		t.Errorf("line1 is on a 10-line screen:\n%s", s)
	}
	if s := term.Scrollback(); !strings.Contains(s, "line1\n") || !strings.Contains(s, "line30\n") {
		t.Errorf("the scrollback lacks line1 or line30:\n%s", s)
	}
	term.Keys("hello", "Enter")
	term.Wait("hello twice", term.Screen, func(s string) bool { return strings.Count(s, "hello") == 2 }) // the echo and cat's
	if got := term.Display("#{pane_width}x#{pane_height}"); got != "40x10" {
		t.Errorf("pane size %q, want 40x10", got)
	}
	_, err := term.Term().Wait(200*time.Millisecond, 10*time.Millisecond, term.Term().Screen, func(s string) bool { return false })
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("Wait on a condition that never holds: %v, want ErrTimeout", err)
	}
}
