package ui

import (
	"fmt"
	"strings"

	"github.com/infertop/infertop/sanitize"
)

// errorsScreen lists the distinct errors since the start or the last reset,
// most frequent first: count, share of the failures, class, status and
// the message wrapped in full (the panel has room for one, cut). It is the
// e key's screen, drawn in the body's place like the help.
func (m *Model) errorsScreen(w, h int) string {
	t, s := m.theme, &m.snap
	kinds := "distinct errors"
	if len(s.Errors) == 1 {
		kinds = "distinct error"
	}
	title := t.Title.Render("Errors")
	if len(s.Errors) > 0 {
		title += t.Muted.Render(fmt.Sprintf(" · %d failed, %d %s, most frequent first, since the start or the last reset",
			s.TotalFailed, len(s.Errors), kinds))
	}
	lines := append(wrap(title, w), "")
	// What ends the screen, kept whatever the list's length: the newest
	// error (it may be none of the most frequent) and how to leave.
	var tail []string
	if s.LastError != "" {
		tail = append(tail, "")
		for i, l := range wrap(t.Muted.Render("newest, at "+clock(s.LastErrorAt)+": ")+t.Text.Render(sanitize.Text(s.LastError)), w) {
			if i == 4 { // the newest is a reminder, not the list: a few lines at most
				break
			}
			tail = append(tail, l)
		}
	}
	tail = append(tail, "", t.Muted.Render("Press e or Esc to return."))

	const countW, shareW = 7, 7
	indent := strings.Repeat(" ", countW+shareW+2)
	room := h - len(lines) - len(tail)
	var rows []string
	for i, e := range s.Errors {
		share := ""
		if s.TotalFailed > 0 {
			share = pct(float64(e.Count) / float64(s.TotalFailed))
		}
		text, textW := t.Text.Render(e.Line()), max(w-len(indent), 10)
		entry := wrap(text, textW)
		// Leave the last line for the note on the ones left out, unless
		// this is the last error.
		left := len(s.Errors) - i - 1
		if len(rows) == 0 && len(entry)+min(left, 1) > room {
			// The first one is shown however long, cut to the screen.
			entry = wrapInto(text, textW, max(room-min(left, 1), 1), t.Muted.Render("…"))
		}
		if need := len(entry) + min(left, 1); len(rows)+need > room {
			rows = append(rows[:min(len(rows), max(room-1, 0))],
				t.Muted.Render(fmt.Sprintf("… %d more not shown: a taller terminal shows them, the JSON report lists every one", left+1)))
			break
		}
		for j, l := range entry {
			if j == 0 {
				rows = append(rows, t.Bad.Render(padLeft(fmt.Sprint(e.Count), countW))+t.Muted.Render(padLeft(share, shareW))+"  "+l)
			} else {
				rows = append(rows, indent+l)
			}
		}
	}
	if len(s.Errors) == 0 {
		rows = append(rows, t.Muted.Render("No failures since the start or the last reset."))
	}
	lines = append(lines, rows...)
	return block(append(lines, tail...), w, h)
}
