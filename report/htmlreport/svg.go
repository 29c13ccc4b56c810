package htmlreport

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The charts are SVG drawn here, not by a script in the page: the file
// then needs no library, draws the same in every browser and in print, and
// a test can count its paths in the DOM. The view box is as wide as a
// chart on a 1,400 px window; the page scales it to its width.
const (
	chartW, chartH             = 1320, 300
	padL, padR, padB           = 70, 30, 40
	markRow                    = 13 // a row of phase labels above the plot
	markRows                   = 3  // labels too close to the last go a row down, up to this many
	plotW                      = chartW - padL - padR
	maxPointsPerSeries         = 1200 // a day-long run is thinned to this many points a line
	maxLinesPerChart           = 32
	maxTicks                   = 12
	percentileMaxNines float64 = 5 // the percentile plot's right edge: 99.999 %
	// maxAxis is the largest magnitude an axis spans: a value past it
	// (1.7e308 in a crafted file) is not drawn, so the scale stays finite.
	maxAxis = 1e15
)

// line is one series of a chart; NaN in Y is a gap (no value that second).
type line struct {
	Name string
	X, Y []float64
	// Color indexes the palette; Dash draws the second run of two.
	Color int
	Dash  bool
	// Weight widens the line (0, 1, 2): the lines of one figure's
	// percentiles are told apart where they coincide.
	Weight int
}

// mark is a vertical rule at X (a phase's start), labelled.
type mark struct {
	X     float64
	Label string
}

// chart is one SVG chart.
type chart struct {
	ID, Title, YUnit, XUnit string
	Lines                   []line
	Marks                   []mark
	// PercentileX draws X as HdrHistogram's plotter does: log10(1/(1-q)),
	// labelled 0 %, 90 %, 99 %, ...
	PercentileX bool
	// Points draws a dot at every point (a capacity curve's few steps).
	Points bool
	// Note is a line under the title.
	Note string
	// xLo and xHi, when hasX, are a span the X axis covers whatever the
	// lines' values (spanX): charts over the same seconds line up.
	xLo, xHi float64
	hasX     bool
}

// spanX makes c's X axis cover xs (a run's seconds), with any span it had.
func (c *chart) spanX(xs []float64) {
	for _, x := range xs {
		if !drawable(x) {
			continue
		}
		if !c.hasX {
			c.xLo, c.xHi, c.hasX = x, x, true
		}
		c.xLo, c.xHi = math.Min(c.xLo, x), math.Max(c.xHi, x)
	}
}

// niceStep is a round tick step giving about n ticks over span (finite,
// positive), never one that leaves more than maxTicks.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

// drawable is a value an axis can hold.
func drawable(v float64) bool { return !math.IsNaN(v) && math.Abs(v) <= maxAxis }

// thin keeps at most maxPointsPerSeries points of a line, each kept point
// the highest of its stretch, so a spike survives thinning; values no axis
// can hold are gaps.
func thin(x, y []float64) ([]float64, []float64) {
	n := min(len(x), len(y))
	step := max((n+maxPointsPerSeries-1)/maxPointsPerSeries, 1)
	tx, ty := make([]float64, 0, n/step+1), make([]float64, 0, n/step+1)
	for i := 0; i < n; i += step {
		best, at := math.NaN(), math.NaN()
		for j := i; j < min(i+step, n); j++ {
			if drawable(x[j]) && drawable(y[j]) && (math.IsNaN(best) || y[j] > best) {
				best, at = y[j], x[j]
			}
		}
		if math.IsNaN(at) {
			at = x[i]
		}
		tx, ty = append(tx, at), append(ty, best)
	}
	return tx, ty
}

// axis is a linear scale from data to pixels.
type axis struct{ lo, hi, p0, p1 float64 }

func (a axis) px(v float64) float64 { return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0) }

// ticks are the round values of a from lo to hi, at most maxTicks+1 of
// them, counted so that no float step can loop.
func (a axis) ticks(n int) []float64 {
	step := niceStep(a.hi-a.lo, n)
	first := math.Ceil(a.lo/step) * step
	var out []float64
	for i := 0; i <= maxTicks; i++ {
		v := first + float64(i)*step
		if v > a.hi+step/1e6 {
			break
		}
		if math.Abs(v) < step/1e6 {
			v = 0 // not -0 from the float steps
		}
		out = append(out, v)
	}
	return out
}

