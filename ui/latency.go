package ui

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/linechart/timeserieslinechart"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/themes"
)

// tableWidth is the latency table's width; the charts take the rest.
const tableWidth = 48

// twoChartsWidth is the room beside the table from which a second chart
// over time (the other latency metric) is drawn: two charts of 50 cells
// still hold a minute at a label every 10 s.
const twoChartsWidth = 100

// latencyPanel is the percentile table, with the window's distribution
// under it when there is room, beside the chart over time (two charts,
// E2E and TTFT, on a wide terminal).
func (m *Model) latencyPanel(w, h int) string {
	met := m.starred(chartMetrics()[m.chartMetric])
	table := m.latencyTable(tableWidth, h)
	if used := lipgloss.Height(table); h-used >= distHeight {
		table += "\n" + m.distPanel(met, tableWidth, h-used)
	} else {
		table = block(strings.Split(table, "\n"), tableWidth, h)
	}
	rest := w - tableWidth - 1
	if m.capacityShown() { // the search's curve, in the charts' place
		return joinHorizontal(table, " ", m.capacityPanel(rest, h))
	}
	if rest < twoChartsWidth {
		return joinHorizontal(table, " ", m.overTime(m.latencySpec(met), rest, h))
	}
	other := m.starred(chartMetrics()[(m.chartMetric+1)%len(chartMetrics())])
	first := (rest - 1) / 2
	return joinHorizontal(table, " ",
		m.overTime(m.latencySpec(met), first, h), " ", m.overTime(m.latencySpec(other), rest-1-first, h))
}

// latencyTable is the window's percentiles, one row per metric, and a note
// on what they count: as many lines as it needs, at most h.
func (m *Model) latencyTable(w, h int) string {
	t, s := m.theme, &m.snap
	lines := []string{m.title("Latency", window(s.Window)+" window", w)}
	head := padLeft("", 5)
	for _, c := range []string{"p50", "p90", "p95", "p99", "max"} {
		head += padLeft(c, 8)
	}
	lines = append(lines, t.Muted.Render(head))
	metrics := []load.Metric{load.TTFT, load.TPOT, load.ITL, load.E2E, load.TTFB}
	open := s.Knobs.Mode == load.OpenLoop || s.Latency[load.Queue].Count > 0
	if open {
		// From the intended send time first: what a user of the endpoint
		// would have waited; then the service times and the queue.
		metrics = []load.Metric{load.TTFTIntended, load.TPOT, load.ITL, load.E2EIntended, load.Queue, load.TTFT, load.E2E}
	}
	switch {
	case embeds(s): // nothing streams: no TTFT, TPOT or ITL to show
		metrics = []load.Metric{load.E2E, load.TTFB}
		if open {
			metrics = []load.Metric{load.E2EIntended, load.Queue, load.E2E, load.TTFB}
		}
	case s.Run.ReasoningTokens > 0: // a reasoning model: the answer's first token beside the first
		metrics = slices.Insert(metrics, 1, load.TTFO)
	}
	if room := h - 3; len(metrics) > room { // title, head and the note line
		metrics = metrics[:max(room, 4)]
	}
	for _, met := range metrics {
		d := s.Latency[met]
		row := t.Text.Render(fit(met.String(), 5))
		vals := []time.Duration{d.P50, d.P90, d.P95, d.P99, d.Max}
		styles := []themes.Paint{t.P50, t.Text, t.P95, t.P99, t.Text}
		for i, v := range vals {
			if d.Count == 0 {
				v = 0
			}
			style := styles[i]
			if st, ok := m.sloStyle(met, []string{"p50", "p90", "p95", "p99", "max"}[i]); ok {
				style = st.Underline(true)
			}
			row += style.Render(padLeft(Duration(v), 8))
		}
		lines = append(lines, row)
	}
	if room := h - len(lines); room > 0 {
		// Counts are whole numbers: "7 requests", never num's "7.0".
		var parts []part
		if open {
			parts = append(parts, part{t.Muted.Render("* from the intended send time"), 0})
		}
		parts = append(parts, part{t.Muted.Render(count(s.Latency[load.E2E].Count, 7) + " requests"), 0},
			part{t.Muted.Render(count(s.Latency[load.ITL].Count, 7) + " token gaps"), 2})
		if s.OutputEstimated {
			parts = append(parts, part{t.Warn.Render("tokens estimated"), 1})
		}
		lines = append(lines, flowParts(parts, t.Muted.Render(" · "), w, room)...)
	}
	return strings.Join(lines[:min(len(lines), h)], "\n")
}

