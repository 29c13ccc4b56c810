package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/themes"
)

// A comparison's dashboard (`infertop --compare`): the same panels, each
// showing the baseline (the model's snapshot) and the canary (compareView's)
// side by side with the canary's difference, a verdict line under the
// header, and the charts drawing the canary's p99 beside the baseline's.

// compareView is the canary's side of a comparison's dashboard: its
// subscription, its newest snapshot and the newest live comparison.
type compareView struct {
	// on is true when the view is a comparison's.
	on  bool
	ch  <-chan load.Snapshot
	get func() (compare.Comparison, bool)
	// snap is the canary's newest snapshot; have is false before the first.
	snap load.Snapshot
	have bool
	// res is the newest comparison; judged is false before the first.
	res    compare.Comparison
	judged bool
	// stopped is true once the canary's subscription closed.
	stopped bool
}

func newCompareView(o Options) compareView {
	return compareView{on: o.Canary != nil || o.Compare != nil, ch: o.Canary, get: o.Compare}
}

// CanarySnapshotMsg delivers a new snapshot of the canary's engine in a
// comparison (Options.Canary's, or a test's).
type CanarySnapshotMsg load.Snapshot

// canaryDoneMsg says the canary's engine stopped and closed its
// subscription.
type canaryDoneMsg struct{}

// listen reads the canary's next snapshot; nil without a subscription.
func (c *compareView) listen() tea.Cmd {
	return listenOn(c.ch, func(s load.Snapshot) tea.Msg { return CanarySnapshotMsg(s) }, canaryDoneMsg{})
}

// refresh takes the newest live comparison. The pair computes one a
// second and keeps it behind an atomic pointer, so reading it with every
// snapshot costs nothing and shows each one within a tick.
func (c *compareView) refresh() {
	if c.get == nil {
		return
	}
	if r, ok := c.get(); ok {
		c.res, c.judged = r, true
	}
}

// updateCanary handles the canary's messages.
func (m Model) updateCanary(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case CanarySnapshotMsg:
		m.cmp.snap, m.cmp.have = load.Snapshot(msg), true
		m.cmp.refresh()
		m.render()
		return m, m.cmp.listen()
	case canaryDoneMsg:
		m.cmp.stopped = true
		m.render()
	}
	return m, nil
}

// verdictLine is the comparison's verdict in words (compare's Line), bad
// when the canary is worse on a statistic, good when only better, muted
// while nothing differs, wrapped over two lines at most; a split's
// likewise (a newer group for the canary). It is empty outside a
// comparison or a split.
func (m *Model) verdictLine(w int) string {
	t := m.theme
	var text string
	var style themes.Paint
	switch {
	case m.cmp.on:
		text, style = "comparing: the first verdict comes within a second", t.Muted
		if m.cmp.judged {
			text, style = m.cmp.res.Line(), m.verdictStyle()
		}
		if m.cmp.stopped {
			text, style = "the canary's engine stopped · "+text, t.Bad
		}
	case m.split.on:
		text, style = m.splitText()
	default:
		return ""
	}
	// Two lines at most, on every terminal: the verdict is what the view
	// is for, and a cut one loses its confidence or what it waits for.
	lines := wrapInto(style.Render(text), w, 2, style.Render("…"))
	for i, l := range lines {
		lines[i] = fit(l, w)
	}
	return strings.Join(lines, "\n")
}

// verdictStyle is the verdict line's colour, in Line's order: bad when the
// canary is worse on anything, good when it is only better, muted else.
func (m *Model) verdictStyle() themes.Paint {
	return m.resultsStyle(m.cmp.res.Results)
}

// resultsStyle is the colour of a verdict over results (one comparison's,
// or every group's): bad when any is worse, good when some are better and
// none worse, muted else.
func (m *Model) resultsStyle(results ...[]compare.Result) themes.Paint {
	better := false
	for _, rs := range results {
		for _, r := range rs {
			switch r.Verdict {
			case compare.Worse:
				return m.theme.Bad
			case compare.Better:
				better = true
			}
		}
	}
	if better {
		return m.theme.Good
	}
	return m.theme.Muted
}

