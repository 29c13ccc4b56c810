package watch

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// HTML writes the watch as one self-contained page (no script, no
// network): the verdict and its regressions, the groups, each group's
// requests per second and TTFT p99 over the watch as SVG, and the
// servers. Everything a server or the source named is escaped by
// html/template.
func HTML(w io.Writer, s Snapshot, history map[string][]Point) error {
	names := make([]string, 0, len(history))
	for n := range history {
		names = append(names, n)
	}
	sort.Strings(names)
	data := struct {
		S            Snapshot
		Elapsed      string
		Req, TTFT    template.HTML
		Colors       []string
		Names        []string
		Regressed    bool
		Format       func(Bound) string
		Delta, Range func(Judged) string
		Probe        string
	}{S: s, Probe: ProbeLine(s.Probe), Elapsed: time.Duration(s.Elapsed * float64(time.Second)).Round(time.Second).String(),
		Req:    chartSVG(names, history, func(p Point) float64 { return p.ReqPerSec }, "requests/s", ""),
		TTFT:   chartSVG(names, history, func(p Point) float64 { return p.TTFTP99 * 1000 }, "TTFT p99 ≤ (ms)", ""),
		Colors: palette[:], Names: names, Regressed: s.Verdict.State == Regressed,
		Format: FormatBound, Delta: delta, Range: interval}
	return page.Execute(w, data)
}

// palette colours the groups' lines, in their names' order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"}

// chartSVG draws each group's series of y against the seconds into the
// watch, one polyline a group, with its axis' bounds labelled.
func chartSVG(names []string, history map[string][]Point, y func(Point) float64, ylabel, _ string) template.HTML {
	const w, h, left, bottom = 640.0, 200.0, 48.0, 20.0
	var xMax, yMax float64
	for _, n := range names {
		for _, p := range history[n] {
			xMax = max(xMax, p.At)
			if v := y(p); !math.IsNaN(v) && !math.IsInf(v, 0) {
				yMax = max(yMax, v)
			}
		}
	}
	if xMax <= 0 || yMax <= 0 {
		return template.HTML(`<p class="none">nothing measured yet</p>`)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`, w, h+bottom, w, h+bottom, template.HTMLEscapeString(ylabel))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="0" x2="%.0f" y2="%.0f" stroke="#999"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`, left, left, h, left, h, w, h)
	fmt.Fprintf(&b, `<text x="2" y="12" font-size="11">%.4g</text><text x="2" y="%.0f" font-size="11">0</text>`, yMax, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`, w, h+bottom-4, template.HTMLEscapeString(time.Duration(xMax*float64(time.Second)).Round(time.Second).String()))
	fmt.Fprintf(&b, `<text x="%.0f" y="12" font-size="11">%s</text>`, left+6, template.HTMLEscapeString(ylabel))
	for i, n := range names {
		var pts []string
		for _, p := range history[n] {
			v := y(p)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+(w-left)*p.At/xMax, h-h*v/yMax))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, palette[i%len(palette)], strings.Join(pts, " "))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers and escaped labels only
}

var page = template.Must(template.New("watch").Funcs(template.FuncMap{"mul100": func(v float64) float64 { return 100 * v }}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>infertop watch · {{.S.Source}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left}
th{background:#f4f4f4}.verdict{font-size:1.1em;font-weight:600;padding:.5em;border-radius:4px;background:#eef6ee}
.regressed{background:#fbeaea;color:#a00}.none{color:#888}.key span{display:inline-block;margin-right:1em}
</style></head><body>
<h1>infertop watch</h1>
<p>{{.S.Source}} · {{.Elapsed}} · window {{.S.Window}} s · {{.S.At.Format "2006-01-02 15:04:05 MST"}}</p>
<p class="verdict{{if .Regressed}} regressed{{end}}">{{.S.Verdict.Line}}</p>
<table><tr><th>regression</th><th>verdict</th><th>difference</th><th>interval</th><th>requests</th><th>decided after</th></tr>
{{range .S.Verdict.Regressions}}<tr><td>{{.Expr}}</td><td>{{.Verdict}}</td><td>{{call $.Delta .}}</td><td>{{call $.Range .}}</td><td>{{.NBase}} / {{.NCanary}}</td><td>{{if .DecidedAfter}}{{.DecidedAfter}} s{{end}}</td></tr>
{{end}}{{range .S.Verdict.Objectives}}<tr><td>{{.Expr}} on {{.Group}}</td><td>{{.State}}</td><td>{{call $.Format .Actual}}</td><td></td><td></td><td></td></tr>
{{end}}</table>
<p>{{.S.Verdict.Method}}, {{printf "%.0f" (mul100 .S.Verdict.Confidence)}} % over the whole watch.</p>
<h2>Groups</h2>
<table><tr><th>group</th><th>role</th><th>up</th><th>req/s</th><th>out tok/s</th><th>errors</th><th>running</th><th>waiting</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL p50</th><th>E2E p99</th><th>restarts</th></tr>
{{range .S.Groups}}<tr><td>{{.Name}}</td><td>{{.Role}}</td><td>{{.Up}}/{{.Servers}}</td><td>{{printf "%.1f" .ReqPerSec}}</td><td>{{printf "%.0f" .OutTokPerSec}}</td><td>{{if .ErrorKnown}}{{printf "%.2f" (mul100 .ErrorRate)}} %{{else}}-{{end}}</td><td>{{printf "%.0f" .Running}}</td><td>{{printf "%.0f" .Waiting}}</td><td>{{call $.Format .TTFT.P50}}</td><td>{{call $.Format .TTFT.P99}}</td><td>{{call $.Format .ITL.P50}}</td><td>{{call $.Format .E2E.P99}}</td><td>{{.Restarts}}</td></tr>
{{end}}</table>
{{with .Probe}}<p class="probe">{{.}}</p>
{{end}}
<p class="key">{{range $i, $n := .Names}}<span style="color:{{index $.Colors $i}}">━ {{$n}}</span>{{end}}</p>
{{.Req}}
{{.TTFT}}
<h2>Servers</h2>
<table><tr><th>server</th><th>group</th><th>engine</th><th>state</th><th>req/s</th><th>TTFT p99</th><th>restarts</th><th>note</th></tr>
{{range .S.Servers}}<tr><td>{{.Name}}</td><td>{{.Group}}</td><td>{{.Engine}}</td><td>{{.State}}</td><td>{{printf "%.1f" .ReqPer}}</td><td>{{call $.Format .TTFTP99}}</td><td>{{.Restarts}}</td><td>{{.Err}}</td></tr>
{{end}}</table>
</body></html>
`))
