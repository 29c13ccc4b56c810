package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// chromium runs headless Chromium on page with args added, the network
// shut (no proxy reaches anything, no name resolves) and its own profile,
// and returns its stdout and stderr. The background-networking flags keep
// it from calling home on a machine whose network is closed.
func chromium(t *testing.T, bin, page string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--disable-quic", "--user-data-dir=" + t.TempDir(),
		"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

var (
	svgRe  = regexp.MustCompile(`(?s)<svg class="chart" id="([^"]+)" data-lines="(\d+)".*?</svg>`)
	pathRe = regexp.MustCompile(`<path class="line[^"]*" data-series="([^"]*)" d="([^"]*)"`)
)

// checkCharts holds that every chart in the DOM drew: as many line paths
// as it has series, each with a point at least; it returns the charts
// seen.
func checkCharts(dom string) (map[string]bool, error) {
	seen := map[string]bool{}
	for _, m := range svgRe.FindAllStringSubmatch(dom, -1) {
		id, want := m[1], m[2]
		paths := pathRe.FindAllStringSubmatch(m[0], -1)
		if strconv.Itoa(len(paths)) != want {
			return seen, fmt.Errorf("chart %s: %d paths, want %s", id, len(paths), want)
		}
		for _, p := range paths {
			if !strings.Contains(p[2], "M") { // a lone point is M alone, and a dot
				return seen, fmt.Errorf("chart %s: series %q drew no line (d=%q)", id, p[1], p[2])
			}
		}
		seen[id] = true
	}
	return seen, nil
}

// TestHTMLReportInBrowser writes the HTML report of a real headless run
// (the embedded sim, whose GPU readings give the power charts) and opens
// it in headless Chromium with the network shut: the page loads without a
// console message, every chart drew one path per series, and a screenshot
// is kept. A report with a chart's data missing fails the same check.
func TestHTMLReportInBrowser(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (.ci/run installs Debian's)")
	}
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--stages", "concurrency=3,duration=2s;concurrency=8,duration=2500ms",
		"--prompt-tokens", "64", "--output-tokens", "24", "--json", jsonPath, "--html", htmlPath}, &out, &errb); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errb.String())
	}
	dom, logs := chromium(t, bin, htmlPath, "--dump-dom")
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console: %s", l)
		}
	}
	seen, err := checkCharts(dom)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ttft-time", "e2e-time", "tokens-time", "requests-time", "inflight-time", "ttft-dist", "e2e-dist", "power-time", "jpt-time"} {
		if !seen[id] {
			t.Errorf("chart %s missing; drew %v", id, seen)
		}
	}
	shot := filepath.Join(os.TempDir(), "infertop-report.png")
	os.Remove(shot)
	chromium(t, bin, htmlPath, "--window-size=1000,4200", "--hide-scrollbars", "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)

	// The same run with its TTFT p50 column emptied: that chart's line
	// has no points, and the check says so.
	doc, _ := os.ReadFile(jsonPath)
	var res map[string]any
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatal(err)
	}
	lat := res["infertop"].(map[string]any)["series"].(map[string]any)["latency_ms"].(map[string]any)
	lat["ttft_p50"] = make([]any, len(lat["ttft_p50"].([]any)))
	broken, _ := json.Marshal(res)
	brokenJSON, brokenHTML := filepath.Join(dir, "broken.json"), filepath.Join(dir, "broken.html")
	os.WriteFile(brokenJSON, broken, 0o644)
	if code := run([]string{"report", brokenJSON, "-o", brokenHTML}, &out, &errb); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	dom, _ = chromium(t, bin, brokenHTML, "--dump-dom")
	if _, err := checkCharts(dom); err == nil || !strings.Contains(err.Error(), "ttft-time") {
		t.Fatalf("a chart missing its data passed the check: %v", err)
	}
}

