package htmlreport

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The charts are SVG drawn here, not by a script in the page: the file
// then needs no library, draws the same in every browser and in print, and
// a test can count its paths in the DOM.
const (
	chartW, chartH                 = 920, 270
	padL, padR, padT, padB         = 64, 16, 12, 40
	plotW, plotH                   = chartW - padL - padR, chartH - padT - padB
	maxPointsPerSeries             = 1200 // a day-long run is thinned to this many points a line
	percentileMaxNines     float64 = 5    // the percentile plot's right edge: 99.999 %
)

// line is one series of a chart; NaN in Y is a gap (no value that second).
type line struct {
	Name string
	X, Y []float64
	// Color indexes the palette; Dash draws the second run of two.
	Color int
	Dash  bool
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
}

// niceStep is a round tick step giving about n ticks over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) {
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

// thin keeps at most maxPointsPerSeries points of a line, each kept point
// the highest of its stretch, so a spike survives thinning.
func thin(x, y []float64) ([]float64, []float64) {
	if len(x) <= maxPointsPerSeries {
		return x, y
	}
	step := (len(x) + maxPointsPerSeries - 1) / maxPointsPerSeries
	var tx, ty []float64
	for i := 0; i < len(x); i += step {
		best := math.NaN()
		for j := i; j < min(i+step, len(x)); j++ {
			if !math.IsNaN(y[j]) && (math.IsNaN(best) || y[j] > best) {
				best = y[j]
			}
		}
		tx, ty = append(tx, x[i]), append(ty, best)
	}
	return tx, ty
}

// svg draws c. Every line is one <path class="line"> whose d holds its
// points (empty when it has none, which the browser test catches); the
// <svg> says how many lines it should have in data-lines.
func (c *chart) svg() template.HTML {
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, l := range c.Lines {
		for i, x := range l.X {
			if math.IsNaN(l.Y[i]) {
				continue
			}
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, l.Y[i])
		}
	}
	for _, m := range c.Marks {
		xmin, xmax = math.Min(xmin, m.X), math.Max(xmax, m.X)
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
	ystep := niceStep(ymax, 5)
	ytop := math.Max(math.Ceil(ymax/ystep)*ystep, ystep)
	px := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*plotW }
	py := func(y float64) float64 { return padT + plotH - y/ytop*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="%s" data-lines="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		template.HTMLEscapeString(c.ID), len(c.Lines), chartW, chartH, template.HTMLEscapeString(c.Title))
	// The grid and the y axis.
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/><text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`,
			padL, padL+plotW, py(y), py(y), padL-6, py(y)+4, fmtNum(y))
	}
	// The x axis.
	if c.PercentileX {
		for n := 0.0; n <= percentileMaxNines; n++ {
			label := strconv.FormatFloat(100-math.Pow(10, 2-n), 'f', max(int(n)-2, 0), 64) + "%"
			fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/><text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`,
				px(n), px(n), padT, padT+plotH, px(n), padT+plotH+16, label)
		}
	} else {
		xstep := niceStep(xmax-xmin, 8)
		for x := math.Ceil(xmin/xstep) * xstep; x <= xmax+xstep/1e6; x += xstep {
			if math.Abs(x) < xstep/1e6 {
				x = 0 // not -0 from the float steps
			}
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(x), padT+plotH+16, fmtNum(x))
		}
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, padL+plotW, padT+plotH, padT+plotH)
	fmt.Fprintf(&b, `<text class="unit" x="%d" y="%d">%s</text><text class="unit" x="%d" y="%d" text-anchor="end">%s</text>`,
		4, padT+10, template.HTMLEscapeString(c.YUnit), padL+plotW, chartH-4, template.HTMLEscapeString(c.XUnit))
	for _, m := range c.Marks {
		fmt.Fprintf(&b, `<line class="mark" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/><text class="marklabel" x="%.1f" y="%d">%s</text>`,
			px(m.X), px(m.X), padT, padT+plotH, px(m.X)+3, padT+10, template.HTMLEscapeString(m.Label))
	}
	for _, l := range c.Lines {
		xs, ys := thin(l.X, l.Y)
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
			d.WriteString(strconv.FormatFloat(px(x), 'f', 1, 64) + "," + strconv.FormatFloat(py(ys[i]), 'f', 1, 64))
			pen = true
		}
		dash := ""
		if l.Dash {
			dash = " dash"
		}
		fmt.Fprintf(&b, `<path class="line c%d%s" data-series="%s" d="%s"><title>%s</title></path>`,
			l.Color%8, dash, template.HTMLEscapeString(l.Name), d.String(), template.HTMLEscapeString(l.Name))
		// A point with no neighbour draws no line (a one-second run, a
		// second alone between gaps): a dot shows it.
		alone := func(i int) bool {
			return (i == 0 || math.IsNaN(ys[i-1])) && (i == len(xs)-1 || math.IsNaN(ys[i+1]))
		}
		for i, x := range xs {
			if !math.IsNaN(ys[i]) && (c.Points || alone(i)) {
				fmt.Fprintf(&b, `<circle class="dot c%d" cx="%.1f" cy="%.1f" r="3"/>`, l.Color%8, px(x), py(ys[i]))
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it went through HTMLEscapeString
}

// C is the line's palette class (eight colours, then round again).
func (l line) C() int { return l.Color % 8 }
