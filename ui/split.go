package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/themes"
)

// A split's dashboard (`infertop --split-by`): the one load's panels as
// ever, and above them the groups that answered it (a rolling update's
// old and new pods behind one URL): a verdict line under the header and a
// panel with each group's figures, and each newer group's difference from
// the baseline group coloured by the verdict on it.

// splitView is the groups' side of a split's dashboard: the newest live
// comparison of the groups.
type splitView struct {
	// on is true when the view is a split's.
	on  bool
	get func() (compare.Grouping, bool)
	// res is the newest comparison; judged is false before the first.
	res    compare.Grouping
	judged bool
}

func newSplitView(o Options) splitView {
	return splitView{on: o.Groups != nil, get: o.Groups}
}

// refresh takes the newest live comparison: the split computes one a
// second behind an atomic pointer, so reading it with every snapshot
// costs nothing.
func (s *splitView) refresh() {
	if s.get == nil {
		return
	}
	if g, ok := s.get(); ok {
		s.res, s.judged = g, true
	}
}

// splitStyle is the split's verdict line's colour: bad when a newer group
// is worse on anything, good when only better, muted else.
func (m *Model) splitStyle() themes.Paint {
	var all [][]compare.Result
	for _, c := range m.split.res.Newer {
		all = append(all, c.Results)
	}
	return m.resultsStyle(all...)
}

// splitText is the split's verdict in words and its colour.
func (m *Model) splitText() (string, themes.Paint) {
	if !m.split.judged {
		return "splitting by " + m.splitWhat() + ": the first verdict comes within a second", m.theme.Muted
	}
	// Line's group names passed sanitize already; a tab (which sanitize
	// lets through) would still break the line's width.
	return cellText(m.split.res.Line()), m.splitStyle()
}

// splitWhat is what the split groups by, as its panel's title says it
// ("header X-Backend"), sanitised; "the backend" before the first
// comparison brings the spec.
func (m *Model) splitWhat() string {
	if m.split.res.By == "model" { // the model each request asked for (a mix)
		return "model"
	}
	kind, name, ok := strings.Cut(m.split.res.By, ":")
	if !ok {
		return "the backend"
	}
	return kind + " " + cellText(name)
}

// cellText is endpoint text made safe and one cell a character: sanitised,
// and tabs (sanitize keeps them; a header value may hold one) as spaces.
func cellText(s string) string { return strings.ReplaceAll(sanitize.Text(s), "\t", " ") }

// The groups panel's columns: the group's number and name, its requests,
// then per statistic a column of the group's figure and, for a newer
// group, the difference (the figure's part giving way on a narrow
// terminal), and the group's verdict last.
// Each column's first cell is a space, so a head never runs into the one
// before it ("TTFT p50" is 8 cells).
const (
	grpNumW    = 3
	grpNameMin = 12
	grpNameMax = 28
	grpReqW    = 9
	// grpValueW is a figure's; grpDeltaW a difference's beside it;
	// grpOnlyW a column of the baseline's figure and the newer groups'
	// differences, where the newer ones' figures gave way.
	grpValueW   = 9
	grpDeltaW   = 8
	grpOnlyW    = 9
	grpVerdictW = 14
)

// grpStat is one statistic of the groups panel.
type grpStat struct {
	stat compare.Stat
	// prio orders the newer groups' figures giving way, the highest
	// first; the differences and the baseline's figures never do.
	prio int
}

// grpStats are the panel's statistics, the split's defaults: the tails'
// figures kept longest, the error rate's (its difference in points says
// enough) given up first.
func grpStats() []grpStat {
	prio := map[string]int{"ttft_p99": 1, "e2el_p99": 2, "ttft_p50": 3, "tpot_p50": 4, "error_rate": 5}
	var out []grpStat
	for _, st := range compare.DefaultStats() {
		out = append(out, grpStat{st, prio[st.Name]})
	}
	return out
}

// grpLayout is which of the groups panel's columns fit w cells.
type grpLayout struct {
	// values says, per grpStats, whether a newer group shows its figure
	// beside its difference.
	values  []bool
	verdict bool
	nameW   int
}

