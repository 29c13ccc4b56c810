// Package htmlreport draws a run's JSON result (report.WriteJSON's) as one
// self-contained HTML file to share: the manifest, the summary per phase,
// latency, throughput, errors and in flight over time with the phases
// marked, each phase's latency distribution as HdrHistogram's percentile
// plot, the capacity curve and the canary comparison when the run has
// them, and the GPUs' power and energy per token when they were read. Two
// runs are drawn on the same axes.
//
// The page needs no network at view time: the styles are inside it and
// the charts are SVG drawn here, so there is no script at all. Every text
// from the run (the endpoint's model name, error messages, settings) goes
// through html/template's escaping.
package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/report"
)

// Run is one run's JSON result and the name to show it under.
type Run struct {
	Name string
	JSON []byte
}

// Capacity is a capacity search's result (infertop.capacity), as the
// search writes it.
type Capacity struct {
	Over       string         `json:"over"`
	MaxLoad    float64        `json:"max_load"`
	Objectives []string       `json:"objectives"`
	Steps      []CapacityStep `json:"steps"`
}

// CapacityStep is one load tried.
type CapacityStep struct {
	Load             float64 `json:"load"`
	ReqPerSec        float64 `json:"req_per_s"`
	OutputTokPerS    float64 `json:"output_tok_per_s"`
	Goodput          float64 `json:"goodput"`
	TTFTP50, TTFTP99 float64
	E2EP50, E2EP99   float64
	ErrorRate        float64 `json:"error_rate"`
	Held             bool    `json:"held"`
}

// UnmarshalJSON reads the step's latency keys, which carry their unit.
func (s *CapacityStep) UnmarshalJSON(b []byte) error {
	type plain CapacityStep
	var aux struct {
		plain
		TTFTP50 float64 `json:"ttft_p50_ms"`
		TTFTP99 float64 `json:"ttft_p99_ms"`
		E2EP50  float64 `json:"e2e_p50_ms"`
		E2EP99  float64 `json:"e2e_p99_ms"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*s = CapacityStep(aux.plain)
	s.TTFTP50, s.TTFTP99, s.E2EP50, s.E2EP99 = aux.TTFTP50, aux.TTFTP99, aux.E2EP50, aux.E2EP99
	return nil
}

// Compare is a canary comparison's result (infertop.compare).
type Compare struct {
	Metrics []CompareMetric `json:"metrics"`
}

// CompareMetric is one metric of baseline against canary, with the
// delta's interval and the verdict.
type CompareMetric struct {
	Name     string   `json:"name"`
	Baseline float64  `json:"baseline"`
	Canary   float64  `json:"canary"`
	Delta    float64  `json:"delta"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	Verdict  string   `json:"verdict"`
}

// result is the part of the JSON the page draws.
type result struct {
	Infertop struct {
		Manifest   report.Manifest        `json:"manifest"`
		Run        report.PhaseJSON       `json:"run"`
		Phases     []report.PhaseJSON     `json:"phases"`
		Series     *report.SeriesJSON     `json:"series"`
		Histograms *report.HistogramsJSON `json:"histograms"`
		Telemetry  *report.TelemetryJSON  `json:"telemetry"`
		SLO        []report.VerdictJSON   `json:"slo"`
		SLOHeld    bool                   `json:"slo_held"`
		Errors     []report.ErrorJSON     `json:"errors"`
		Capacity   *Capacity              `json:"capacity"`
		Compare    *Compare               `json:"compare"`
		Energy     *struct {
			Source string         `json:"source"`
			Run    map[string]any `json:"run"`
		} `json:"energy"`
	} `json:"infertop"`
}

// WriteReport draws rep as the HTML report, from its JSON: the page is
// always drawn from what the JSON holds, so a saved run draws the same.
func WriteReport(w io.Writer, rep *report.Report, name string) error {
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		return err
	}
	return Write(w, []Run{{Name: name, JSON: b.Bytes()}})
}

// Write draws one run, or two on the same axes.
func Write(w io.Writer, runs []Run) error {
	if len(runs) == 0 || len(runs) > 2 {
		return fmt.Errorf("html report: %d runs, want 1 or 2", len(runs))
	}
	var pg page
	for i, r := range runs {
		var res result
		if err := json.Unmarshal(r.JSON, &res); err != nil {
			return fmt.Errorf("html report: %s: %w", r.Name, err)
		}
		if res.Infertop.Manifest.Tool != "infertop" {
			return fmt.Errorf("html report: %s is not an infertop result (no infertop.manifest)", r.Name)
		}
		pg.Runs = append(pg.Runs, pageRun{Name: r.Name, Index: i, res: &res})
	}
	pg.build()
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, &pg); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

