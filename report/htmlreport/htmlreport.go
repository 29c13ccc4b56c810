// Package htmlreport draws a run's JSON result (report.WriteJSON's) as one
// self-contained HTML file to share: the manifest (with the command line
// that reproduces the run), the summary per phase (and a closed loop's
// steady-state window beside the whole run's figures), latency, throughput,
// errors and in flight over time with the phases marked, each phase's
// latency distribution as HdrHistogram's percentile plot, the server's
// own view and the GPUs' power when they were read, and what the kind of
// run adds: a comparison's table, regressions and gate (both sides on the
// time charts), a split's table per group, a capacity search's curve with
// its knee and its steps, a matrix's cells. Two runs are drawn on the
// same axes.
//
// The JSON is decoded with report's own types (report.InfertopJSON and
// the comparison's types in compare), the ones the writer encodes, so a
// renamed key cannot leave the page reading another.
//
// The page needs no network at view time: the styles are inside it and
// the charts are SVG drawn here, so there is no script at all. Every text
// from the run (the endpoint's model name, error messages, group names)
// goes through sanitize.Text and html/template's escaping. A result is
// someone else's file: its size, the work of its axes and the geometry of
// its histograms are bounded (report's reading: report.DecodeFile and
// report.DecodeHistogram).
package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
)

// Run is one run's JSON result and the name to show it under.
type Run struct {
	Name string
	JSON []byte
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

// decode reads one run's JSON with report's bounds and types.
func decode(r Run) (*report.File, error) {
	res, err := report.DecodeFile(r.Name, r.JSON)
	if err != nil {
		return nil, fmt.Errorf("html report: %w", err)
	}
	return res, nil
}

// Write draws one run, or two on the same axes. A comparison's result
// (run --compare) drawn alone brings its canary's result as the second.
func Write(w io.Writer, runs []Run) error {
	if len(runs) == 0 || len(runs) > 2 {
		return fmt.Errorf("html report: %d runs, want 1 or 2", len(runs))
	}
	var pg page
	for i, r := range runs {
		res, err := decode(r)
		if err != nil {
			return err
		}
		pg.Runs = append(pg.Runs, pageRun{Name: r.Name, Index: i, res: res})
	}
	if c := pg.Runs[0].res.Infertop.Compare; len(runs) == 1 && c != nil && c.Pair != nil && len(c.Pair.Canary) > 0 {
		can, err := decode(Run{Name: "canary", JSON: c.Pair.Canary})
		if err != nil {
			return err
		}
		pg.Runs[0].Name = "baseline"
		pg.Runs = append(pg.Runs, pageRun{Name: "canary", Index: 1, res: can})
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
	"ms":  fmtMS,
	"num": fmtNum,
	"pct": func(v float64) string { return fmt.Sprintf("%.2f%%", v*100) },
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.Format("2006-01-02 15:04:05 MST")
	},
	"s":       clip, // text from the endpoint: sanitised, and cut short
	"deref":   func(p *float64) float64 { return *p },
	"deref64": func(p *int64) int64 { return *p },
}).Parse(pageSrc))

