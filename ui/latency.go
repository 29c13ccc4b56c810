package ui

import (
	"math"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/linechart/timeserieslinechart"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/load"
)

// tableWidth is the latency table's width; the chart takes the rest.
const tableWidth = 48

// latencyPanel is the percentile table beside the chart over time.
func (m *Model) latencyPanel(w, h int) string {
	left := m.latencyTable(tableWidth, h)
	right := m.latencyChart(w-tableWidth-1, h)
	return lipgloss.JoinHorizontal(lipgloss.Top, left, " ", right)
}

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
	if room := h - 3; len(metrics) > room { // title, head and the note line
		metrics = metrics[:max(room, 4)]
	}
	for _, met := range metrics {
		d := s.Latency[met]
		row := t.Text.Render(fit(met.String(), 5))
		vals := []time.Duration{d.P50, d.P90, d.P95, d.P99, d.Max}
		styles := []lipgloss.Style{t.P50, t.Text, t.P95, t.P99, t.Text}
		for i, v := range vals {
			if d.Count == 0 {
				v = 0
			}
			style := styles[i]
			if st, ok := m.sloStyle(strings.ToLower(met.String()), []string{"p50", "p90", "p95", "p99", "max"}[i]); ok {
				style = st.Underline(true)
			}
			row += style.Render(padLeft(dur(v), 8))
		}
		lines = append(lines, row)
	}
	if h > len(lines) {
		n := s.Latency[load.E2E].Count
		note := t.Muted.Render(strings.TrimSpace(num(float64(n)) + " requests, " +
			num(float64(s.Latency[load.ITL].Count)) + " token gaps"))
		if s.OutputEstimated {
			note += t.Warn.Render("  tokens estimated")
		}
		if open {
			note = t.Muted.Render("* from the intended send time · ") + note
		}
		lines = append(lines, note)
	}
	return block(lines, w, h)
}

// latencyChart draws p50/p95/p99 of the chosen metric, one point per
// second, with a marker column where a phase began.
func (m *Model) latencyChart(w, h int) string {
	t, s := m.theme, &m.snap
	met := chartMetrics()[m.chartMetric]
	legend := t.P50.Render("p50") + " " + t.P95.Render("p95") + " " + t.P99.Render("p99")
	if met == load.TTFT {
		legend = t.P50.Render("p50") + " " + t.P99.Render("p99")
	}
	title := m.title(met.String()+" over time", legend+t.Muted.Render(" · c: metric"), w)
	ch := h - 1
	if w < 20 || ch < 3 {
		return block([]string{title}, w, h)
	}
	span := max(s.Window, time.Minute)
	end := max(s.Elapsed.Truncate(time.Second), span)
	start := end - span
	var sets []latencySeries
	if met == load.E2E {
		sets = []latencySeries{
			{"a50", t.P50, func(p load.Point) time.Duration { return p.E2EP50 }},
			{"b95", t.P95, func(p load.Point) time.Duration { return p.E2EP95 }},
			{"c99", t.P99, func(p load.Point) time.Duration { return p.E2EP99 }},
		}
	} else {
		sets = []latencySeries{
			{"a50", t.P50, func(p load.Point) time.Duration { return p.TTFTP50 }},
			{"c99", t.P99, func(p load.Point) time.Duration { return p.TTFTP99 }},
		}
	}
	var top time.Duration
	key := chartKey{w: w, h: h, metric: met, start: start, end: end, legend: title}
	for _, p := range s.Series {
		if time.Duration(p.Sec)*time.Second < start {
			continue
		}
		key.mix(uint64(p.Sec))
		for _, st := range sets {
			v := st.pick(p)
			top = max(top, v)
			key.mix(uint64(v))
		}
	}
	for _, ph := range s.Phases {
		key.mix(uint64(ph.Start))
	}
	if m.chart != nil && m.chart.key == key {
		return m.chart.view
	}
	view := m.drawLatencyChart(title, w, ch, sets, top, start, end, span)
	m.chart = &chartDrawing{key: key, view: view}
	return view
}

// chartKey is everything the latency chart is drawn from; the chart is
// drawn again only when it changes (once a second, as the series moves on,
// or on a key), not on every frame.
type chartKey struct {
	w, h       int
	metric     load.Metric
	start, end time.Duration
	legend     string
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

// latencySeries is one line of the chart.
type latencySeries struct {
	name  string
	style lipgloss.Style
	pick  func(load.Point) time.Duration
}

func (m *Model) drawLatencyChart(title string, w, ch int, sets []latencySeries, top, start, end, span time.Duration) string {
	t, s := m.theme, &m.snap
	ts := func(d time.Duration) time.Time { return time.Unix(int64(d/time.Second), 0) }
	yMax := niceCeil(float64(max(top, time.Millisecond)) * 1.1 / 1e6) // ms
	c := timeserieslinechart.New(w, ch,
		timeserieslinechart.WithTimeRange(ts(start), ts(end)),
		timeserieslinechart.WithYRange(0, yMax),
		timeserieslinechart.WithXLabelFormatter(func(_ int, v float64) string { return clock(time.Duration(v) * time.Second) }),
		timeserieslinechart.WithYLabelFormatter(func(_ int, v float64) string {
			if v <= 0 {
				return "0"
			}
			return dur(time.Duration(v * 1e6))
		}),
		timeserieslinechart.WithAxesStyles(t.Border, t.Muted),
		timeserieslinechart.WithXYSteps(2, 2),
	)
	c.SetViewTimeAndYRange(ts(start), ts(end), 0, yMax)
	for _, st := range sets {
		c.SetDataSetStyle(st.name, st.style)
	}
	for _, p := range s.Series {
		if time.Duration(p.Sec)*time.Second < start {
			continue
		}
		for _, st := range sets {
			if v := st.pick(p); v > 0 {
				c.PushDataSet(st.name, timeserieslinechart.TimePoint{Time: ts(time.Duration(p.Sec) * time.Second), Value: float64(v) / 1e6})
			}
		}
	}
	c.DrawBrailleAll()
	// Knob changes: a dotted column where each phase after the first began.
	for i, ph := range s.Phases {
		if i == 0 || ph.Start < start {
			continue
		}
		x := c.Origin().X + 1 + int(math.Round((ph.Start-start).Seconds()/span.Seconds()*float64(c.GraphWidth()-1)))
		for y := 0; y < c.Origin().Y; y++ {
			p := canvas.Point{X: x, Y: y}
			if cell := c.Canvas.Cell(p); cell.Rune == 0 || cell.Rune == ' ' {
				c.Canvas.SetCell(p, canvas.NewCellWithStyle('┊', t.Marker))
			}
		}
	}
	return title + "\n" + block(strings.Split(c.View(), "\n"), w, ch)
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
