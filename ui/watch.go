package ui

import (
	"bytes"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/infertop/infertop/watch"
)

// WatchModel is the dashboard of a watch (infertop watch): the groups
// side by side, the verdict and its regressions, the servers' table,
// redrawn at every snapshot. It has no load to change: q quits.
type WatchModel struct {
	snaps         <-chan watch.Snapshot
	last          watch.Snapshot
	has           bool
	width, height int
	title, bad    lipgloss.Style
	good          lipgloss.Style
}

// watchMsg is a new snapshot; watchEnd the end of the watch.
type (
	watchMsg watch.Snapshot
	watchEnd struct{}
)

// NewWatch is the dashboard of the snapshots snaps, drawn with rd.
func NewWatch(snaps <-chan watch.Snapshot, rd *lipgloss.Renderer) WatchModel {
	if rd == nil {
		rd = lipgloss.DefaultRenderer()
	}
	return WatchModel{snaps: snaps, width: 80, height: 24,
		title: rd.NewStyle().Bold(true).Reverse(true),
		bad:   rd.NewStyle().Bold(true).Foreground(lipgloss.Color("9")),
		good:  rd.NewStyle().Foreground(lipgloss.Color("10"))}
}

func (m WatchModel) next() tea.Cmd {
	return func() tea.Msg {
		s, ok := <-m.snaps
		if !ok {
			return watchEnd{}
		}
		return watchMsg(s)
	}
}

// Init waits for the first snapshot.
func (m WatchModel) Init() tea.Cmd { return m.next() }

// Update takes a snapshot, a resize or a key.
func (m WatchModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case watchMsg:
		m.last, m.has = watch.Snapshot(msg), true
		return m, m.next()
	case watchEnd:
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		}
	}
	return m, nil
}

// View draws the last snapshot within the terminal: lines cut at its
// width, the servers' table cut at its height.
func (m WatchModel) View() string {
	if m.width < 20 || m.height < 5 {
		return "infertop watch: the terminal is too small"
	}
	head := m.title.Render(ansi.Truncate(" infertop watch  q quit", m.width, ""))
	if !m.has {
		return head + "\nreading the fleet…"
	}
	var b bytes.Buffer
	if err := watch.Text(&b, m.last); err != nil {
		return head + "\n" + err.Error()
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	out := []string{head}
	for _, l := range lines {
		if len(out) >= m.height {
			break
		}
		l = ansi.Truncate(l, m.width, "…")
		if strings.HasPrefix(l, "verdict: ") {
			switch m.last.Verdict.State {
			case watch.Regressed:
				l = m.bad.Render(l)
			case watch.Held:
				l = m.good.Render(l)
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
