package htmlreport

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
)

// arrayFlags are the repeatable flags, which the manifest stores as
// pflag prints a string array: "[a,b]", CSV inside brackets.
var arrayFlags = map[string]bool{"slo": true, "find-max": true, "regression": true}

// Command is the command line that reproduces the run: `infertop run`
// and every flag that was set, from the manifest's settings, which hold
// no secret (URLs without credentials, header values and body keys
// redacted): what is redacted there stays redacted here.
func (r pageRun) Command() string {
	set := r.res.Infertop.Manifest.Settings
	if len(set) == 0 {
		return ""
	}
	args := []string{"infertop", "run"}
	keys := sortedKeys(set)
	for i, k := range keys { // the target first
		if k == "url" {
			copy(keys[1:i+1], keys[:i])
			keys[0] = k
		}
	}
	for _, k := range keys {
		v := set[k]
		switch {
		case k == "header":
			for _, h := range strings.Split(v, "; ") {
				args = append(args, "--header", shellQuote(h))
			}
		case arrayFlags[k] && strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]"):
			vals, err := csv.NewReader(strings.NewReader(v[1 : len(v)-1])).Read()
			if err != nil {
				vals = []string{v}
			}
			for _, e := range vals {
				args = append(args, "--"+shellQuote(k), shellQuote(e))
			}
		case v == "true":
			args = append(args, "--"+shellQuote(k))
		default:
			args = append(args, "--"+shellQuote(k), shellQuote(v))
		}
	}
	return sanitize.Text(strings.Join(args, " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=,@%+", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// maxServerText bounds what the page shows of one text the server sent
// (a model name, an error message, a description).
const maxServerText = 300

// Server is what the server said of itself, a line per thing: the models
// it lists (with their context length), anything else as short text.
func (r pageRun) Server() []string {
	srv := r.res.Infertop.Manifest.Server
	var out []string
	for _, k := range sortedKeys(srv) {
		raw := srv[k]
		if k == "models" {
			var l struct {
				Data []struct {
					ID     string `json:"id"`
					MaxLen int64  `json:"max_model_len"`
					Owner  string `json:"owned_by"`
				} `json:"data"`
			}
			if json.Unmarshal(raw, &l) == nil && len(l.Data) > 0 {
				var ms []string
				for i, m := range l.Data {
					if i == 8 {
						ms = append(ms, fmt.Sprintf("and %d more", len(l.Data)-i))
						break
					}
					s := clip(m.ID)
					var about []string
					if m.MaxLen > 0 {
						about = append(about, fmt.Sprintf("context %d tokens", m.MaxLen))
					}
					if m.Owner != "" {
						about = append(about, "from "+clip(m.Owner))
					}
					if len(about) > 0 {
						s += " (" + strings.Join(about, ", ") + ")"
					}
					ms = append(ms, s)
				}
				out = append(out, "models: "+strings.Join(ms, ", "))
				continue
			}
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		out = append(out, clip(k)+": "+clip(s))
	}
	return out
}

// clip is text from the server, sanitised and cut short.
func clip(s string) string {
	if len(s) > maxServerText {
		s = strings.ToValidUTF8(s[:maxServerText], "") + "…"
	}
	return sanitize.Text(s)
}

// comparisonView is one comparison as the text prints it: the table of
// statistics (units, percent deltas, intervals, requests, verdicts),
// the regressions judged and the gate's outcome, and the one-line verdict.
type comparisonView struct {
	Heading, Intervals string
	Cols               [2]string
	Rows               []compareRow
	Gates              []gateRow
	// Outcome is the gate's ("the canary regressed", "no regression
	// found"), first: it decides the exit code; empty without
	// --regression. OutcomeBad marks one that fails the gate without a
	// regression (a gate not judged).
	Outcome               string
	Regressed, OutcomeBad bool
	Verdict               string
}

// compareRow is one statistic compared.
type compareRow struct {
	Stat, Baseline, Canary, Delta, Interval, Requests, Verdict string
	// Class is bad for a verdict of worse, ok for better.
	Class string
}

// gateRow is one regression judged.
type gateRow struct {
	Text, Class string
}

// comparison formats c; who is the newer side as sentences name it.
func comparison(c compare.ComparisonJSON, heading string, cols [2]string, who string) comparisonView {
	v := comparisonView{Heading: heading, Cols: cols, Regressed: c.Regressed, Verdict: sanitize.Text(c.Verdict),
		Intervals: compare.IntervalsText(strings.HasPrefix(c.Method, compare.AnytimeMethod), c.Confidence, c.FamilyConfidence, len(c.Metrics), c.Resamples)}
	for _, m := range c.Metrics {
		label := sanitize.Text(m.Name)
		if st, err := compare.ParseStat(m.Name); err == nil {
			label = st.Label()
		}
		row := compareRow{Stat: label, Baseline: statValue(m.Unit, m.Baseline, m.NBaseline), Canary: statValue(m.Unit, m.Canary, m.NCanary),
			Delta: "—", Interval: "—", Requests: compare.RequestsText(m.NBaseline, m.NCanary), Verdict: sanitize.Text(compare.VerdictWord(m.Verdict))}
		if m.Delta != nil {
			row.Delta = compare.DeltaText(m.DeltaUnit, *m.Delta)
		}
		if len(m.Interval) == 2 {
			row.Interval = compare.DeltaText(m.DeltaUnit, m.Interval[0]) + "…" + compare.DeltaText(m.DeltaUnit, m.Interval[1])
		}
		switch {
		case strings.HasSuffix(m.Verdict, "worse"):
			row.Class = "bad"
		case strings.HasSuffix(m.Verdict, "better"):
			row.Class = "ok"
		}
		v.Rows = append(v.Rows, row)
	}
	notJudged := 0
	for _, g := range c.Regressions {
		r := gateRow{Text: sanitize.Text(g.Text), Class: "ok"}
		switch {
		case g.Breached:
			r.Class = "bad"
		case !g.Judged:
			r.Class, notJudged = "bad", notJudged+1
		}
		v.Gates = append(v.Gates, r)
	}
	switch {
	case len(c.Regressions) == 0:
	case c.Regressed:
		v.Outcome = who + " regressed"
	case notJudged > 0: // what decides the exit code first, and never in the colour of a pass
		v.Outcome = fmt.Sprintf("gate not passed: %d of %d not judged: no gate passed for them (too few requests); none breached", notJudged, len(c.Regressions))
		v.OutcomeBad = true
	default:
		v.Outcome = "no regression found"
	}
	return v
}

// statValue is one side's statistic as the text writes it.
func statValue(unit string, v *float64, n int) string {
	if v == nil {
		return "—"
	}
	return compare.ValueText(unit, *v, n)
}

// splitView is a split: its groups, a comparison per newer group, the
// verdict.
type splitView struct {
	By, Baseline, Ungrouped string
	Newer                   []string
	Groups                  []comparisonView
	Regressed               bool
	Verdict                 string
}

// groupLabel is a group as the text names it.
func groupLabel(index int, name string) string {
	if index == 0 {
		return "other groups"
	}
	return fmt.Sprintf("group %d (%s)", index, clip(name))
}

func split(s *compare.SplitJSON) *splitView {
	v := &splitView{By: sanitize.Text(s.SplitBy), Regressed: s.Regressed, Verdict: sanitize.Text(s.Verdict)}
	base := "group 1"
	if b := s.BaselineGroup; b != nil {
		base = groupLabel(1, b.Group)
		v.Baseline = fmt.Sprintf("%s, %d requests", base, b.Requests)
		if b.Named {
			v.Baseline += " (named by --baseline-group)"
		}
	}
	for _, g := range s.Groups {
		l := groupLabel(g.Index, g.Group)
		v.Newer = append(v.Newer, fmt.Sprintf("%s, %d requests", l, g.Requests))
		col := "other"
		if g.Index > 0 {
			col = fmt.Sprintf("group %d", g.Index)
		}
		v.Groups = append(v.Groups, comparison(g.ComparisonJSON, "Comparison · "+base+" · "+l, [2]string{"group 1", col}, l))
	}
	if len(v.Groups) == 1 && v.Groups[0].Verdict == v.Verdict {
		v.Verdict = "" // the one group's line, said above
	}
	if u := s.Ungrouped; u.Requests > 0 {
		v.Ungrouped = fmt.Sprintf("%d requests (%d failed), left out", u.Requests, u.Failed)
	}
	return v
}

// capacityView is one search: what it found, the figures there, the
// curve with the knee and the table of steps.
type capacityView struct {
	ID, Title, Result, There string
	Found                    bool
	Over                     string
	Steps                    []stepRow
	Charts                   []*chart
}

// stepRow is one step as the text's table has it.
type stepRow struct {
	N, Phase                                                        int
	Load, Req, Out, Good, TTFT50, TTFT99, E2E50, E2E99, Errors, Why string
	Held, Knee                                                      bool
}

func fms(v float64) string { return fmt.Sprintf("%.2fms", v) }

// nullGap is *v, or NaN (a gap in a curve) when it was not measured.
func nullGap(v *float64) float64 {
	if v == nil {
		return nan()
	}
	return *v
}

func search(id string, over capacity.Over, objs []string, s report.SearchJSON) capacityView {
	v := capacityView{ID: id, Found: s.Found, Over: string(over)}
	knee := -1
	if s.At != nil && (s.SearchRunJSON == nil || !s.Fixed) {
		knee = s.At.Step
	}
	if r := s.SearchRunJSON; r != nil {
		v.Title = fmt.Sprintf("Capacity · prompt %d, output %d tokens · %s", r.Prompt, r.Output, over)
		why := sanitize.Text(r.Why)
		switch {
		case r.Fixed && len(s.Steps) > 0:
			v.Result = over.Format(s.Steps[0].Load) + " (given, not searched)"
		case s.Found && s.MaxLoad != nil:
			v.Result = fmt.Sprintf("the most at which %s held: %s (%s)", strings.Join(objs, " and "), over.Format(*s.MaxLoad), why)
		default:
			v.Result = fmt.Sprintf("no load held %s (%s)", strings.Join(objs, " and "), why)
		}
	}
	if at := s.At; at != nil {
		v.There = fmt.Sprintf("there: %.1f req/s · %.1f tok/s out · goodput %.1f req/s · errors %.2f%%", at.ReqPerSec, at.OutTokPerSec, at.GoodPerSec, at.ErrorRate*100)
	}
	for _, st := range s.Steps {
		v.Steps = append(v.Steps, stepRow{N: st.N, Phase: st.Phase, Load: over.Format(st.Load), Req: report.FormatKnown(st.ReqPerSec, "%.1f", 1),
			Out: report.FormatKnown(st.OutTokPerSec, "%.1f", 1), Good: report.FormatKnown(st.GoodPerSec, "%.1f", 1), TTFT50: report.FormatKnown(st.P50TTFT, "%.2fms", 1), TTFT99: report.FormatKnown(st.P99TTFT, "%.2fms", 1),
			E2E50: report.FormatKnown(st.P50E2E, "%.2fms", 1), E2E99: report.FormatKnown(st.P99E2E, "%.2fms", 1), Errors: report.FormatKnown(st.ErrorRate, "%.2f%%", 100), Why: sanitize.Text(st.Why),
			Held: st.Held, Knee: st.N == knee})
	}
	if len(s.Steps) == 0 {
		return v
	}
	steps := sortedLoads(s.Steps)
	x := make([]float64, len(steps))
	for i, st := range steps {
		x[i] = st.Load
	}
	pick := func(f func(report.StepJSON) *float64) []float64 { // a figure not measured is a gap
		y := make([]float64, len(steps))
		for i, st := range steps {
			y[i] = nullGap(f(st))
		}
		return y
	}
	var marks []mark
	note := ""
	if s.At != nil {
		marks = append(marks, mark{X: s.At.Load, Label: "knee " + over.Format(s.At.Load)})
	}
	if s.SearchRunJSON != nil && s.BrokeAt > 0 {
		marks = append(marks, mark{X: s.BrokeAt, Label: "broke " + over.Format(s.BrokeAt)})
	}
	if len(objs) > 0 {
		note = "objectives: " + strings.Join(objs, ", ")
	}
	lat := &chart{ID: "capacity-latency" + id, Title: "Latency against " + string(over), YUnit: "ms", XUnit: string(over), Points: true, Note: note, Marks: marks}
	lat.Lines = []line{
		{Name: "TTFT p50", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.P50TTFT }), Color: 0},
		{Name: "TTFT p99", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.P99TTFT }), Color: 2},
		{Name: "E2E p50", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.P50E2E }), Color: 1},
		{Name: "E2E p99", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.P99E2E }), Color: 3},
	}
	// Tokens and requests on charts of their own: req/s on a tok/s axis
	// lay flat along the bottom, a thousand times smaller.
	thr := &chart{ID: "capacity-throughput" + id, Title: "Output throughput against " + string(over), YUnit: "tok/s", XUnit: string(over), Points: true, Marks: marks}
	thr.Lines = []line{
		{Name: "output tok/s", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.OutTokPerSec }), Color: 0},
	}
	reqs := &chart{ID: "capacity-requests" + id, Title: "Requests against " + string(over), YUnit: "req/s", XUnit: string(over), Points: true, Marks: marks}
	reqs.Lines = []line{
		{Name: "req/s", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.ReqPerSec }), Color: 1, Weight: 2}, // under goodput, often equal
		{Name: "goodput req/s", X: x, Y: pick(func(s report.StepJSON) *float64 { return s.GoodPerSec }), Color: 4},
	}
	v.Charts = []*chart{lat, thr, reqs}
	return v
}