// width is the panel's table's width.
func (l grpLayout) width() int {
	n := grpNumW + l.nameW + grpReqW
	for _, v := range l.values {
		if v {
			n += grpValueW + grpDeltaW
		} else {
			n += grpOnlyW
		}
	}
	if l.verdict {
		n += grpVerdictW
	}
	return n
}

// grpFit lays the groups panel out in w cells: every column where it
// fits; narrower, the verdict's column gives way, then the newer groups'
// figures by priority, so the differences stay whatever the width; the
// name takes what is left, up to grpNameMax.
func grpFit(w int) grpLayout {
	stats := grpStats()
	l := grpLayout{values: make([]bool, len(stats)), verdict: true, nameW: grpNameMin}
	for i := range l.values {
		l.values[i] = true
	}
	if l.width() > w {
		l.verdict = false
	}
	for l.width() > w {
		drop := -1
		for i, s := range stats {
			if l.values[i] && (drop < 0 || s.prio > stats[drop].prio) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		l.values[drop] = false
	}
	l.nameW = min(grpNameMax, max(grpNameMin, grpNameMin+w-l.width()))
	return l
}

// groupsRows is how many rows the groups panel has: the baseline and each
// newer group (OtherGroup's last), or one line saying what it waits for.
func (m *Model) groupsRows() int {
	if !m.split.judged || m.split.res.Baseline.Index == 0 {
		return 1
	}
	return 1 + len(m.split.res.Newer)
}

// groupsHeight is the lines the groups panel wants: its title, the
// columns' heads, its rows and a note.
func (m *Model) groupsHeight() int { return 3 + m.groupsRows() }

// groupsPanel is the split's groups, one row each: the baseline first,
// then each newer one in the order seen, "other groups" last; each with
// its requests and, for the default statistics, its own figure over the
// samples the comparison holds and, for a newer group, its difference
// from the baseline (over the seconds both answered, as the verdict has
// it) coloured by the verdict on that statistic.
func (m *Model) groupsPanel(w, h int) string {
	t, g := m.theme, &m.split.res
	extra := "by " + m.splitWhat()
	if m.split.judged && g.Baseline.Index > 0 {
		extra += " · Δ vs group 1, the baseline"
		if g.Named {
			extra += " (named)"
		}
	}
	lines := []string{m.title("Groups", extra, w)}
	switch {
	case !m.split.judged:
		return block(append(lines, t.Muted.Render("the first comparison comes within a second")), w, h)
	case g.Baseline.Index == 0:
		return block(append(lines, wrap(t.Muted.Render(cellText(g.Line())), w)...), w, h)
	}
	l := grpFit(w)
	stats := grpStats()
	head := padLeft("#", grpNumW-1) + " " + fit("group", l.nameW) + padLeft("requests", grpReqW)
	for i, s := range stats {
		label := s.stat.Label()
		if s.stat.ErrorRate {
			label = "errors"
		}
		if l.values[i] {
			head += padLeft(label, grpValueW) + padLeft("Δ", grpDeltaW)
		} else {
			head += padLeft(label, grpOnlyW)
		}
	}
	if l.verdict {
		head += "  verdict"
	}
	lines = append(lines, t.Muted.Render(head))
	lines = append(lines, m.groupRow(g.Baseline, nil, l))
	for i := range g.Newer {
		lines = append(lines, m.groupRow(g.Newer[i].Group, &g.Newer[i].Comparison, l))
	}
	if room := h - len(lines); room > 0 {
		var parts []part
		if g.Ungrouped > 0 {
			parts = append(parts, part{t.Warn.Render(fmt.Sprintf("%d requests without a group (%d failed), left out", g.Ungrouped, g.UngroupedFailed)), 0})
		}
		parts = append(parts, part{t.Muted.Render("figures since the last knob change or reset"), 2},
			part{t.Muted.Render("Δ over the seconds both groups answered"), 1})
		lines = append(lines, flowParts(parts, t.Muted.Render(" · "), w, room)...)
	}
	// The rows never give way to the note: a group off screen is one
	// missed.
	return block(lines, w, h)
}

// groupRow is one group's row: c is its comparison with the baseline
// (nil for the baseline's own row).
func (m *Model) groupRow(grp compare.Group, c *compare.Comparison, l grpLayout) string {
	t := m.theme
	num := ""
	if grp.Index > 0 {
		num = fmt.Sprint(grp.Index)
	}
	name := cellText(grp.Name)
	if grp.Index == 0 {
		name = "other groups"
	}
	style := t.Text
	if c == nil {
		style = t.Value
	}
	nameCell := style.Render(fit(name, l.nameW-1)) + " "
	if c == nil { // the baseline says so where its name leaves room
		for _, mark := range []string{" (baseline)", " (base)"} {
			if blockWidth(name)+len(mark) <= l.nameW-1 {
				nameCell = fit(style.Render(name)+t.Muted.Render(mark), l.nameW-1) + " "
				break
			}
		}
	}
	row := t.Muted.Render(padLeft(num, grpNumW-1)+" ") + nameCell + t.Text.Render(padLeft(fmt.Sprint(grp.Requests), grpReqW))
	for i, s := range grpStats() {
		value := grpValue(grp, s.stat)
		switch {
		case c == nil && l.values[i]:
			row += t.Value.Render(padLeft(value, grpValueW)) + strings.Repeat(" ", grpDeltaW)
		case c == nil:
			row += t.Value.Render(padLeft(value, grpOnlyW))
		default:
			if l.values[i] {
				row += t.Text.Render(padLeft(value, grpValueW))
			}
			r, ok := grpResult(c, s.stat)
			text := "—"
			if ok {
				text = r.DeltaText()
			}
			w := grpOnlyW
			if l.values[i] {
				w = grpDeltaW
			}
			row += m.deltaStyle(r, ok).Render(padLeft(text, w))
		}
	}
	if l.verdict && c != nil {
		word, st := m.groupVerdict(c)
		row += "  " + st.Render(fit(word, grpVerdictW-2))
	}
	return row
}

// grpValue is the group's own figure of st, formatted ("—" for none).
func grpValue(grp compare.Group, st compare.Stat) string {
	for _, f := range grp.Figures {
		if f.Stat.Name != st.Name {
			continue
		}
		switch {
		case f.N == 0:
			return "—"
		case st.ErrorRate:
			return pct(f.Value)
		}
		return Duration(time.Duration(f.Value * 1e6))
	}
	return "—"
}

// grpResult is the comparison's result for st.
func grpResult(c *compare.Comparison, st compare.Stat) (compare.Result, bool) {
	for _, r := range c.Results {
		if r.Stat.Name == st.Name {
			return r, true
		}
	}
	return compare.Result{}, false
}

// groupVerdict is a newer group's verdict in a word or two, the worst of
// its statistics', and its colour: what the verdict line says of it.
func (m *Model) groupVerdict(c *compare.Comparison) (string, themes.Paint) {
	var worse, better []string
	judged := false
	for _, r := range c.Results {
		switch r.Verdict {
		case compare.Worse:
			if w := verdictWord(r); !slices.Contains(worse, w) {
				worse = append(worse, w)
			}
		case compare.Better:
			if w := verdictWord(r); !slices.Contains(better, w) {
				better = append(better, w)
			}
		case compare.NoDifference:
			judged = true
		}
	}
	switch {
	case len(worse) > 0:
		return strings.Join(worse, ", "), m.theme.Bad
	case len(better) > 0:
		return strings.Join(better, ", "), m.theme.Good
	case judged:
		return "no difference", m.theme.Muted
	}
	return "too few yet", m.theme.Muted
}

// splitDashboard lays a split's dashboard out in h lines: the groups
// panel first, under the verdict it explains, then the one load's panels
// in the rest, as without a split. The groups' rows are what the view is
// for: the load's panels keep their least (the latency table and the
// small panels) and give up the phases and the server panel first.
func (m *Model) splitDashboard(w, h int) string {
	const loadMin = 12 // the latency panel's least and the small panels'
	gh := min(m.groupsHeight(), max(h-loadMin, 2+m.groupsRows()))
	gh = min(gh, h)
	if gh >= h {
		return m.groupsPanel(w, h)
	}
	return joinVertical(m.groupsPanel(w, gh), m.loadPanels(w, h-gh))
}