// distHeight is the distribution's height: its title and seven rows.
const distHeight = 8

// distPanel is the window's distribution of one metric as a percentile
// ladder: each quantile's value and a bar to the scale of the largest, so
// how far the tail sits from the median reads at a glance.
func (m *Model) distPanel(met load.Metric, w, h int) string {
	t, s := m.theme, &m.snap
	d := s.Latency[met]
	lines := []string{m.title(met.String()+" distribution", window(s.Window)+" window", w)}
	if d.Count == 0 {
		return block(append(lines, t.Muted.Render("nothing measured in the window")), w, h)
	}
	rows := []struct {
		label string
		v     time.Duration
		style themes.Paint
	}{
		{"p50", d.P50, t.P50}, {"p90", d.P90, t.Text}, {"p95", d.P95, t.P95}, {"p99", d.P99, t.P99},
		{"p99.9", d.P999, t.P99}, {"max", d.Max, t.Text}, {"mean", d.Mean, t.Muted},
	}
	const labelW, valueW = 6, 8
	barW := max(w-labelW-valueW-1, 1)
	for _, r := range rows {
		lines = append(lines, t.Muted.Render(fit(r.label, labelW))+r.style.Render(padLeft(Duration(r.v), valueW))+" "+
			r.style.Render(bar(float64(r.v)/float64(max(d.Max, 1)), barW)))
	}
	return block(lines, w, h)
}

// bar is a horizontal bar of f (0 to 1) of w cells, to an eighth of a cell.
func bar(f float64, w int) string {
	eighths := int(math.Round(min(max(f, 0), 1) * float64(w*8)))
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[r-1])
	}
	return s
}

// chartSpec is one chart over time: its lines, title and Y labels.
type chartSpec struct {
	// id names the chart's cached drawing.
	id    string
	name  string // the title's name, extra its legend
	extra string
	// hint follows the legend where the title has room for it whole.
	hint  string
	lines []seriesLine
	// yLabel formats a Y value (a latency's milliseconds, a rate).
	yLabel func(float64) string
}

// seriesLine is one line of a chart: a value per second.
type seriesLine struct {
	name  string
	style themes.Paint
	pick  func(load.Point) float64
	// gaps: a zero is a second in which nothing was measured (a latency
	// with no request finished), drawn as no point rather than a drop to 0.
	gaps bool
	// from is the snapshot whose series the line draws: nil for the
	// model's, the canary's in a comparison.
	from *load.Snapshot
}

// points is the series l is drawn from.
func (l seriesLine) points(s *load.Snapshot) []load.Point {
	if l.from != nil {
		return l.from.Series
	}
	return s.Series
}

// starred is what the dashboard shows of TTFT or E2E: in the open loop
// TTFT* or E2E*, from the intended send time, so that the wait of an
// arrival for a free slot shows (the objectives judge them too); met
// itself otherwise.
func (m *Model) starred(met load.Metric) load.Metric {
	if m.snap.Knobs.Mode != load.OpenLoop {
		return met
	}
	switch met {
	case load.TTFT:
		return load.TTFTIntended
	case load.E2E:
		return load.E2EIntended
	}
	return met
}

