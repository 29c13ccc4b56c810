package ui

import (
	"fmt"
	"strconv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
)

// traceItem is the header's load during a trace replay, in place of the
// open loop's rate: "trace, 1.5× speed, at 0:42 of 10:00", the pass of a
// looped trace, and how far behind it is when it falls behind.
func (m *Model) traceItem() string {
	t, tr := m.theme, m.snap.Trace
	text := t.Muted.Render("trace, ") + t.Value.Render(speedLabel(tr.Speed)+" speed") +
		t.Muted.Render(", at ") + t.Value.Render(clock(tr.Position)) + t.Muted.Render(" of ") + t.Value.Render(clock(tr.Span))
	if tr.Pass > 0 {
		text += t.Muted.Render(fmt.Sprintf(", pass %d", tr.Pass+1))
	}
	if tr.FallingBehind() {
		text += t.Warn.Render(" behind " + Duration(tr.Behind))
	}
	return text
}

// traceLength is a length knob during a replay: the trace's own, or
// scaled by the keys from the mean it started at.
func traceLength(knob, base int) string {
	if base <= 0 || knob == base {
		return "trace's"
	}
	return "trace's ×" + strconv.FormatFloat(float64(knob)/float64(base), 'g', 3, 64)
}

// speedLabel is a speed as the header shows it: 1×, 1.5×, 0.64×.
func speedLabel(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) + "×" }

// traceName is what is replayed, for the header's line of knobs.
func traceName(tr load.TraceStatus) string { return sanitize.Text(tr.Name) }

// traceRefusal is why o does nothing during a replay.
const traceRefusal = "o does not apply to a trace: it sets the arrivals (+/- move its speed)"
