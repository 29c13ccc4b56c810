package ui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/load"
)

// A dashboard of agents (`infertop --agents`): the merged load's panels
// as ever, and above them a panel with one row per agent: its index,
// address, state, counters, its own TTFT p99 and its clock's offset.

// AgentRow is one agent as the agents' panel shows it.
type AgentRow struct {
	// Index is its share's (-1: not known yet); Addr where it is followed.
	Index int
	Addr  string
	// State is running, done, lost, replaced, unreachable, refused or
	// waiting; Why says why it is lost, replaced, unreachable or refused.
	State, Why string
	// Its counters at its last report.
	Sent, Completed, Failed, Incomplete, InFlight int64
	// TTFTP99 is its own (0: none yet); ClockOffset its clock less ours.
	TTFTP99, ClockOffset time.Duration
	// Seen says it has answered (its clock offset is known).
	Seen bool
}

// Agents is the agents' side of a dashboard: what the panel shows.
type Agents struct {
	// Source is the --agents value, Of the number of shares.
	Source string
	Of     int
	// Rows are the agents, by index; Missing the indexes none answered for.
	Rows    []AgentRow
	Missing []int
}

// agentsView is the agents' panel's state: the newest rows.
type agentsView struct {
	on  bool
	get func() Agents
	now Agents
}

func newAgentsView(o Options) agentsView { return agentsView{on: o.Agents != nil, get: o.Agents} }

func (a *agentsView) refresh() {
	if a.get != nil {
		a.now = a.get()
	}
}

// agentsHeight is the lines the panel wants: its title, the heads, a row
// per agent and a line of notes.
func (m *Model) agentsHeight() int {
	a, notes := m.agents.now, 0
	for _, r := range a.Rows {
		if r.Why != "" {
			notes++
		}
	}
	if len(a.Missing) > 0 {
		notes++
	}
	return 3 + max(len(a.Rows), 1) + min(notes, 3)
}

// agentsPanel is the agents, one row each.
func (m *Model) agentsPanel(w, h int) string {
	t, a := m.theme, m.agents.now
	extra := fmt.Sprintf("%d followed of %d shares · %s", len(a.Rows), a.Of, cellText(a.Source))
	lines := []string{m.title("Agents", extra, w)}
	if len(a.Rows) == 0 {
		return block(append(lines, t.Muted.Render("none found yet")), w, h)
	}
	aw := max(min(w-65, 28), 10) // the address takes what the figures leave
	head := fmt.Sprintf("%3s %s %-11s %7s %7s %6s %7s %9s %7s", "#", fit("address", aw), "state", "sent", "ok", "failed", "incompl", "TTFT p99", "clock")
	lines = append(lines, t.Muted.Render(head))
	for _, r := range a.Rows {
		idx := "?"
		if r.Index >= 0 {
			idx = fmt.Sprint(r.Index)
		}
		p99, off := "—", "—"
		if r.TTFTP99 > 0 {
			p99 = load.FormatDuration(r.TTFTP99)
		}
		if r.Seen {
			off = fmt.Sprintf("%+.0fms", float64(r.ClockOffset)/float64(time.Millisecond))
		}
		style := t.Text
		switch r.State {
		case "done":
			style = t.Good
		case "lost", "refused", "unreachable":
			style = t.Bad
		case "waiting", "replaced":
			style = t.Muted
		}
		// incompl is the cancelled unfinished alone: a request still in
		// flight is not one (sent less the others is what is out).
		row := fmt.Sprintf("%3s %s %s %7d %7d %6d %7d %9s %7s", idx, fit(cellText(r.Addr), aw), style.Render(fit(r.State, 11)), r.Sent, r.Completed,
			r.Failed, r.Incomplete, p99, off)
		lines = append(lines, row)
	}
	var notes []part
	for _, r := range a.Rows {
		if r.Why != "" {
			notes = append(notes, part{t.Bad.Render(cellText(r.Addr) + ": " + cellText(r.Why)), 1})
		}
	}
	if len(a.Missing) > 0 {
		notes = append(notes, part{t.Warn.Render(fmt.Sprintf("no agent for index %v", a.Missing)), 1})
	}
	if m.cmp.on {
		notes = append(notes, part{t.Muted.Render("each row an agent's baseline (its canary's below, merged)"), 2})
	}
	notes = append(notes, part{t.Muted.Render("counters summed live; the window the exact merge of the agents' seconds, the run of their results"), 2})
	if room := h - len(lines); room > 0 {
		lines = append(lines, flowParts(notes, t.Muted.Render(" · "), w, room)...)
	}
	return block(lines, w, h)
}

// agentsDashboard lays the agents' dashboard out in h lines: the agents'
// panel first, then the merged load's panels in the rest (panels: the
// one load's, or a comparison's of the agents' two sides); the load's
// panels keep their least (the latency table and the small panels).
func (m *Model) agentsDashboard(w, h int, panels func(w, h int) string) string {
	const loadMin = 12
	ah := min(m.agentsHeight(), max(h-loadMin, 3))
	if ah >= h {
		return m.agentsPanel(w, h)
	}
	return lipgloss.JoinVertical(lipgloss.Left, m.agentsPanel(w, ah), panels(w, h-ah))
}