// The round trip of the HTML report: a real run writes its JSON,
// `infertop report` draws it, and the page is read back: each chart's
// series from the SVG (its points' pixels mapped through the chart's own
// axes, which the <svg> states in data-x and data-y) and each table's
// cells; the JSON's values must be there within a pixel's worth, a
// series that varies must not be flat, and a table must have a row for
// every row of the JSON.

var (
	rtChartRe = regexp.MustCompile(`(?s)<svg class="chart" id="([^"]+)" data-lines="\d+" data-x="([^"]+)" data-y="([^"]+)".*?</svg>`)
	rtPathRe  = regexp.MustCompile(`<path class="line[^"]*" data-series="([^"]*)" d="([^"]*)"`)
	rtTableRe = regexp.MustCompile(`(?s)<table class="([^"]*)"[^>]*>(.*?)</table>`)
	rtRowRe   = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	rtCellRe  = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
	rtTagRe   = regexp.MustCompile(`<[^>]*>`)
)

// pageAxis maps a pixel back to a value: lo and hi are drawn at p0, p1.
type pageAxis struct{ lo, hi, p0, p1 float64 }

func (a pageAxis) value(p float64) float64 { return a.lo + (p-a.p0)/(a.p1-a.p0)*(a.hi-a.lo) }

// perPixel is a pixel's worth of value.
func (a pageAxis) perPixel() float64 { return math.Abs((a.hi - a.lo) / (a.p1 - a.p0)) }

// pageChart is a chart read back: each series' points, as values.
type pageChart struct {
	x, y   pageAxis
	series map[string][][2]float64
}

func parseAxis(t *testing.T, s string) pageAxis {
	t.Helper()
	var v [4]float64
	f := strings.Fields(s)
	if len(f) != 4 {
		t.Fatalf("axis %q", s)
	}
	for i := range v {
		var err error
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			t.Fatalf("axis %q: %v", s, err)
		}
	}
	return pageAxis{v[0], v[1], v[2], v[3]}
}

// readCharts reads every chart of page.
func readCharts(t *testing.T, page string) map[string]pageChart {
	t.Helper()
	out := map[string]pageChart{}
	for _, m := range rtChartRe.FindAllStringSubmatch(page, -1) {
		c := pageChart{x: parseAxis(t, m[2]), y: parseAxis(t, m[3]), series: map[string][][2]float64{}}
		for _, p := range rtPathRe.FindAllStringSubmatch(m[0], -1) {
			var pts [][2]float64
			for _, seg := range strings.FieldsFunc(p[2], func(r rune) bool { return r == 'M' || r == 'L' }) {
				xs, ys, ok := strings.Cut(seg, ",")
				px, err1 := strconv.ParseFloat(xs, 64)
				py, err2 := strconv.ParseFloat(ys, 64)
				if !ok || err1 != nil || err2 != nil {
					t.Fatalf("chart %s: point %q", m[1], seg)
				}
				pts = append(pts, [2]float64{c.x.value(px), c.y.value(py)})
			}
			c.series[html.UnescapeString(p[1])] = pts
		}
		out[m[1]] = c
	}
	return out
}

// readTables reads every table of page by its class: its rows' cells,
// the heading's first, as text.
func readTables(page string) map[string][][][]string {
	out := map[string][][][]string{}
	for _, m := range rtTableRe.FindAllStringSubmatch(page, -1) {
		var rows [][]string
		for _, r := range rtRowRe.FindAllStringSubmatch(m[2], -1) {
			var cells []string
			for _, c := range rtCellRe.FindAllStringSubmatch(r[1], -1) {
				cells = append(cells, strings.TrimSpace(html.UnescapeString(rtTagRe.ReplaceAllString(c[1], ""))))
			}
			rows = append(rows, cells)
		}
		out[m[1]] = append(out[m[1]], rows)
	}
	return out
}

