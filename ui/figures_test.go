package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestHeaderPromptWithPrefix: --prompt-tokens 100 --prefix-tokens 1000
// sends about 1,130 tokens a request; the header says what goes out, not
// the knob (on main: "prompt 100 tok").
func TestHeaderPromptWithPrefix(t *testing.T) {
	s := fixedSnapshot()
	s.Knobs.PromptTokens, s.PrefixTokens = 100, 1000
	s.Phases[2].InTokens = s.Phases[2].Completed * 1130
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 30}, SnapshotMsg(s))
	if h := strings.Join(strings.SplitN(m.View(), "\n", 3)[:2], "\n"); !strings.Contains(h, "prompt ≈1130 tok (1000 shared)") {
		t.Fatalf("header:\n%s", h)
	}
	s.Phases[2].Completed = 0 // nothing back yet: the prefix and the marker
	m = press[tea.Msg](m, SnapshotMsg(s))
	if h := strings.Join(strings.SplitN(m.View(), "\n", 3)[:2], "\n"); !strings.Contains(h, "prompt 1001 tok (1000 shared)") {
		t.Fatalf("header:\n%s", h)
	}
}