//go:embed page.html.tmpl
var pageSrc string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"ms":  func(v float64) string { return fmtMS(v) },
	"num": func(v float64) string { return fmtNum(v) },
	"pct": func(v float64) string { return fmt.Sprintf("%.2f%%", v*100) },
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.Format("2006-01-02 15:04:05 MST")
	},
	"optf": func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.3g", *p)
	},
	"lower": strings.ToLower,
}).Parse(pageSrc))

func fmtMS(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}

// page is what the template reads.
type page struct {
	Title    string
	Runs     []pageRun
	Sections []section
}

type pageRun struct {
	Name  string
	Index int
	res   *result
}

// Res is the run's result, for the template.
func (r pageRun) Res() *result { return r.res }

// Settings are the flags set, sorted.
func (r pageRun) Settings() [][2]string {
	var out [][2]string
	for k, v := range r.res.Infertop.Manifest.Settings {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Server is what the server said of itself, compact and bounded.
func (r pageRun) Server() string {
	if len(r.res.Infertop.Manifest.Server) == 0 {
		return ""
	}
	b, _ := json.Marshal(r.res.Infertop.Manifest.Server)
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// Rows are the summary table's rows: every phase, then the run.
func (r pageRun) Rows() []report.PhaseJSON {
	return append(append([]report.PhaseJSON(nil), r.res.Infertop.Phases...), r.res.Infertop.Run)
}

// section is a titled group of charts.
type section struct {
	ID, Title string
	Charts    []*chart
	// Legend is drawn once a chart, from its lines.
}

// Legend lists a chart's lines for the template.
func (c *chart) Legend() []line { return c.Lines }

// SVG is the chart drawn.
func (c *chart) SVG() template.HTML { return c.svg() }

func nan() float64 { return math.NaN() }

func (pg *page) build() {
	names := []string{}
	for _, r := range pg.Runs {
		names = append(names, r.Name)
	}
	pg.Title = "infertop: " + strings.Join(names, " vs ")
	two := len(pg.Runs) == 2
	label := func(r pageRun, s string) string {
		if two {
			return r.Name + " " + s
		}
		return s
	}

	// Over time: latency, throughput, requests and errors, in flight.
	lat := section{ID: "latency", Title: "Latency over time"}
	ttft := &chart{ID: "ttft-time", Title: "TTFT per second", YUnit: "ms", XUnit: "run time, s"}
	e2e := &chart{ID: "e2e-time", Title: "E2E latency per second", YUnit: "ms", XUnit: "run time, s"}
	thr := section{ID: "throughput", Title: "Throughput, errors and in flight"}
	tok := &chart{ID: "tokens-time", Title: "Tokens per second", YUnit: "tok/s", XUnit: "run time, s"}
	req := &chart{ID: "requests-time", Title: "Requests per second: completed and failed by class", YUnit: "req/s", XUnit: "run time, s"}
	infl := &chart{ID: "inflight-time", Title: "Requests in flight (the most seen each second)", YUnit: "requests", XUnit: "run time, s"}
	dist := section{ID: "distribution", Title: "Latency distribution per phase (percentile plot, as HdrHistogram's plotter)"}
	dttft := &chart{ID: "ttft-dist", Title: "TTFT by percentile", YUnit: "ms", XUnit: "percentile", PercentileX: true}
	de2e := &chart{ID: "e2e-dist", Title: "E2E latency by percentile", YUnit: "ms", XUnit: "percentile", PercentileX: true}
	pow := section{ID: "power", Title: "GPU power and energy per token"}
	pw := &chart{ID: "power-time", Title: "GPU power (all GPUs)", YUnit: "W", XUnit: "run time, s"}
	jpt := &chart{ID: "jpt-time", Title: "Energy per output token", YUnit: "J/token", XUnit: "run time, s"}
	cap := section{ID: "capacity", Title: "Capacity curve"}

	for _, r := range pg.Runs {
		inf := &r.res.Infertop
		dash := r.Index == 1
		if two || len(inf.Phases) > 1 {
			for _, p := range inf.Phases {
				if r.Index == 0 {
					m := mark{X: p.StartS, Label: fmt.Sprintf("P%d", p.ID)}
					ttft.Marks, e2e.Marks, tok.Marks, req.Marks, infl.Marks = append(ttft.Marks, m), append(e2e.Marks, m), append(tok.Marks, m), append(req.Marks, m), append(infl.Marks, m)
				}
			}
		}
		if s := inf.Series; s != nil {
			x := make([]float64, len(s.Sec))
			for i, v := range s.Sec {
				x[i] = float64(v)
			}
			col := func(c []*float64, n int) []float64 {
				y := make([]float64, n)
				for i := range y {
					y[i] = nan()
					if i < len(c) && c[i] != nil {
						y[i] = *c[i]
					}
				}
				return y
			}
			ints := func(c []int32) []float64 {
				y := make([]float64, len(x))
				for i := range y {
					if i < len(c) {
						y[i] = float64(c[i])
					}
				}
				return y
			}
			for j, q := range []string{"p50", "p95", "p99"} {
				ttft.Lines = append(ttft.Lines, line{Name: label(r, "TTFT "+q), X: x, Y: col(s.Latency["ttft_"+q], len(x)), Color: j, Dash: dash})
				e2e.Lines = append(e2e.Lines, line{Name: label(r, "E2E "+q), X: x, Y: col(s.Latency["e2el_"+q], len(x)), Color: j, Dash: dash})
			}
			tok.Lines = append(tok.Lines, line{Name: label(r, "output tok/s"), X: x, Y: ints(s.OutputTokens), Color: 0, Dash: dash},
				line{Name: label(r, "input tok/s"), X: x, Y: ints(s.InputTokens), Color: 3, Dash: dash})
			req.Lines = append(req.Lines, line{Name: label(r, "completed"), X: x, Y: ints(s.Completed), Color: 1, Dash: dash})
			classes := make([]string, 0, len(s.FailedByClass))
			for k := range s.FailedByClass {
				classes = append(classes, k)
			}
			sort.Strings(classes)
			if len(classes) == 0 {
				req.Lines = append(req.Lines, line{Name: label(r, "failed"), X: x, Y: ints(s.Failed), Color: 2, Dash: dash})
			}
			for j, k := range classes {
				req.Lines = append(req.Lines, line{Name: label(r, "failed "+k), X: x, Y: ints(s.FailedByClass[k]), Color: 2 + j, Dash: dash})
			}
			infl.Lines = append(infl.Lines, line{Name: label(r, "in flight"), X: x, Y: ints(s.InFlight), Color: 4, Dash: dash})

			if t := inf.Telemetry; t != nil && t.PowerW != nil {
				py := col(t.PowerW, len(t.T))
				pw.Lines = append(pw.Lines, line{Name: label(r, "power"), X: t.T, Y: py, Color: 5, Dash: dash})
				// J/token: the second's power over the second's output tokens.
				byS := map[int64]float64{}
				for i, sec := range s.Sec {
					if i < len(s.OutputTokens) {
						byS[sec] = float64(s.OutputTokens[i])
					}
				}
				jy := make([]float64, len(t.T))
				for i, tt := range t.T {
					jy[i] = nan()
					if n := byS[int64(math.Floor(tt))]; n > 0 && !math.IsNaN(py[i]) {
						jy[i] = py[i] / n
					}
				}
				jpt.Lines = append(jpt.Lines, line{Name: label(r, "J per output token"), X: t.T, Y: jy, Color: 6, Dash: dash})
			}
		}
		if h := inf.Histograms; h != nil {
			for j, ph := range h.Phases {
				if ph.Warmup {
					continue
				}
				name := label(r, fmt.Sprintf("phase %d", ph.ID))
				for _, c := range []struct {
					ch  *chart
					key string
				}{{dttft, "ttft"}, {de2e, "e2el"}} {
					if enc, ok := ph.Hist[c.key]; ok {
						x, y := percentileCurve(enc)
						c.ch.Lines = append(c.ch.Lines, line{Name: name, X: x, Y: y, Color: j, Dash: dash})
					}
				}
			}
		}
		if c := inf.Capacity; c != nil && len(c.Steps) > 0 {
			cap.Charts = append(cap.Charts, capacityCharts(r, c, label)...)
		}
	}
	lat.Charts = []*chart{ttft, e2e}
	thr.Charts = []*chart{tok, req, infl}
	dist.Charts = []*chart{dttft, de2e}
	pow.Charts = []*chart{pw, jpt}
	for _, s := range []section{lat, thr, dist, cap, pow} {
		var keep []*chart
		for _, c := range s.Charts {
			if len(c.Lines) > 0 {
				keep = append(keep, c)
			}
		}
		if len(keep) > 0 {
			s.Charts = keep
			pg.Sections = append(pg.Sections, s)
		}
	}
}

// capacityCharts draws a capacity search: latency and throughput against
// the load tried, the steps that held and the most load that held.
func capacityCharts(r pageRun, c *Capacity, label func(pageRun, string) string) []*chart {
	over := c.Over
	if over == "" {
		over = "load"
	}
	note := fmt.Sprintf("most %s that held: %s", over, fmtNum(c.MaxLoad))
	if len(c.Objectives) > 0 {
		note += "; objectives: " + strings.Join(c.Objectives, ", ")
	}
	steps := append([]CapacityStep(nil), c.Steps...)
	sort.Slice(steps, func(i, j int) bool { return steps[i].Load < steps[j].Load })
	x := make([]float64, len(steps))
	pick := func(f func(CapacityStep) float64) []float64 {
		y := make([]float64, len(steps))
		for i, s := range steps {
			x[i], y[i] = s.Load, f(s)
		}
		return y
	}
	id := fmt.Sprintf("-%d", r.Index)
	lat := &chart{ID: "capacity-latency" + id, Title: label(r, "Latency against "+over), YUnit: "ms", XUnit: over, Points: true, Note: note,
		Marks: []mark{{X: c.MaxLoad, Label: "max " + fmtNum(c.MaxLoad)}}}
	lat.Lines = []line{
		{Name: "TTFT p50", X: x, Y: pick(func(s CapacityStep) float64 { return s.TTFTP50 }), Color: 0},
		{Name: "TTFT p99", X: x, Y: pick(func(s CapacityStep) float64 { return s.TTFTP99 }), Color: 2},
		{Name: "E2E p50", X: x, Y: pick(func(s CapacityStep) float64 { return s.E2EP50 }), Color: 1},
		{Name: "E2E p99", X: x, Y: pick(func(s CapacityStep) float64 { return s.E2EP99 }), Color: 3},
	}
	thr := &chart{ID: "capacity-throughput" + id, Title: label(r, "Throughput against "+over), YUnit: "per s", XUnit: over, Points: true,
		Marks: []mark{{X: c.MaxLoad, Label: "max " + fmtNum(c.MaxLoad)}}}
	thr.Lines = []line{
		{Name: "output tok/s", X: x, Y: pick(func(s CapacityStep) float64 { return s.OutputTokPerS }), Color: 0},
		{Name: "req/s", X: x, Y: pick(func(s CapacityStep) float64 { return s.ReqPerSec }), Color: 1},
		{Name: "goodput req/s", X: x, Y: pick(func(s CapacityStep) float64 { return s.Goodput }), Color: 4},
	}
	return []*chart{lat, thr}
}

// percentileCurve samples a histogram as HdrHistogram's plotter draws it:
// x is log10(1/(1-q)) (0 is the median's left, 2 is p99, 3 p99.9), y the
// value at q in ms; the curve stops at the last value the count can tell
// apart (1/count from the top), then the maximum.
func percentileCurve(enc string) (xs, ys []float64) {
	h, err := hdr.Decode([]byte(enc))
	if err != nil || h.TotalCount() == 0 {
		return nil, nil
	}
	top := math.Min(math.Log10(float64(h.TotalCount())), percentileMaxNines)
	const n = 160
	for i := 0; i <= n; i++ {
		x := top * float64(i) / n
		q := 100 * (1 - math.Pow(10, -x))
		xs, ys = append(xs, x), append(ys, float64(h.ValueAtPercentile(q))/1000)
	}
	xs, ys = append(xs, top), append(ys, float64(h.Max())/1000)
	return xs, ys
}

// ReadRuns reads the results at paths (one or two) as the runs Write
// draws, each named by its file (two of one name, from two directories,
// by their paths).
func ReadRuns(paths []string) ([]Run, error) {
	var runs []Run
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("html report: %w", err)
		}
		runs = append(runs, Run{Name: strings.TrimSuffix(filepath.Base(p), ".json"), JSON: b})
	}
	if len(runs) == 2 && runs[0].Name == runs[1].Name {
		runs[0].Name, runs[1].Name = paths[0], paths[1]
	}
	return runs, nil
}