// svg draws c. Every line is one <path class="line"> whose d holds its
// points (empty when it has none, which the browser test catches); the
// <svg> says how many lines it has in data-lines, and its axes in data-x
// and data-y ("lo hi pixel-of-lo pixel-of-hi"), so a reader can map a
// point back to the value it draws.
func (c *chart) svg() template.HTML {
	lines := c.Lines
	if len(lines) > maxLinesPerChart {
		lines = lines[:maxLinesPerChart]
	}
	type drawn struct {
		l      line
		xs, ys []float64
	}
	ds := make([]drawn, len(lines))
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for i, l := range lines {
		xs, ys := thin(l.X, l.Y)
		ds[i] = drawn{l, xs, ys}
		for j, x := range xs {
			if !math.IsNaN(ys[j]) {
				xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, ys[j])
			}
		}
	}
	marks := c.Marks[:min(len(c.Marks), maxMarks)]
	for _, m := range marks {
		if drawable(m.X) {
			xmin, xmax = math.Min(xmin, m.X), math.Max(xmax, m.X)
		}
	}
	if c.hasX {
		xmin, xmax = math.Min(xmin, c.xLo), math.Max(xmax, c.xHi)
	}
	if c.PercentileX {
		xmin, xmax = 0, percentileMaxNines
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if xmax-xmin < math.Abs(xmin)*1e-9 { // a span past float precision: ticks would repeat
		xmax = xmin + math.Abs(xmin)*1e-9
	}
	// The phase labels, a row down when too close to the one before.
	type label struct {
		x   float64
		row int
		s   string
	}
	xa := axis{lo: xmin, hi: xmax, p0: padL, p1: padL + plotW}
	var labels []label
	rows := 0
	last := make([]float64, markRows)
	for i := range last {
		last[i] = math.Inf(-1)
	}
	sorted := append([]mark(nil), marks...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].X < sorted[j].X })
	for _, m := range sorted {
		if !drawable(m.X) {
			continue
		}
		x := xa.px(m.X)
		for r := range markRows {
			if x >= last[r]+4 {
				labels = append(labels, label{x, r, m.Label})
				last[r] = x + 3 + 7*float64(len(m.Label)) // about 7 px a character at 11 px
				rows = max(rows, r+1)
				break
			}
		}
	}
	padT := 16 + markRow*max(rows-1, 0)
	if rows > 0 {
		padT += markRow
	}
	plotH := chartH - padT - padB
	ystep := niceStep(ymax, 5)
	ytop := math.Max(math.Ceil(ymax/ystep)*ystep, ystep)
	if math.IsInf(ytop, 0) || ytop > 2*maxAxis {
		ytop = 2 * maxAxis
	}
	ya := axis{lo: 0, hi: ytop, p0: float64(padT + plotH), p1: float64(padT)}

	var b strings.Builder
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	fmt.Fprintf(&b, `<svg class="chart" id="%s" data-lines="%d" data-x="%s %s %s %s" data-y="%s %s %s %s" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		template.HTMLEscapeString(c.ID), len(lines), f(xa.lo), f(xa.hi), f(xa.p0), f(xa.p1), f(ya.lo), f(ya.hi), f(ya.p0), f(ya.p1),
		chartW, chartH, template.HTMLEscapeString(c.Title))
	// The grid and the y axis.
	for _, y := range ya.ticks(5) {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/><text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`,
			padL, padL+plotW, ya.px(y), ya.px(y), padL-6, ya.px(y)+4, fmtNum(y))
	}
	// The x axis: the last label ends at the plot's edge, never past it.
	if c.PercentileX {
		for n := 0.0; n <= percentileMaxNines; n++ {
			text := strconv.FormatFloat(100-math.Pow(10, 2-n), 'f', max(int(n)-2, 0), 64) + "%"
			anchor := "middle"
			if n == percentileMaxNines {
				anchor = "end"
			}
			fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/><text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`,
				xa.px(n), xa.px(n), padT, padT+plotH, xa.px(n), padT+plotH+16, anchor, text)
		}
	} else {
		for _, x := range xa.ticks(10) {
			anchor := "middle"
			if xa.px(x) > padL+plotW-20 {
				anchor = "end"
			}
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, xa.px(x), padT+plotH+16, anchor, fmtNum(x))
		}
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, padL+plotW, padT+plotH, padT+plotH)
	fmt.Fprintf(&b, `<text class="unit" x="%d" y="%d">%s</text><text class="unit" x="%d" y="%d" text-anchor="end">%s</text>`,
		4, padT-5, template.HTMLEscapeString(c.YUnit), padL+plotW, chartH-4, template.HTMLEscapeString(c.XUnit))
	for _, m := range sorted {
		if drawable(m.X) {
			fmt.Fprintf(&b, `<line class="mark" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, xa.px(m.X), xa.px(m.X), padT, padT+plotH)
		}
	}
	for _, l := range labels {
		fmt.Fprintf(&b, `<text class="marklabel" x="%.1f" y="%d">%s</text>`, l.x+3, 10+markRow*l.row, template.HTMLEscapeString(l.s))
	}
	// The widest lines first, so the thinner ones stay on top.
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return ds[order[i]].l.Weight > ds[order[j]].l.Weight })
	for _, i := range order {
		l, xs, ys := ds[i].l, ds[i].xs, ds[i].ys
		var d strings.Builder
		pen := false
		for i, x := range xs {
			if math.IsNaN(ys[i]) {
				pen = false
				continue
			}
			if pen {
				d.WriteByte('L')
			} else {
				d.WriteByte('M')
			}
			d.WriteString(strconv.FormatFloat(xa.px(x), 'f', 1, 64) + "," + strconv.FormatFloat(ya.px(ys[i]), 'f', 1, 64))
			pen = true
		}
		fmt.Fprintf(&b, `<path class="%s" data-series="%s" d="%s"><title>%s</title></path>`,
			l.class(), template.HTMLEscapeString(l.Name), d.String(), template.HTMLEscapeString(l.Name))
		// A point with no neighbour draws no line (a one-second run, a
		// second alone between gaps): a dot shows it.
		alone := func(i int) bool {
			return (i == 0 || math.IsNaN(ys[i-1])) && (i == len(xs)-1 || math.IsNaN(ys[i+1]))
		}
		for i, x := range xs {
			if !math.IsNaN(ys[i]) && (c.Points || alone(i)) {
				fmt.Fprintf(&b, `<circle class="dot c%d" cx="%.1f" cy="%.1f" r="3"/>`, l.Color%8, xa.px(x), ya.px(ys[i]))
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it went through HTMLEscapeString
}

// class is the line's classes: its palette colour, its weight, dashed
// for the second run.
func (l line) class() string {
	s := fmt.Sprintf("line c%d w%d", l.Color%8, min(max(l.Weight, 0), 2))
	if l.Dash {
		s += " dash"
	}
	return s
}

// Class is the line's classes, for the legend.
func (l line) Class() string { return l.class() }