// latencySpec is the chart of p50/p95/p99 (p50/p99 for TTFT) of met, in
// ms: TTFT, E2E, or their starred forms from the intended send time.
func (m *Model) latencySpec(met load.Metric) chartSpec {
	t := m.theme
	ms := func(f func(load.Point) time.Duration) func(load.Point) float64 {
		return func(p load.Point) float64 { return float64(f(p)) / 1e6 }
	}
	spec := chartSpec{id: met.String(), name: met.String() + " over time",
		yLabel: func(v float64) string { return Duration(time.Duration(v * 1e6)) }}
	// Each line's percentile of each second: p50, p95 (E2E only), p99.
	type pick = func(load.Point) time.Duration
	var p50, p95, p99 pick
	switch met {
	case load.E2E:
		p50, p95, p99 = func(p load.Point) time.Duration { return p.E2EP50 }, func(p load.Point) time.Duration { return p.E2EP95 },
			func(p load.Point) time.Duration { return p.E2EP99 }
	case load.E2EIntended:
		p50, p95, p99 = func(p load.Point) time.Duration { return p.E2EIntendedP50 }, func(p load.Point) time.Duration { return p.E2EIntendedP95 },
			func(p load.Point) time.Duration { return p.E2EIntendedP99 }
	case load.TTFTIntended:
		p50, p99 = func(p load.Point) time.Duration { return p.TTFTIntendedP50 }, func(p load.Point) time.Duration { return p.TTFTIntendedP99 }
	default:
		p50, p99 = func(p load.Point) time.Duration { return p.TTFTP50 }, func(p load.Point) time.Duration { return p.TTFTP99 }
	}
	spec.extra = t.P50.Render("p50") + " "
	spec.lines = []seriesLine{{"a50", t.P50, ms(p50), true, nil}}
	if p95 != nil {
		spec.extra += t.P95.Render("p95") + " "
		spec.lines = append(spec.lines, seriesLine{"b95", t.P95, ms(p95), true, nil})
	}
	spec.extra += t.P99.Render("p99")
	spec.lines = append(spec.lines, seriesLine{"c99", t.P99, ms(p99), true, nil})
	spec.hint = t.Muted.Render(" · c: metric")
	if met == load.TTFTIntended || met == load.E2EIntended {
		spec.hint = t.Muted.Render(" · from the intended send · c: metric")
	}
	return spec
}

// throughputSpecs are the charts of the rates over time: output tokens,
// and requests (in flight, finished and failed each second), read beside
// the latency to see where the load stopped paying.
func (m *Model) throughputSpecs() []chartSpec {
	t := m.theme
	return []chartSpec{
		{id: "tokens", name: "Throughput over time", extra: t.P50.Render("tok/s out"), yLabel: num,
			lines: []seriesLine{{"a", t.P50, func(p load.Point) float64 { return float64(p.OutTokens) }, false, nil}}},
		{id: "requests", name: "Requests over time",
			extra: t.P50.Render("in flight") + " " + t.P95.Render("done/s") + " " + t.P99.Render("failed/s"), yLabel: num,
			lines: []seriesLine{
				{"a", t.P50, func(p load.Point) float64 { return float64(p.InFlight) }, false, nil},
				{"b", t.P95, func(p load.Point) float64 { return float64(p.Completed) }, false, nil},
				{"c", t.P99, func(p load.Point) float64 { return float64(p.Failed) }, false, nil},
			}},
	}
}

// throughputRow is the throughput charts side by side.
func (m *Model) throughputRow(w, h int) string {
	specs := m.throughputSpecs()
	first := (w - 1) / 2
	return joinHorizontal(m.overTime(specs[0], first, h), " ", m.overTime(specs[1], w-1-first, h))
}

// overTime draws a chart of the last minute (or window), one point per
// second, with a marker column where a phase began; the drawing is cached
// by what it is drawn from.
func (m *Model) overTime(spec chartSpec, w, h int) string {
	s := &m.snap
	title := m.title(spec.name, spec.extra+spec.hint, w)
	if blockWidth(spec.name+spec.extra+spec.hint)+6 > w {
		title = m.title(spec.name, spec.extra, w)
	}
	ch := h - 1
	if w < 20 || ch < 3 {
		return block([]string{title}, w, h)
	}
	span := max(s.Window, time.Minute)
	end := max(s.Elapsed.Truncate(time.Second), span)
	start := end - span
	top := 0.0
	key := chartKey{w: w, h: h, start: start, end: end, title: title}
	for _, l := range spec.lines {
		for _, p := range l.points(s) {
			if time.Duration(p.Sec)*time.Second < start {
				continue
			}
			v := l.pick(p)
			top = max(top, v)
			key.mix(uint64(p.Sec))
			key.mix(math.Float64bits(v))
		}
	}
	for _, ph := range s.Phases {
		key.mix(uint64(ph.Start))
	}
	if c := m.charts[spec.id]; c != nil && c.key == key {
		return c.view
	}
	view := title + "\n" + m.drawChart(spec, w, ch, top, start, end)
	m.charts[spec.id] = &chartDrawing{key: key, view: view}
	return view
}

// chartKey is everything a chart is drawn from; it is drawn again only
// when that changes (once a second, as the series moves on, or on a key),
// not on every frame.
type chartKey struct {
	w, h       int
	start, end time.Duration
	title      string
	sum        uint64 // FNV-1a of the points and phase starts drawn
}