// matrixView is a matrix: the table of the load found per cell (rows
// the prompt lengths, columns the output lengths) and a curve per cell.
type matrixView struct {
	Title   string
	Outputs []int
	Rows    []matrixRow
	Charts  []*chart
}

// matrixRow is one prompt length's cells.
type matrixRow struct {
	Prompt int
	Cells  []string
}

// maxMatrixCurves bounds the cells drawn as curves.
const maxMatrixCurves = 16

func matrix(c *report.CapacityJSON, over capacity.Over) *matrixView {
	m := c.Matrix
	v := &matrixView{Title: "Throughput at the load given", Outputs: m.Outputs}
	if len(c.Objectives) > 0 {
		v.Title = "Max throughput under " + strings.Join(c.Objectives, " and ")
	}
	cell := func(p, o int) string {
		for _, s := range m.Cells {
			if s.SearchRunJSON == nil || s.Prompt != p || s.Output != o {
				continue
			}
			switch {
			case s.At != nil:
				return fmt.Sprintf("%s · %.0f tok/s · %s · %s", over.Format(s.At.Load), s.At.OutTokPerSec, fms(s.At.Latency["ttft"].P99), fms(s.At.Latency["e2el"].P99))
			case len(s.Steps) > 0:
				return "none held"
			}
		}
		return "—"
	}
	for _, p := range m.Prompts {
		row := matrixRow{Prompt: p}
		for _, o := range m.Outputs {
			row.Cells = append(row.Cells, cell(p, o))
		}
		v.Rows = append(v.Rows, row)
	}
	tokc := &chart{ID: "matrix-throughput", Title: "Output tok/s against " + string(over) + ", a line per cell", YUnit: "tok/s", XUnit: string(over), Points: true}
	latc := &chart{ID: "matrix-ttft", Title: "TTFT p99 against " + string(over) + ", a line per cell", YUnit: "ms", XUnit: string(over), Points: true}
	for i, s := range m.Cells {
		if i == maxMatrixCurves {
			tokc.Note = fmt.Sprintf("the first %d cells drawn", maxMatrixCurves)
			break
		}
		if s.SearchRunJSON == nil || len(s.Steps) == 0 {
			continue
		}
		steps := sortedLoads(s.Steps)
		x, yt, yl := make([]float64, len(steps)), make([]float64, len(steps)), make([]float64, len(steps))
		for j, st := range steps {
			x[j], yt[j], yl[j] = st.Load, nullGap(st.OutTokPerSec), nullGap(st.P99TTFT)
		}
		name := fmt.Sprintf("prompt %d, output %d", s.Prompt, s.Output)
		tokc.Lines = append(tokc.Lines, line{Name: name, X: x, Y: yt, Color: i})
		latc.Lines = append(latc.Lines, line{Name: name, X: x, Y: yl, Color: i})
	}
	if len(tokc.Lines) > 0 {
		v.Charts = []*chart{tokc, latc}
	}
	return v
}

