package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/compare"
)

// fixedAgents are four agents: two running, one lost (a reason given),
// one refused with a hostile address and reason, and index 3 missing.
func fixedAgents() Agents {
	return Agents{Source: "infertop-agents.ns.svc:7070", Of: 5, Missing: []int{3}, Rows: []AgentRow{
		{Index: 0, Addr: "10.0.0.1:7070", State: "running", Sent: 120, Completed: 110, Failed: 2, InFlight: 8, TTFTP99: 412 * time.Millisecond,
			ClockOffset: 3 * time.Millisecond, Seen: true},
		{Index: 1, Addr: "10.0.0.2:7070", State: "running", Sent: 118, Completed: 110, InFlight: 8, TTFTP99: 388 * time.Millisecond, Seen: true},
		{Index: 2, Addr: "10.0.0.3:7070", State: "lost", Why: "silent for 30s", Sent: 60, Completed: 52, Incomplete: 8, Seen: true},
		{Index: 4, Addr: "10.0.0.5:7070\x1b]0;pwned\x07", State: "refused", Why: "version \"v9\"\x1b[2J", Seen: true},
	}}
}

// TestAgentsPanel: the agents' dashboard fills the terminal exactly at
// every size, with a row per agent above the merged load's panels, their
// reasons, the missing index, and no escape from an agent's text; the
// knob keys turn the controller (package fleet's moves every agent).
func TestAgentsPanel(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			ctl := &fakeLimited{k: fixedSnapshot().Knobs}
			m, err := New(ctl, Options{Renderer: asciiRenderer(), Agents: fixedAgents})
			if err != nil {
				t.Fatal(err)
			}
			m = press[tea.Msg](m, tea.WindowSizeMsg{Width: size[0], Height: size[1]}, SnapshotMsg(fixedSnapshot()))
			before := ctl.k.Concurrency
			m = press[tea.Msg](m, tea.KeyMsg{Type: tea.KeyUp})
			if ctl.k.Concurrency != before+1 {
				t.Errorf("↑ with agents: concurrency %d, was %d", ctl.k.Concurrency, before)
			}
			view := m.View()
			checkSize(t, view, size[0], size[1])
			if strings.Contains(view, "\x1b") {
				t.Errorf("an escape reached the screen:\n%s", view)
			}
			for _, want := range []string{"─ Agents · 4 followed of 5 shares", "  0 10.0.0.1:7070", "running", "412ms", "+3ms", "lost", "refused",
				"─ Latency"} {
				if !strings.Contains(view, want) {
					t.Errorf("no %q:\n%s", want, view)
				}
			}
			if size[1] >= 40 && (!strings.Contains(view, "silent for 30s") || !strings.Contains(view, "no agent for index [3]")) {
				t.Errorf("the reasons:\n%s", view)
			}
		})
	}
}

// TestAgentsCompare: agents comparing a canary show the agents' panel
// above a comparison's dashboard (the verdicts, both sides' columns),
// filling the terminal exactly at every size.
func TestAgentsCompare(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			c := fixedComparison()
			m, err := New(nil, Options{Renderer: asciiRenderer(), Agents: fixedAgents, Compare: func() (compare.Comparison, bool) { return c, true }})
			if err != nil {
				t.Fatal(err)
			}
			m = press[tea.Msg](m, tea.WindowSizeMsg{Width: size[0], Height: size[1]}, CanarySnapshotMsg(canarySnapshot()), SnapshotMsg(fixedSnapshot()))
			view := m.View()
			checkSize(t, view, size[0], size[1])
			for _, want := range []string{"─ Agents · 4 followed of 5 shares", "  0 10.0.0.1:7070", "canary", "─ Latency"} {
				if !strings.Contains(view, want) {
					t.Errorf("no %q:\n%s", want, view)
				}
			}
			if size[1] >= 40 && !strings.Contains(view, "each row an agent's baseline") {
				t.Errorf("no word of whose the rows are:\n%s", view)
			}
		})
	}
}

// TestAgentsIncompleteApart: the agents' incompl column counts the
// requests cancelled unfinished, never those still in flight (a running
// agent with 8 out showed 8 incomplete).
func TestAgentsIncompleteApart(t *testing.T) {
	m, err := New(nil, Options{Renderer: asciiRenderer(), Agents: fixedAgents})
	if err != nil {
		t.Fatal(err)
	}
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(fixedSnapshot()))
	for _, l := range strings.Split(m.View(), "\n") {
		f := strings.Fields(l)
		if len(f) > 7 && f[1] == "10.0.0.1:7070" {
			if f[3] != "120" || f[6] != "0" { // sent, ok, failed, incompl
				t.Fatalf("agent 0 (8 in flight, none incomplete): %q", l)
			}
			return
		}
	}
	t.Fatalf("no row for agent 0:\n%s", m.View())
}