func (k *chartKey) mix(v uint64) {
	if k.sum == 0 {
		k.sum = 14695981039346656037
	}
	for range 8 {
		k.sum = (k.sum ^ (v & 0xff)) * 1099511628211
		v >>= 8
	}
}

type chartDrawing struct {
	key  chartKey
	view string
}

func (m *Model) drawChart(spec chartSpec, w, ch int, top float64, start, end time.Duration) string {
	t, s := m.theme, &m.snap
	span := end - start
	ts := func(d time.Duration) time.Time { return time.Unix(int64(d/time.Second), 0) }
	yMax := niceCeil(max(top, 1e-3) * 1.1)
	c := timeserieslinechart.New(w, ch,
		timeserieslinechart.WithTimeRange(ts(start), ts(end)),
		timeserieslinechart.WithYRange(0, yMax),
		timeserieslinechart.WithYLabelFormatter(func(_ int, v float64) string {
			if v <= 0 {
				return "0"
			}
			return spec.yLabel(v)
		}),
		timeserieslinechart.WithAxesStyles(t.Border.Style, t.Muted.Style),
		// The X labels are asked for at every column and given only where
		// a round step falls (timeLabels), not every n columns at whatever
		// second that lands on.
		timeserieslinechart.WithXYSteps(1, 2),
	)
	c.SetViewTimeAndYRange(ts(start), ts(end), 0, yMax)
	labels := timeLabels(start, span, c.GraphWidth())
	c.XLabelFormatter = func(i int, _ float64) string {
		if i < 0 || i >= len(labels) {
			return ""
		}
		return labels[i]
	}
	for _, l := range spec.lines {
		c.SetDataSetStyle(l.name, l.style.Style)
	}
	for _, l := range spec.lines {
		for _, p := range l.points(s) {
			if time.Duration(p.Sec)*time.Second < start {
				continue
			}
			if v := l.pick(p); v > 0 || !l.gaps {
				c.PushDataSet(l.name, timeserieslinechart.TimePoint{Time: ts(time.Duration(p.Sec) * time.Second), Value: v})
			}
		}
	}
	c.DrawBrailleAll()
	// Knob changes: a dotted column where each phase after the first began.
	for i, ph := range s.Phases {
		if i == 0 || ph.Start < start {
			continue
		}
		x := c.Origin().X + 1 + column(ph.Start-start, span, c.GraphWidth())
		for y := 0; y < c.Origin().Y; y++ {
			p := canvas.Point{X: x, Y: y}
			if cell := c.Canvas.Cell(p); cell.Rune == 0 || cell.Rune == ' ' {
				c.Canvas.SetCell(p, canvas.NewCellWithStyle('┊', t.Marker.Style))
			}
		}
	}
	return block(strings.Split(m.cells.view(&c.Canvas), "\n"), w, ch)
}

// column is the graph column of the time d into a span drawn over gw
// columns, as ntcharts scales a point (over gw-1).
func column(d, span time.Duration, gw int) int {
	return int(math.Round(d.Seconds() / span.Seconds() * float64(gw-1)))
}

// labelSteps are the time axis' steps, in seconds: round on a clock.
func labelSteps() []int64 {
	return []int64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600}
}

// labelStep is the smallest round step (1, 2, 5, 10, 15, 30 s, 1, 2, 5,
// 10, 15, 30 min, 1 h…) at which labels of labelW cells over a span drawn
// in gw columns keep two blank cells between them.
func labelStep(span time.Duration, gw, labelW int) int64 {
	steps := labelSteps()
	perSec := float64(gw-1) / span.Seconds()
	for _, st := range steps {
		if float64(st)*perSec >= float64(labelW+2) {
			return st
		}
	}
	return steps[len(steps)-1]
}

// timeLabels is the time axis: for each of gw columns, the clock label of
// the multiple of the step that falls there, or "" (no label). ntcharts
// counts a label's column from the Y axis, the data's from the column
// after it: the label is one column on, so that it starts above its time.
func timeLabels(start, span time.Duration, gw int) []string {
	labels := make([]string, max(gw+1, 1))
	if gw < 2 || span <= 0 {
		return labels
	}
	step := time.Duration(labelStep(span, gw, len(clock(start+span)))) * time.Second
	for v := (start + step - 1) / step * step; v <= start+span; v += step {
		if i := column(v-start, span, gw) + 1; i >= 0 && i < len(labels) {
			labels[i] = clock(v)
		}
	}
	return labels
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= v {
			return f * p
		}
	}
	return 10 * p
}