func fmtMS(v float64) string {
	switch {
	case v == 0 || math.IsNaN(v) || math.IsInf(v, 0):
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
	// Pair, Split and Capacity are the kind of run's own parts, drawn
	// from the first run (a second given beside it is drawn on the
	// charts only).
	Pair     *comparisonView
	Split    *splitView
	Capacity []capacityView
	Matrix   *matrixView
	// Turns and Traces are each run's sessions table and trace replay,
	// TurnCharts the TTFT by turn.
	Turns      []turnsView
	TurnCharts []*chart
	Traces     []traceView
}

type pageRun struct {
	Name  string
	Index int
	res   *report.File
}

// Res is the run's "infertop" object, for the template.
func (r pageRun) Res() *report.InfertopJSON { return &r.res.Infertop }

// Reasoning says whether the run's model reasoned: its summary then
// shows TTFO (the answer's first token) and the reasoning tokens beside
// TTFT.
func (r pageRun) Reasoning() bool { return r.res.Infertop.Run.ReasoningTokens > 0 }

// Rows are the summary table's rows: every phase, then the run.
// httpRow is one HTTP phase of the run, by k6's name.
type httpRow struct {
	Name string
	D    report.DistJSON
}

// HTTPPhases is the run's HTTP phases in the order a request goes
// through them (none in a result that has none: a merge, an old file).
func (r pageRun) HTTPPhases() []httpRow { return rows(r.res.Infertop.Run.HTTP, report.HTTPPhaseKeys()) }

// TTFTSplit is the run's TTFT split by where it went (none without the
// server's timings).
func (r pageRun) TTFTSplit() []httpRow { return rows(r.res.Infertop.Run.TTFTSplit, report.SplitKeys()) }

// ServerPerf is the server's own per-request spans from its
// /perf_metrics (TensorRT-LLM), unjoined: nil where it gave none.
func (r pageRun) ServerPerf() *serverPerf {
	p := r.res.Infertop.ServerPerf
	if p == nil || p.Entries == 0 {
		return nil
	}
	out := &serverPerf{ServerPerfJSON: p, Rows: rows(p.Spans, report.ServerPerfKeys()), Split: rows(p.TTFTSplit, report.SplitKeys())}
	if rate, ok := p.BlockHitRate(); ok {
		out.HitRate = fmt.Sprintf("%.1f %%", 100*rate)
	}
	if p.SpecDraftTokens > 0 {
		out.Acceptance = fmt.Sprintf("%.1f %%", 100*float64(p.SpecAcceptedTokens)/float64(p.SpecDraftTokens))
	}
	return out
}

// serverPerf is the page's account of ServerPerfJSON.
type serverPerf struct {
	*report.ServerPerfJSON
	Rows, Split         []httpRow
	HitRate, Acceptance string
}

// rows is m's distributions in the order of keys, those it has.
func rows(m map[string]report.DistJSON, keys []string) []httpRow {
	var out []httpRow
	for _, k := range keys {
		if d, ok := m[k]; ok {
			out = append(out, httpRow{k, d})
		}
	}
	return out
}

func (r pageRun) Rows() []report.PhaseJSON {
	return append(append([]report.PhaseJSON(nil), r.res.Infertop.Phases...), r.res.Infertop.Run)
}

// Goodput is the per-request limits of goodput, as the flag writes them
// ("ttft ≤ 500 ms, tpot ≤ 50 ms"), in a fixed order.
func (r pageRun) Goodput() string {
	g := r.res.Infertop.Manifest.Goodput
	var parts []string
	for _, k := range sortedKeys(g) {
		if v := g[k]; v > 0 {
			parts = append(parts, sanitize.Text(k)+" ≤ "+fmtDuration(v))
		}
	}
	return strings.Join(parts, ", ")
}

// fmtDuration is a limit in ms as a person writes it: 500 ms, 1.5 s.
func fmtDuration(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%g s", ms/1000)
	}
	return fmt.Sprintf("%g ms", ms)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// section is a titled group of charts.
type section struct {
	ID, Title string
	Charts    []*chart
}

// Legend lists a chart's lines for the template.
func (c *chart) Legend() []line { return c.Lines }

// SVG is the chart drawn.
func (c *chart) SVG() template.HTML { return c.svg() }

// ReadRuns reads the results at paths (one or two) as the runs Write
// draws, each named by its file (two of one name, from two directories,
// by their paths). A file past report.MaxResultBytes is an error, read
// no further.
func ReadRuns(paths []string) ([]Run, error) {
	var runs []Run
	for _, p := range paths {
		b, err := report.ReadResult(p, report.MaxResultBytes)
		if err != nil {
			return nil, fmt.Errorf("html report: %w", err)
		}
		runs = append(runs, Run{Name: report.ResultName(p), JSON: b})
	}
	if len(runs) == 2 && runs[0].Name == runs[1].Name {
		runs[0].Name, runs[1].Name = paths[0], paths[1]
	}
	return runs, nil
}
