package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/load"
)

// TestNotSteadyYet: the header marks a closed loop whose requests in
// flight have not reached 95 % of its concurrency, within the width; not
// once they have, nor where none is sought, nor once the run is done.
func TestNotSteadyYet(t *testing.T) {
	for _, c := range []struct {
		name   string
		steady load.SteadyState
		done   bool
		want   bool
	}{
		{"ramping", load.SteadyState{Target: 48}, false, true},
		{"steady", load.SteadyState{Target: 48, Reached: true}, false, false},
		{"none sought", load.SteadyState{}, false, false},
		{"done", load.SteadyState{Target: 48}, true, false},
	} {
		for _, w := range []int{80, 160} {
			s := fixedSnapshot()
			s.Steady, s.Done = c.steady, c.done
			m := press[tea.Msg](newTestModel(t, nil), SnapshotMsg(s))
			h := m.header(w)
			if got := strings.Contains(h, "not steady yet"); got != c.want {
				t.Errorf("%s at %d: %v in\n%s", c.name, w, got, h)
			}
			for _, l := range strings.Split(h, "\n") {
				if lipgloss.Width(l) > w {
					t.Errorf("%s at %d: a line of %d", c.name, w, lipgloss.Width(l))
				}
			}
		}
	}
}