// buildKinds adds what the first run's kind brings: the comparison, the
// split, the capacity search or matrix.
func (pg *page) buildKinds() {
	inf := &pg.Runs[0].res.Infertop
	if c := inf.Compare; c != nil {
		if p := c.Pair; p != nil {
			canary := ""
			if len(pg.Runs) == 2 {
				canary = pg.Runs[1].res.Infertop.Manifest.URL
			}
			v := comparison(p.ComparisonJSON, "Comparison · baseline "+sanitize.Text(p.Baseline.URL)+" · canary "+sanitize.Text(canary),
				[2]string{"baseline", "canary"}, "the canary")
			pg.Pair = &v
		}
		if s := c.Split; s != nil {
			pg.Split = split(s)
		}
	}
	if c := inf.Capacity; c != nil {
		over := capacity.Over(c.Over)
		if over == "" {
			over = capacity.Concurrency
		}
		objs := make([]string, len(c.Objectives))
		for i, o := range c.Objectives {
			objs[i] = sanitize.Text(o)
		}
		if c.Matrix != nil {
			pg.Matrix = matrix(c, over)
			for i, s := range c.Matrix.Cells {
				if i == maxMatrixCurves {
					break
				}
				pg.Capacity = append(pg.Capacity, search(fmt.Sprintf("-%d", i), over, objs, s))
			}
		} else {
			pg.Capacity = append(pg.Capacity, search("-0", over, objs, c.SearchJSON))
		}
	}
}