// checkSeries holds the series name of chart id to the JSON's points
// (x, y; NaN y: none that second): each is drawn within a pixel, and a
// series that varies by more than a pixel is not flat.
func checkSeries(t *testing.T, charts map[string]pageChart, id, name string, xs, ys []float64) {
	t.Helper()
	c, ok := charts[id]
	if !ok {
		t.Errorf("no chart %s", id)
		return
	}
	pts, ok := c.series[name]
	if !ok {
		t.Errorf("chart %s: no series %q (has %v)", id, name, keys(c.series))
		return
	}
	dx, dy := c.x.perPixel()*1.01, c.y.perPixel()*1.01
	lo, hi, plo, phi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, x := range xs {
		y := ys[i]
		if math.IsNaN(y) {
			continue
		}
		lo, hi = math.Min(lo, y), math.Max(hi, y)
		found := false
		for _, p := range pts {
			if math.Abs(p[0]-x) <= dx && math.Abs(p[1]-y) <= dy {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("chart %s, %s: the JSON's (%g, %g) is not drawn within a pixel (%g, %g); drawn: %v", id, name, x, y, dx, dy, pts)
		}
	}
	for _, p := range pts {
		plo, phi = math.Min(plo, p[1]), math.Max(phi, p[1])
	}
	if hi-lo > 2*dy && phi-plo < dy {
		t.Errorf("chart %s, %s: flat on the page, from %g to %g in the JSON", id, name, lo, hi)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// rtResult is a result file, read with report's types.
type rtResult struct {
	Infertop report.InfertopJSON `json:"infertop"`
}

func readResult(t *testing.T, path string) rtResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r rtResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// checkTimeCharts holds the time charts to the run's series, its lines
// named with prefix.
func checkTimeCharts(t *testing.T, charts map[string]pageChart, inf *report.InfertopJSON, prefix string) {
	t.Helper()
	s := inf.Series
	if s == nil || len(s.Sec) < 2 {
		t.Fatalf("%sno series of two seconds or more: %+v", prefix, s)
	}
	x := make([]float64, len(s.Sec))
	for i, v := range s.Sec {
		x[i] = float64(v)
	}
	col := func(c []*float64) []float64 {
		y := make([]float64, len(x))
		for i := range y {
			y[i] = math.NaN()
			if i < len(c) && c[i] != nil {
				y[i] = *c[i]
			}
		}
		return y
	}
	ints := func(c []int32) []float64 {
		y := make([]float64, len(x))
		for i := range c {
			y[i] = float64(c[i])
		}
		return y
	}
	for _, q := range []string{"p50", "p95", "p99"} {
		checkSeries(t, charts, "ttft-time", prefix+"TTFT "+q, x, col(s.Latency["ttft_"+q]))
		checkSeries(t, charts, "e2e-time", prefix+"E2E "+q, x, col(s.Latency["e2el_"+q]))
	}
	checkSeries(t, charts, "tokens-time", prefix+"output tok/s", x, ints(s.OutputTokens))
	checkSeries(t, charts, "requests-time", prefix+"completed", x, ints(s.Completed))
	checkSeries(t, charts, "inflight-time", prefix+"in flight", x, ints(s.InFlight))
	if tel := inf.Telemetry; tel != nil && tel.Running != nil {
		checkSeries(t, charts, "server-queue", prefix+"running", tel.T, col2(tel.Running))
	}
}

func col2(c []*float64) []float64 {
	y := make([]float64, len(c))
	for i, v := range c {
		y[i] = math.NaN()
		if v != nil {
			y[i] = *v
		}
	}
	return y
}

// checkSummary holds the summary table of a run to its phases: a row per
// phase and the run's, with the JSON's counts.
func checkSummary(t *testing.T, table [][]string, inf *report.InfertopJSON) {
	t.Helper()
	rows := append(append([]report.PhaseJSON(nil), inf.Phases...), inf.Run)
	if len(table) != len(rows)+1 {
		t.Fatalf("summary: %d rows, want %d (a heading, %d phases and the run)", len(table), len(rows)+1, len(inf.Phases))
	}
	for i, p := range rows {
		r := table[i+1]
		// phase, knobs, s, sent, ok, failed, incompl., dropped, req/s, ...
		if r[3] != strconv.FormatInt(p.Sent, 10) || r[4] != strconv.FormatInt(p.Completed, 10) || r[7] != strconv.FormatInt(p.Dropped, 10) ||
			r[8] != fmt.Sprintf("%.2f", p.RequestThroughput) {
			t.Errorf("summary row %d: %q, want sent %d, ok %d, dropped %d, %.2f req/s", i, r, p.Sent, p.Completed, p.Dropped, p.RequestThroughput)
		}
	}
}

// textTable is the comparison table of the run's text, a row of cells
// (split at runs of two spaces) per statistic.
func textTable(out string) [][][]string {
	cols := regexp.MustCompile(`\s{2,}`)
	var tables [][][]string
	var cur [][]string
	in := false
	for _, l := range strings.Split(out, "\n") {
		f := cols.Split(strings.TrimSpace(l), -1)
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "statistic "):
			in, cur = true, nil
		case in && len(f) == 7:
			cur = append(cur, f)
		case in:
			tables, in = append(tables, cur), false
		}
	}
	return tables
}

// checkComparison holds the page's comparison tables to the text's: the
// same cells, units, deltas, intervals and verdicts.
func checkComparison(t *testing.T, page [][][]string, text string) {
	t.Helper()
	want := textTable(text)
	if len(page) != len(want) || len(want) == 0 {
		t.Fatalf("%d comparison tables on the page, %d in the text", len(page), len(want))
	}
	judged := 0
	for i, w := range want {
		got := page[i][1:]
		if len(got) != len(w) {
			t.Fatalf("comparison %d: %d rows, the text %d", i, len(got), len(w))
		}
		for j := range w {
			if strings.Join(got[j], "|") != strings.Join(w[j], "|") {
				t.Errorf("comparison %d row %d: page %q, text %q", i, j, got[j], w[j])
			}
			if w[j][4] != "—" {
				judged++
			}
		}
	}
	if judged == 0 {
		t.Error("no statistic judged: the intervals are not tested")
	}
}

// rtRun runs infertop with args and draws its JSON; it returns the
// result, the page, and the run's stdout.
func rtRun(t *testing.T, args []string, codes ...int) (rtResult, string, string) {
	t.Helper()
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(append(append([]string{"run"}, args...), "--json", jsonPath), &out, &errb)
	t.Logf("run: exit %d in %v", code, time.Since(start).Round(time.Millisecond))
	ok := false
	for _, c := range append(codes, 0) {
		ok = ok || code == c
	}
	if !ok {
		t.Fatalf("run: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	var rout, rerr bytes.Buffer
	if code := run([]string{"report", jsonPath, "-o", htmlPath}, &rout, &rerr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, rerr.String())
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	// Chromium, where installed: the page loads without a console
	// message and every chart drew.
	if bin, err := exec.LookPath("chromium"); err == nil {
		dom, logs := chromium(t, bin, htmlPath, "--dump-dom")
		if strings.Contains(logs, ":CONSOLE") {
			t.Errorf("console: %s", logs)
		}
		if seen, err := checkCharts(dom); err != nil || len(seen) == 0 {
			t.Errorf("in Chromium: %v (charts %v)", err, seen)
		}
	}
	return readResult(t, jsonPath), string(page), out.String()
}

// TestReportRoundTrip: every kind of run, drawn and read back.
func TestReportRoundTrip(t *testing.T) {
	short := []string{"--prompt-tokens", "16", "--output-tokens", "6", "--drain", "5s"}
	t.Run("plain, with telemetry", func(t *testing.T) {
		t.Parallel()
		res, page, _ := rtRun(t, append([]string{"--duration", "2s", "-c", "4"}, short...))
		charts := readCharts(t, page)
		checkTimeCharts(t, charts, &res.Infertop, "")
		checkSummary(t, readTables(page)["wide phases"][0], &res.Infertop)
		if res.Infertop.Telemetry == nil || res.Infertop.Telemetry.PowerW == nil {
			t.Fatal("the embedded sim's run has no telemetry")
		}
		checkSeries(t, charts, "power-time", "power", res.Infertop.Telemetry.T, col2(res.Infertop.Telemetry.PowerW))
	})
	t.Run("stages", func(t *testing.T) {
		t.Parallel()
		res, page, _ := rtRun(t, append([]string{"--stages", "concurrency=2,duration=1s;concurrency=8,duration=1s"}, short...))
		checkTimeCharts(t, readCharts(t, page), &res.Infertop, "")
		checkSummary(t, readTables(page)["wide phases"][0], &res.Infertop)
		if !strings.Contains(page, `class="marklabel"`) {
			t.Error("no phase marked")
		}
	})
	t.Run("open loop, without telemetry", func(t *testing.T) {
		t.Parallel()
		p, _ := sim.Preset("fast")
		srv := simtest.Start(t, p)
		res, page, _ := rtRun(t, append([]string{"--url", srv.URL, "--server-metrics", "off", "--rate", "30", "--duration", "2s"}, short...))
		if n := res.Infertop.ArrivalsScheduled; n == 0 || !strings.Contains(page, fmt.Sprintf("Open loop: %d arrivals scheduled", n)) {
			t.Errorf("no open loop's arrivals (%d in the JSON) on the page", n)
		}
		if res.Infertop.Telemetry != nil || strings.Contains(page, `id="server-queue"`) {
			t.Error("telemetry drawn for a run without it")
		}
		checkTimeCharts(t, readCharts(t, page), &res.Infertop, "")
		checkSummary(t, readTables(page)["wide phases"][0], &res.Infertop)
	})
	t.Run("compare", func(t *testing.T) {
		t.Parallel()
		p, _ := sim.Preset("fast")
		p.StepBase, p.Jitter = 10*time.Millisecond, 0.05
		slow := p
		slow.StepBase = 40 * time.Millisecond
		b, c := simtest.Start(t, p), simtest.Start(t, slow)
		res, page, text := rtRun(t, []string{"--url", b.URL, "--compare", c.URL, "--duration", "3s", "-c", "8", "--prompt-tokens", "16",
			"--output-tokens", "4", "--server-metrics", "off", "--regression", "tpot_p50<+10%", "--compare-min-seconds", "2"}, 1)
		checkComparison(t, readTables(page)["compare"], text)
		if res.Infertop.Compare.Pair.Baseline.Report != compare.BaselineReport {
			t.Errorf("the baseline's report is %q", res.Infertop.Compare.Pair.Baseline.Report)
		}
		if !strings.Contains(page, "the canary regressed") && !strings.Contains(page, "no regression found") {
			t.Error("no gate outcome")
		}
		charts := readCharts(t, page)
		checkTimeCharts(t, charts, &res.Infertop, "baseline ")
		var can rtResult
		if err := json.Unmarshal(res.Infertop.Compare.Pair.Canary, &can); err != nil {
			t.Fatal(err)
		}
		checkTimeCharts(t, charts, &can.Infertop, "canary ")
	})
	t.Run("split", func(t *testing.T) {
		t.Parallel()
		res, page, text := rtRun(t, []string{"--sim-preset", "fast", "--sim-step-base", "10ms", "--sim-canary", "0.5:3:0:0s", "--split-by", "header:X-Infertop-Backend",
			"--duration", "3s", "-c", "8", "--prompt-tokens", "8", "--output-tokens", "4", "--regression", "e2el_p50<+10%", "--compare-min-seconds", "2"}, 1)
		sp := res.Infertop.Compare.Split
		if sp == nil || len(sp.Groups) == 0 {
			t.Fatalf("no split in the JSON: %+v", res.Infertop.Compare)
		}
		checkComparison(t, readTables(page)["compare"], text)
		for _, g := range sp.Groups {
			if !strings.Contains(html.UnescapeString(page), g.Verdict) {
				t.Errorf("no verdict line for group %d: %q", g.Index, g.Verdict)
			}
		}
		checkTimeCharts(t, readCharts(t, page), &res.Infertop, "")
	})
	search := []string{"--sim-preset", "small", "--prompt-tokens", "16", "--output-tokens", "6", "--drain", "5s", "--from", "2",
		"--resolution", "50%", "--step-warmup", "200ms", "--step-min-requests", "10", "--step-min-time", "500ms", "--step-max-time", "1500ms"}
	t.Run("find-max", func(t *testing.T) {
		t.Parallel()
		res, page, _ := rtRun(t, append([]string{"--find-max", "ttft_p99<=150ms", "--to", "8"}, search...), 1)
		c := res.Infertop.Capacity
		if c == nil || len(c.Steps) < 2 {
			t.Fatalf("capacity: %+v", c)
		}
		steps := readTables(page)["steps"]
		if len(steps) != 1 || len(steps[0]) != len(c.Steps)+1 {
			t.Fatalf("step table: %q, for %d steps", steps, len(c.Steps))
		}
		x, y, o := []float64{}, []float64{}, []float64{}
		for i, s := range c.Steps {
			x, y, o = append(x, s.Load), append(y, orNaN(s.P99TTFT)), append(o, orNaN(s.OutTokPerSec))
			if r := steps[0][i+1]; r[0] != strconv.Itoa(s.N) || r[7] != report.FormatKnown(s.P99TTFT, "%.2fms", 1) || (r[12] == "◀ knee") != (c.At != nil && c.At.Step == s.N) {
				t.Errorf("step row %q, JSON %+v", r, s)
			}
		}
		charts := readCharts(t, page)
		checkSeries(t, charts, "capacity-latency-0", "TTFT p99", x, y)
		checkSeries(t, charts, "capacity-throughput-0", "output tok/s", x, o)
	})
	t.Run("matrix", func(t *testing.T) {
		t.Parallel()
		res, page, _ := rtRun(t, append([]string{"--matrix", "prompt=16,48;output=6", "--find-max", "ttft_p99<=150ms", "--to", "4"}, search...), 1)
		m := res.Infertop.Capacity.Matrix
		if m == nil || len(m.Cells) != 2 {
			t.Fatalf("matrix: %+v", res.Infertop.Capacity)
		}
		cells := readTables(page)["matrix"]
		if len(cells) != 1 || len(cells[0]) != len(m.Prompts)+1 {
			t.Fatalf("cell table %q", cells)
		}
		charts := readCharts(t, page)
		for _, cell := range m.Cells {
			var x, y []float64
			for _, s := range cell.Steps {
				x, y = append(x, s.Load), append(y, orNaN(s.OutTokPerSec))
			}
			checkSeries(t, charts, "matrix-throughput", fmt.Sprintf("prompt %d, output %d", cell.Prompt, cell.Output), x, y)
		}
	})
}

// TestReportTwoRuns: two results side by side, each run's series on the
// same charts under its name.
func TestReportTwoRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths []string
	for i, c := range []string{"2", "6"} {
		p := filepath.Join(dir, fmt.Sprintf("c%s.json", c))
		var out, errb bytes.Buffer
		if code := run([]string{"run", "--duration", "2s", "-c", c, "--prompt-tokens", "16", "--output-tokens", "6", "--json", p}, &out, &errb); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, errb.String())
		}
		paths = append(paths, p)
	}
	htmlPath := filepath.Join(dir, "two.html")
	var out, errb bytes.Buffer
	if code := run(append(append([]string{"report"}, paths...), "-o", htmlPath), &out, &errb); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	page, _ := os.ReadFile(htmlPath)
	charts := readCharts(t, string(page))
	tables := readTables(string(page))["wide phases"]
	if len(tables) != 2 {
		t.Fatalf("%d summary tables, want 2", len(tables))
	}
	for i, p := range paths {
		res := readResult(t, p)
		checkTimeCharts(t, charts, &res.Infertop, strings.TrimSuffix(filepath.Base(p), ".json")+" ")
		checkSummary(t, tables[i], &res.Infertop)
	}
}

// orNaN is a step's figure, or NaN (a gap) where nothing measured it.
func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}
