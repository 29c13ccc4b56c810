package ui

import (
	"fmt"

	"github.com/infertop/infertop/load"
)

// turnsNeed is the rows the turns table wants (0 without sessions).
func (m *Model) turnsNeed() int {
	if !m.snap.Sessions.On {
		return 0
	}
	return 2 + len(m.snap.Sessions.Turns)
}

// turnsPanel is the sessions' table: a row per turn (turn 1 against turn
// 5 is what a prefix cache changes), not per phase, with each turn's
// prefix-cache hit rate where its server said (--server-timings); its
// title holds the whole sessions' time.
func (m *Model) turnsPanel(w, h int) string {
	t, f := m.theme, m.snap.Sessions
	extra := fmt.Sprintf("%d sessions of %d turns done", f.Completed, f.TurnsPerSess)
	if f.Conversations {
		extra = fmt.Sprintf("%d conversations of up to %d turns done", f.Completed, f.TurnsPerSess)
	}
	if f.SessionTime.Count > 0 {
		extra += ", session p50 " + Duration(f.SessionTime.P50)
	}
	if f.Capped > 0 {
		extra += fmt.Sprintf(", %d cut at the cap", f.Capped)
	}
	lines := []string{m.title("Turns", extra, w)}
	type col struct {
		name  string
		width int
	}
	cols := []col{{"turn", 5}, {"reqs", 7}, {"prompt", 8}, {"ttft p50", 10}, {"ttft p99", 10}, {"e2e p50", 10}, {"e2e p99", 10}, {"err", 6}}
	cached := false // a server said what its prefix cache held: the hit rate's column
	for _, tf := range f.Turns {
		cached = cached || tf.CachedOf > 0
	}
	if cached {
		cols = append(cols[:3], append([]col{{"cache", 8}}, cols[3:]...)...)
	}
	head := ""
	for _, c := range cols {
		head += padLeft(c.name, c.width)
	}
	lines = append(lines, t.Muted.Render(head))
	for _, tf := range f.Turns {
		errs := "0"
		if n := tf.Completed + tf.Failed; tf.Failed > 0 {
			errs = pct(float64(tf.Failed) / float64(n))
		}
		cells := []string{fmt.Sprint(tf.Turn), count(tf.Completed, 6), count(int64(tf.PromptTokens), 7),
			Duration(tf.TTFT.P50), Duration(tf.TTFT.P99), Duration(tf.E2E.P50), Duration(tf.E2E.P99), errs}
		if cached {
			hit := "–"
			if r, ok := tf.HitRate(); ok {
				hit = pct(r)
			}
			cells = append(cells[:3], append([]string{hit}, cells[3:]...)...)
		}
		row := ""
		for i, c := range cols {
			row += padLeft(cells[i], c.width)
		}
		lines = append(lines, t.Text.Render(row))
	}
	return block(lines, w, h)
}

// sessionsOn is whether the snapshot's load is sessions.
func sessionsOn(s *load.Snapshot) bool { return s.Sessions.On }