// result is the comparison's judgement of met's q-quantile (q 0: the error
// rate); ok is false when the comparison does not judge it. The open
// loop's intended-time metrics are judged as their plain names: compare
// measures from the intended send time there.
func (m *Model) result(met load.Metric, q float64, errorRate bool) (compare.Result, bool) {
	switch met {
	case load.TTFTIntended:
		met = load.TTFT
	case load.E2EIntended:
		met = load.E2E
	}
	for _, r := range m.cmp.res.Results {
		if errorRate && r.Stat.ErrorRate || !errorRate && !r.Stat.ErrorRate && r.Stat.Metric == met && math.Abs(r.Stat.Q-q) < 1e-9 {
			return r, true
		}
	}
	return compare.Result{}, false
}

// deltaStyle colours a difference by the verdict on its statistic: bad
// when the canary is worse with confidence, good when better, plain when
// no difference is found or the statistic is not judged.
func (m *Model) deltaStyle(r compare.Result, ok bool) themes.Paint {
	switch {
	case ok && r.Verdict == compare.Worse:
		return m.theme.Bad
	case ok && r.Verdict == compare.Better:
		return m.theme.Good
	}
	return m.theme.Text
}

// relDelta is the canary's relative difference, as compare writes one
// (+38%, -4.5%), or "—" when a side has nothing.
func relDelta(base, canary float64) string {
	if base <= 0 || canary <= 0 {
		return "—"
	}
	d := canary/base - 1
	if math.Abs(d) < 0.1 {
		return fmt.Sprintf("%+.1f%%", d*100)
	}
	return fmt.Sprintf("%+.0f%%", d*100)
}

// ppDelta is the difference of two rates in percentage points (+0.50pp).
func ppDelta(base, canary float64) string { return fmt.Sprintf("%+.2fpp", (canary-base)*100) }

// cmpGroup is one percentile of the comparison's latency table: the
// baseline's and the canary's figures and the difference.
type cmpGroup struct {
	label string
	q     float64
	pick  func(load.Dist) time.Duration
	// prio orders the sides' columns giving way when the table must
	// narrow to leave the chart room, the highest first; the differences
	// never give way.
	prio int
}

// cmpGroups are the table's percentiles; the tail's sides are kept
// longest, the median's next.
func cmpGroups() []cmpGroup {
	return []cmpGroup{
		{"p50", 0.5, func(d load.Dist) time.Duration { return d.P50 }, 2},
		{"p95", 0.95, func(d load.Dist) time.Duration { return d.P95 }, 3},
		{"p99", 0.99, func(d load.Dist) time.Duration { return d.P99 }, 1},
	}
}

// The comparison's latency table: a label column, and per percentile two
// value columns (baseline, canary) and a difference's.
const (
	cmpLabelW = 6
	cmpValueW = 8
	cmpDeltaW = 7
	// cmpChartMin is the chart's least width beside the table: narrower,
	// the table gives up sides' columns until the chart has it.
	cmpChartMin = 30
	// sideW is a side's label in the small panels ("canary ").
	sideW = 7
)

// cmpTableWidth is the table's width with the sides of the groups keep
// marks.
func cmpTableWidth(keep []bool) int {
	n := cmpLabelW
	for _, k := range keep {
		n += cmpDeltaW
		if k {
			n += 2 * cmpValueW
		}
	}
	return n
}

