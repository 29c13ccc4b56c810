package ui

import (
	"bytes"
	"fmt"
	"math"
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
	snaps <-chan watch.Snapshot
	last  watch.Snapshot
	has   bool
	// trend is each group's last chartPoints reads of its requests per
	// second and TTFT p99 (the bucket's upper bound), for the charts.
	trend         map[string]*groupTrend
	width, height int
	title, bad    lipgloss.Style
	good          lipgloss.Style
	// notice is said in the title line (where the dashboard is served
	// over SSH too).
	notice string
}

// WithNotice is m saying notice in its title line.
func (m WatchModel) WithNotice(notice string) WatchModel {
	m.notice = notice
	return m
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
	return WatchModel{snaps: snaps, width: 80, height: 24, trend: map[string]*groupTrend{},
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
		m.record(m.last)
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
	title := " infertop watch  q quit"
	if m.notice != "" {
		title += "  · " + m.notice
	}
	head := m.title.Render(ansi.Truncate(title, m.width, ""))
	if !m.has {
		return head + "\nreading the fleet…"
	}
	var b bytes.Buffer
	if err := watch.Text(&b, m.last); err != nil {
		return head + "\n" + err.Error()
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	// The charts go after the groups' table (its header and a line a
	// group), before the verdict.
	if n := 2 + len(m.last.Groups); len(lines) > n && m.height >= 16 {
		charts := m.charts(max(m.width-34, 10))
		lines = append(append(append([]string(nil), lines[:n]...), charts...), lines[n:]...)
	}
	out := []string{head}
	for _, l := range lines {
		if len(out) >= m.height {
			break
		}
		// The tables' rows are cut at the width; the probe's and the
		// verdict's sentences wrap (three lines at most), so that a narrow
		// terminal still reads the failure or the call at their ends.
		verdict := strings.HasPrefix(l, "verdict: ")
		parts := []string{ansi.Truncate(l, m.width, "…")}
		if verdict || strings.HasPrefix(l, "probe (") {
			parts = wrapInto(l, m.width, 3, "…")
		}
		for _, l := range parts {
			if len(out) >= m.height {
				break
			}
			if verdict {
				switch m.last.Verdict.State {
				case watch.Regressed:
					l = m.bad.Render(l)
				case watch.Held:
					l = m.good.Render(l)
				}
			}
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// chartPoints is how many reads a group's chart spans.
const chartPoints = 120

// groupTrend is one group's recent reads.
type groupTrend struct {
	req, ttft []float64
}

func push(xs []float64, v float64) []float64 {
	xs = append(xs, v)
	if len(xs) > chartPoints {
		xs = xs[len(xs)-chartPoints:]
	}
	return xs
}

// record adds a snapshot's groups to their trends.
func (m *WatchModel) record(s watch.Snapshot) {
	for _, g := range s.Groups {
		t := m.trend[g.Name]
		if t == nil {
			t = &groupTrend{}
			m.trend[g.Name] = t
		}
		ttft := math.NaN()
		if g.TTFT.P99.OK && g.TTFT.P99.Hi != nil {
			ttft = *g.TTFT.P99.Hi
		}
		t.req, t.ttft = push(t.req, g.ReqPerSec), push(t.ttft, ttft)
	}
}

// charts are a line per group and figure: its recent reads as a
// sparkline, the groups' TTFT on one scale so that they compare.
func (m WatchModel) charts(width int) []string {
	top := 0.0
	for _, g := range m.last.Groups {
		if t := m.trend[g.Name]; t != nil {
			for _, v := range t.ttft {
				if !math.IsNaN(v) {
					top = max(top, v)
				}
			}
		}
	}
	var out []string
	for _, g := range m.last.Groups {
		t := m.trend[g.Name]
		if t == nil {
			continue
		}
		name := ansi.Truncate(g.Name, 12, "…")
		out = append(out,
			fmt.Sprintf("  %-12s req/s     %s %.1f", name, spark(t.req, width, 0), g.ReqPerSec),
			fmt.Sprintf("  %-12s TTFT p99≤ %s %s", name, spark(t.ttft, width, top), watch.FormatBound(g.TTFT.P99)))
	}
	return out
}

// spark draws the last width values of xs in eighth blocks, scaled to
// top (0: their own largest); a value not known is a space.
func spark(xs []float64, width int, top float64) string {
	if len(xs) > width {
		xs = xs[len(xs)-width:]
	}
	if top <= 0 {
		for _, v := range xs {
			if !math.IsNaN(v) {
				top = max(top, v)
			}
		}
	}
	blocks := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range xs {
		if math.IsNaN(v) || top <= 0 {
			b.WriteByte(' ')
			continue
		}
		i := int(v / top * float64(len(blocks)-1))
		b.WriteRune(blocks[min(max(i, 0), len(blocks)-1)])
	}
	return b.String()
}