// cmpKeep says which percentiles keep their sides' columns in w cells:
// all where the chart still has cmpChartMin beside them, else dropped
// whole by priority, the differences first to stay.
func cmpKeep(w int) []bool {
	gs := cmpGroups()
	keep := make([]bool, len(gs))
	for i := range keep {
		keep[i] = true
	}
	for w-cmpTableWidth(keep)-1 < cmpChartMin {
		drop := -1
		for i, g := range gs {
			if keep[i] && (drop < 0 || g.prio > gs[drop].prio) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		keep[drop] = false
	}
	return keep
}

// cmpMetrics are the table's rows: the service times in the closed loop;
// in the open loop TTFT and E2E from the intended send time, what the
// comparison judges there.
// With a reasoning model, TTFO (the answer's first token) follows TTFT;
// for embeddings only E2E means anything.
func cmpMetrics(s *load.Snapshot) (metrics []load.Metric, open bool) {
	open = s.Knobs.Mode == load.OpenLoop || s.Latency[load.Queue].Count > 0
	metrics = []load.Metric{load.TTFT, load.TPOT, load.ITL, load.E2E}
	if open {
		metrics = []load.Metric{load.TTFTIntended, load.TPOT, load.ITL, load.E2EIntended}
	}
	switch {
	case embeds(s):
		metrics = metrics[3:]
	case s.Run.ReasoningTokens > 0:
		metrics = slices.Insert(metrics, 1, load.TTFO)
	}
	return metrics, open
}

// cmpLatencyPanel is the comparison's latency table, the verdicts under it
// when there is room, beside the chart of both sides' p99 over time (two
// charts, E2E and TTFT, on a wide terminal).
func (m *Model) cmpLatencyPanel(w, h int) string {
	keep := cmpKeep(w)
	tw := min(cmpTableWidth(keep), w)
	table := m.cmpTable(keep, tw, h)
	if used := lipgloss.Height(table); h-used >= 3 {
		table += "\n" + m.judgedPanel(tw, h-used)
	} else {
		table = block(strings.Split(table, "\n"), tw, h)
	}
	rest := w - tw - 1
	if rest < 20 {
		return block(strings.Split(table, "\n"), w, h)
	}
	met := chartMetrics()[m.chartMetric]
	if rest < twoChartsWidth {
		return joinHorizontal(table, " ", m.overTime(m.cmpLatencySpec(met, rest), rest, h))
	}
	other := chartMetrics()[(m.chartMetric+1)%len(chartMetrics())]
	first := (rest - 1) / 2
	return joinHorizontal(table, " ",
		m.overTime(m.cmpLatencySpec(met, first), first, h), " ", m.overTime(m.cmpLatencySpec(other, rest-1-first), rest-1-first, h))
}

// cmpTable is the window's percentiles of both sides, one row per metric,
// and the canary's difference coloured by the comparison's verdict on it
// where it judges one. The difference is of the figures shown (the
// window's); the verdict is the pair's, over its samples of both sides.
func (m *Model) cmpTable(keep []bool, w, h int) string {
	t, b, c := m.theme, &m.snap, &m.cmp.snap
	extra := window(b.Window) + " window"
	if u := "canary " + sanitize.Text(c.Target.URL) + " · " + extra; m.cmp.have && blockWidth(u)+6 <= w {
		extra = u // the URL whole or not at all: a cut port is a wrong one
	}
	lines := []string{m.title("Latency", extra, w)}
	groups, cols := strings.Repeat(" ", cmpLabelW), strings.Repeat(" ", cmpLabelW)
	for i, g := range cmpGroups() {
		if keep[i] {
			gw := 2*cmpValueW + cmpDeltaW
			left := (gw - len(g.label) + 1) / 2
			groups += strings.Repeat(" ", left) + g.label + strings.Repeat(" ", gw-left-len(g.label))
			cols += padLeft("base", cmpValueW) + padLeft("canary", cmpValueW)
		} else {
			groups += padLeft(g.label, cmpDeltaW)
		}
		cols += padLeft("Δ", cmpDeltaW)
	}
	lines = append(lines, t.Muted.Render(groups), t.Muted.Render(cols))
	metrics, open := cmpMetrics(b)
	for _, met := range metrics {
		bd, cd := b.Latency[met], c.Latency[met]
		row := t.Text.Render(fit(met.String(), cmpLabelW))
		for i, g := range cmpGroups() {
			bv, cv := g.pick(bd), g.pick(cd)
			if bd.Count == 0 {
				bv = 0
			}
			if cd.Count == 0 || !m.cmp.have {
				cv = 0
			}
			if keep[i] {
				row += t.Text.Render(padLeft(Duration(bv), cmpValueW)) + t.Value.Render(padLeft(Duration(cv), cmpValueW))
			}
			r, ok := m.result(met, g.q, false)
			row += m.deltaStyle(r, ok).Render(padLeft(relDelta(float64(bv), float64(cv)), cmpDeltaW))
		}
		lines = append(lines, row)
	}
	if room := h - len(lines); room > 0 {
		var parts []part
		if open {
			parts = append(parts, part{t.Muted.Render("* from the intended send time"), 0})
		}
		parts = append(parts, part{t.Muted.Render(count(b.Latency[load.E2E].Count, 7) + " | " + count(c.Latency[load.E2E].Count, 7) + " requests"), 1},
			part{t.Muted.Render("Δ: the canary's"), 2})
		lines = append(lines, flowParts(parts, t.Muted.Render(" · "), w, room)...)
	}
	return strings.Join(lines[:min(len(lines), h)], "\n")
}

// judgedPanel is the comparison's statistics one by one: both sides, the
// difference, its interval and the verdict, where the table's window
// figures give way to the pair's samples and their confidence.
func (m *Model) judgedPanel(w, h int) string {
	t, c := m.theme, &m.cmp.res
	if !m.cmp.judged {
		return block([]string{m.title("Verdicts", "", w), t.Muted.Render("the first comes within a second")}, w, h)
	}
	lines := []string{m.title("Verdicts", fmt.Sprintf("%.3g%% confidence each", c.Confidence*100), w)}
	sides := w >= 68 // the sides are in the table above: the interval stays before them
	val := func(r compare.Result, v float64, n int) string {
		switch {
		case n == 0:
			return "—"
		case r.Stat.ErrorRate:
			return pct(v)
		}
		return Duration(time.Duration(v * 1e6))
	}
	for _, r := range c.Results {
		row := t.Text.Render(fit(r.Stat.Label(), 11))
		if sides {
			row += t.Text.Render(padLeft(val(r, r.Baseline, r.NBaseline), 8)) + t.Value.Render(padLeft(val(r, r.Canary, r.NCanary), 8))
		}
		style := m.deltaStyle(r, true)
		row += style.Render(padLeft(r.DeltaText(), 8)) + " " + t.Muted.Render(fit(r.Interval(), 15)) + " " + style.Render(verdictWord(r))
		lines = append(lines, row)
	}
	return block(lines, w, h)
}

// verdictWord is a statistic's verdict in a word or two.
func verdictWord(r compare.Result) string {
	switch {
	case r.Verdict == compare.Worse && r.Stat.Invalid:
		return "more invalid"
	case r.Verdict == compare.Better && r.Stat.Invalid:
		return "fewer invalid"
	case r.Verdict == compare.Worse && r.Stat.ErrorRate:
		return "more errors"
	case r.Verdict == compare.Worse:
		return "slower"
	case r.Verdict == compare.Better && r.Stat.ErrorRate:
		return "fewer errors"
	case r.Verdict == compare.Better:
		return "faster"
	case r.Verdict == compare.NoDifference:
		return "no difference"
	}
	return fmt.Sprintf("too few (%d | %d)", r.NBaseline, r.NCanary)
}

// cmpLatencySpec is the chart of both sides' p99 of met over time, in ms,
// for w cells: its title's words shorter where the long ones would be cut.
func (m *Model) cmpLatencySpec(met load.Metric, w int) chartSpec {
	t := m.theme
	pick := func(p load.Point) float64 { return float64(p.TTFTP99) / 1e6 }
	if met == load.E2E {
		pick = func(p load.Point) float64 { return float64(p.E2EP99) / 1e6 }
	}
	name, base := met.String()+" p99 over time", "baseline"
	if w < 50 {
		name, base = met.String()+" p99", "base"
	}
	return chartSpec{id: "canary " + met.String(), name: name,
		extra: t.P50.Render(base) + " " + t.P99.Render("canary"), hint: t.Muted.Render(" · c: metric"),
		yLabel: func(v float64) string { return Duration(time.Duration(v * 1e6)) },
		lines: []seriesLine{
			{name: "a", style: t.P50, pick: pick, gaps: true},
			{name: "b", style: t.P99, pick: pick, gaps: true, from: &m.cmp.snap},
		}}
}

// cmpSmallPanels is the row of three, each side by side: throughput,
// errors and in flight. TTFT's panel gives way: the table has its figures
// and the chart its course.
func (m *Model) cmpSmallPanels(w, h int) string {
	// The throughput panel takes the cells its title needs to name both
	// units whole (29), from the others' share at 80 columns.
	tw := max((w-2)/3, min(29, (w-2)/3+3))
	ew := (w - 2 - tw) / 2
	return joinHorizontal(
		m.cmpThroughputPanel(tw, h), " ", m.cmpErrorsPanel(ew, h), " ", m.cmpInflightPanel(w-2-tw-ew, h))
}

// sideLabel is a row's label in the small panels: base, canary or Δ.
func (m *Model) sideLabel(label string) string { return m.theme.Muted.Render(fit(label, sideW)) }

// bothSparks draws both sides' sparklines in h rows, the baseline's over the
// canary's, each marked with its side's initial.
func (m *Model) bothSparks(name string, w, h int, style themes.Paint, value func(load.Point) float64) []string {
	if h <= 0 || w <= 2 {
		return nil
	}
	var lines []string
	for i, side := range []struct {
		mark string
		pts  []load.Point
		rows int
	}{{"b", m.snap.Series, (h + 1) / 2}, {"c", m.cmp.snap.Series, h / 2}} {
		for j, l := range m.sparkOf(fmt.Sprintf("%s %d", name, i), side.pts, w-2, side.rows, style, value) {
			mark := "  "
			if j == 0 {
				mark = side.mark + " "
			}
			lines = append(lines, m.theme.Muted.Render(mark)+l)
		}
	}
	return lines
}

// cmpThroughputPanel is both sides' output tokens and requests per second
// over the window, and the canary's differences.
func (m *Model) cmpThroughputPanel(w, h int) string {
	t, b, c := m.theme, &m.snap, &m.cmp.snap
	est := func(s *load.Snapshot) string {
		if s.OutputEstimated {
			return "~"
		}
		return ""
	}
	lines := []string{m.title("Throughput", "tok/s · req/s", w)}
	for _, side := range []struct {
		label string
		s     *load.Snapshot
	}{{"base", b}, {"canary", c}} {
		lines = append(lines, m.sideLabel(side.label)+t.Value.Render(padLeft(est(side.s)+num(side.s.OutTokPerSec), 6))+
			t.Text.Render(padLeft(num(side.s.ReqPerSec), 7)))
	}
	lines = append(lines, m.sideLabel("Δ")+t.Text.Render(padLeft(relDelta(b.OutTokPerSec, c.OutTokPerSec), 6))+
		t.Text.Render(padLeft(relDelta(b.ReqPerSec, c.ReqPerSec), 7)))
	lines = append(lines, m.bothSparks("cmp tokens", w, h-len(lines), t.Spark, func(p load.Point) float64 { return float64(p.OutTokens) })...)
	return block(lines, w, h)
}

// cmpErrorsPanel is both sides' error rates over the window, and the
// canary's difference in percentage points coloured by the verdict on
// the error rate.
func (m *Model) cmpErrorsPanel(w, h int) string {
	t, b, c := m.theme, &m.snap, &m.cmp.snap
	lines := []string{m.title("Errors", window(b.Window)+" window", w)}
	for _, side := range []struct {
		label string
		s     *load.Snapshot
	}{{"base", b}, {"canary", c}} {
		lines = append(lines, m.sideLabel(side.label)+m.errorRateStyle(side.s.ErrorRate).Render(padLeft(pct(side.s.ErrorRate), 6))+
			t.Muted.Render(fmt.Sprintf(" · %d failed", side.s.Failed)))
	}
	r, ok := m.result(0, 0, true)
	lines = append(lines, m.sideLabel("Δ")+m.deltaStyle(r, ok).Render(ppDelta(b.ErrorRate, c.ErrorRate)))
	lines = append(lines, m.bothSparks("cmp errors", w, h-len(lines), t.Bad, func(p load.Point) float64 { return float64(p.Failed) })...)
	return block(lines, w, h)
}

// cmpInflightPanel is both sides' requests in flight against their own
// knobs (each engine reports its own: a key that moved one and not the
// other would show here), and the oldest of each.
func (m *Model) cmpInflightPanel(w, h int) string {
	t, b, c := m.theme, &m.snap, &m.cmp.snap
	lines := []string{m.title("In flight", "", w)}
	for _, side := range []struct {
		label string
		s     *load.Snapshot
	}{{"base", b}, {"canary", c}} {
		s := side.s
		text := t.Value.Render(fmt.Sprint(s.InFlight)) + t.Muted.Render(fmt.Sprintf(" of %d", s.Knobs.Concurrency))
		if s.Knobs.Mode == load.OpenLoop {
			backlog := t.Muted.Render(fmt.Sprintf(" · backlog %d", s.Backlog))
			if s.Backlog > 0 {
				backlog = t.Warn.Render(fmt.Sprintf(" · backlog %d", s.Backlog))
			}
			text = t.Value.Render(fmt.Sprint(s.InFlight)) + backlog
		}
		lines = append(lines, m.sideLabel(side.label)+text)
	}
	oldest := func(s *load.Snapshot) string {
		switch {
		case s.OldestInFlight <= 0:
			return t.Muted.Render("—")
		case s.OldestInFlight > oldestLimit(s):
			return t.Warn.Render(Duration(s.OldestInFlight) + " hung?")
		}
		return t.Value.Render(Duration(s.OldestInFlight))
	}
	lines = append(lines, m.sideLabel("oldest")+oldest(b)+t.Muted.Render(" | ")+oldest(c))
	lines = append(lines, m.bothSparks("cmp inflight", w, h-len(lines), t.Spark, func(p load.Point) float64 { return float64(p.InFlight) })...)
	return block(lines, w, h)
}

// compareDashboard lays a comparison's panels out in h lines: the latency
// table of both sides beside the chart, on a wide terminal with rows to
// spare both sides' throughput and failures over time, the small panels,
// then the phases (the knobs are the same on both, so the baseline's
// table stands for both). The server panel is left out: its figures are
// the baseline's alone.
func (m *Model) compareDashboard(w, h int) string {
	smallH := 6
	switch {
	case h >= 60:
		smallH = 8
	case h >= 30:
		smallH = 7
	}
	smallH = min(smallH, h)
	phaseNeed := 2 + max(m.visiblePhases(), 1)
	rest := h - smallH
	// The title, two heads, four rows and the note: the table whole
	// before the phases have a row.
	const tableH = 8
	latH := min(max(rest-phaseNeed, tableH), max(20, h*40/100), rest)
	rest -= latH
	tputH := 0
	if w >= 120 && rest-phaseNeed >= 8 {
		tputH = min(rest-phaseNeed, 20)
		rest -= tputH
	}
	var parts []string
	if latH > 0 {
		parts = append(parts, m.cmpLatencyPanel(w, latH))
	}
	if tputH > 0 {
		parts = append(parts, m.cmpThroughputRow(w, tputH))
	}
	parts = append(parts, m.cmpSmallPanels(w, smallH))
	if rest > 0 {
		parts = append(parts, m.phasesPanel(w, rest))
	}
	return joinVertical(parts...)
}

// cmpThroughputRow is both sides' output tokens and failures per second
// over time, side by side.
func (m *Model) cmpThroughputRow(w, h int) string {
	t := m.theme
	both := func(id, name string, pick func(load.Point) float64) chartSpec {
		return chartSpec{id: id, name: name, extra: t.P50.Render("baseline") + " " + t.P99.Render("canary"), yLabel: num,
			lines: []seriesLine{
				{name: "a", style: t.P50, pick: pick},
				{name: "b", style: t.P99, pick: pick, from: &m.cmp.snap},
			}}
	}
	first := (w - 1) / 2
	return joinHorizontal(
		m.overTime(both("canary tokens", "Throughput over time · tok/s out", func(p load.Point) float64 { return float64(p.OutTokens) }), first, h), " ",
		m.overTime(both("canary failed", "Failed over time · per s", func(p load.Point) float64 { return float64(p.Failed) }), w-1-first, h))
}
