package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/sparkline"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/themes"
)

// smallPanels is the row of four: TTFT, throughput, errors, in-flight.
func (m *Model) smallPanels(w, h int) string {
	pw := (w - 3) / 4
	last := w - 3 - 3*pw
	return joinHorizontal(
		m.ttftPanel(pw, h), " ", m.throughputPanel(pw, h), " ", m.errorsPanel(pw, h), " ", m.inflightPanel(last, h))
}

// spark draws one bar per second of the newest seconds, scaled to the
// largest value shown (never to a maximum that only grows).
func (m *Model) spark(name string, w, h int, style themes.Paint, value func(load.Point) float64) []string {
	return m.sparkOf(name, m.snap.Series, w, h, style, value)
}

// sparkOf is spark over the series pts (the canary's, in a comparison).
func (m *Model) sparkOf(name string, pts []load.Point, w, h int, style themes.Paint, value func(load.Point) float64) []string {
	if h <= 0 || w <= 0 {
		return nil
	}
	if len(pts) > w {
		pts = pts[len(pts)-w:]
	}
	top := 0.0
	vals := make([]float64, len(pts))
	for i, p := range pts {
		vals[i] = value(p)
		top = max(top, vals[i])
	}
	if c := m.sparks[name]; c != nil && c.w == w && c.h == h && slices.Equal(c.vals, vals) {
		return c.lines
	}
	sl := sparkline.New(w, h, sparkline.WithNoAutoMaxValue(), sparkline.WithStyle(style.Style))
	sl.SetMax(max(top, 1e-9))
	sl.PushAll(vals)
	sl.Draw()
	lines := strings.Split(m.cells.view(&sl.Canvas), "\n")
	m.sparks[name] = &sparkDrawing{w: w, h: h, vals: vals, lines: lines}
	return lines
}

// sparkDrawing is a sparkline's last drawing. The series changes once a
// second and the dashboard redraws four times a second and on every key;
// ntcharts styles each cell, which made the sparklines a third of a frame.
type sparkDrawing struct {
	w, h  int
	vals  []float64
	lines []string
}

// embeds reports whether the target is an embeddings API: nothing
// streams, so the TTFT and output panels give way to E2E and inputs.
func embeds(s *load.Snapshot) bool {
	kind, _, _ := strings.Cut(s.Target.API, ",") // "openai-embeddings, not streamed"
	return probe.Kind(kind).Embeds()
}

// e2ePanel stands in for the TTFT panel where nothing streams.
// In the open loop it shows E2E*, from the intended send time.
func (m *Model) e2ePanel(w, h int) string {
	t, s := m.theme, &m.snap
	met, pick := load.E2E, func(p load.Point) float64 { return float64(p.E2EP99) }
	if m.starred(met) != met {
		met, pick = load.E2EIntended, func(p load.Point) float64 { return float64(p.E2EIntendedP99) }
	}
	d := s.Latency[met]
	lines := []string{m.title(met.String(), "", w), t.Muted.Render("p50 ") + t.P50.Render(Duration(d.P50)),
		t.Muted.Render("p99 ") + t.P99.Render(Duration(d.P99))}
	lines = append(lines, m.spark(met.String(), w, h-len(lines), t.Spark, pick)...)
	return block(lines, w, h)
}

func (m *Model) ttftPanel(w, h int) string {
	t, s := m.theme, &m.snap
	if embeds(s) {
		return m.e2ePanel(w, h)
	}
	// In the open loop TTFT*, from the intended send time (the
	// latency table's note says so beside it).
	met, pick := load.TTFT, func(p load.Point) float64 { return float64(p.TTFTP99) }
	if m.starred(met) != met {
		met, pick = load.TTFTIntended, func(p load.Point) float64 { return float64(p.TTFTIntendedP99) }
	}
	d := s.Latency[met]
	p99, last := t.Muted.Render("p99 ")+t.P99.Render(Duration(d.P99)), t.Muted.Render("last s "+Duration(time.Duration(pick(lastPoint(s)))))
	lines := []string{m.title(met.String(), "", w), t.Muted.Render("p50 ") + t.P50.Render(Duration(d.P50))}
	if full := p99 + t.Muted.Render(" (") + last + t.Muted.Render(")"); blockWidth(full) <= w {
		lines = append(lines, full)
	} else { // the last second's p99 on a line of its own rather than cut
		lines = append(lines, p99, last)
	}
	lines = append(lines, m.spark(met.String(), w, h-len(lines), t.Spark, pick)...)
	return block(lines, w, h)
}

func lastPoint(s *load.Snapshot) load.Point {
	if n := len(s.Series); n > 0 {
		return s.Series[n-1]
	}
	return load.Point{}
}

func (m *Model) throughputPanel(w, h int) string {
	t, s := m.theme, &m.snap
	est := ""
	if s.OutputEstimated {
		est = "~"
	}
	if embeds(s) { // no output: requests and input tokens, over time the input
		lines := []string{
			m.title("Throughput", "", w),
			t.Value.Render(num(s.ReqPerSec)) + t.Muted.Render(" req/s"),
			t.Text.Render(num(s.InTokPerSec)) + t.Muted.Render(" tok/s in"),
		}
		lines = append(lines, m.spark("intokens", w, h-len(lines), t.Spark, func(p load.Point) float64 { return float64(p.InTokens) })...)
		return block(lines, w, h)
	}
	lines := []string{
		m.title("Throughput", "", w),
		t.Value.Render(est+num(s.OutTokPerSec)) + t.Muted.Render(" tok/s out"),
		// Output tokens are counted as they arrive; input tokens are known
		// from the server's usage only, at the end of each request.
		firstFit(w, t.Text.Render(num(s.ReqPerSec))+t.Muted.Render(" req/s · ")+t.Text.Render(num(s.InTokPerSec))+t.Muted.Render(" in, at end"),
			t.Text.Render(num(s.ReqPerSec))+t.Muted.Render(" req/s · ")+t.Text.Render(num(s.InTokPerSec))+t.Muted.Render(" in")),
	}
	lines = append(lines, m.spark("tokens", w, h-len(lines), t.Spark, func(p load.Point) float64 { return float64(p.OutTokens) })...)
	return block(lines, w, h)
}

// errorsPanel is the window's error rate and classes, then the run's most
// frequent error in full, wrapped over the lines the panel has (a message
// cut at 19 cells says nothing), then errors over time in what is left.
func (m *Model) errorsPanel(w, h int) string {
	t, s := m.theme, &m.snap
	rate := m.errorRateStyle(s.ErrorRate).Render(pct(s.ErrorRate))
	lines := []string{
		m.title("Errors", "", w),
		rate + t.Muted.Render(fmt.Sprintf(" · %d in %s", s.Failed, window(s.Window))),
	}
	if r, ok := s.InvalidRate(); ok { // answers judged (structured output, tools): the quality guard's figure
		bad := m.errorRateStyle(r).Render(pct(r))
		lines = append(lines, firstFit(w, bad+t.Muted.Render(fmt.Sprintf(" invalid answers · %d of %d", s.Invalid, s.Valid+s.Invalid)), bad+t.Muted.Render(" invalid")))
	}
	// The classes on one line, each whole, the run's total dropped first
	// (the top error under them needs the lines more); on two when the
	// classes alone need them.
	var classes []part
	for _, c := range probe.FailureClasses() {
		if n := s.ByClass[c]; n > 0 {
			classes = append(classes, part{t.Text.Render(c.String()) + " " + t.Bad.Render(fmt.Sprint(n)), 1})
		}
	}
	if len(classes) == 0 {
		classes = []part{{t.Muted.Render("none"), 0}}
	}
	n := min(len(flow(classes, " ", w)), 2)
	classes = append(classes, part{t.Muted.Render(fmt.Sprintf("· %d total", s.TotalFailed)), 2})
	lines = append(lines, flowParts(classes, " ", w, n)...)
	if room := h - len(lines); room > 0 {
		lines = append(lines, m.topError(w, room)...)
	}
	lines = append(lines, m.spark("errors", w, h-len(lines), t.Bad, func(p load.Point) float64 { return float64(p.Failed) })...)
	return block(lines, w, h)
}

// errorRateStyle is an error rate's colour: good at none, a warning
// below 5 %, bad from there.
func (m *Model) errorRateStyle(rate float64) themes.Paint {
	switch {
	case rate >= 0.05:
		return m.theme.Bad
	case rate > 0:
		return m.theme.Warn
	}
	return m.theme.Good
}

// topError is the most frequent error with its count, wrapped into at most
// n lines of w cells; when there are others, or it does not fit, it says
// so and that e lists them all. Without an error table (a snapshot from
// before the engine kept one), the newest error stands in.
func (m *Model) topError(w, n int) []string {
	t, s := m.theme, &m.snap
	if len(s.Errors) == 0 {
		if s.LastError == "" {
			return nil
		}
		text := t.Muted.Render(clock(s.LastErrorAt)+" ") + t.Text.Render(sanitize.Text(s.LastError))
		return wrapInto(text, w, n, t.Muted.Render("… (e)"))
	}
	top := s.Errors[0]
	text := t.Bad.Render(fmt.Sprintf("%d×", top.Count)) + " " + t.Text.Render(top.Line())
	more := t.Muted.Render("… (e)")
	if k := len(s.Errors) - 1; k > 0 {
		text += t.Muted.Render(fmt.Sprintf(" · +%d more (e)", k))
		more = t.Muted.Render(fmt.Sprintf("… +%d (e)", k))
	}
	return wrapInto(text, w, n, more)
}

// oldestLimit is the age past which the oldest request in flight is
// flagged: ten times the window's p99 E2E, so that generations as long as
// this endpoint's usual ones pass, and never under 10 s, so that a fast
// endpoint's jitter does not flicker and a server hung from the start
// (no E2E yet) is still caught.
func oldestLimit(s *load.Snapshot) time.Duration {
	return max(10*time.Second, 10*s.Latency[load.E2E].P99)
}

func (m *Model) inflightPanel(w, h int) string {
	t, s := m.theme, &m.snap
	target := max(s.Knobs.Concurrency, 1)
	barW := max(w-2, 1)
	filled := min(barW, s.InFlight*barW/target)
	bar := t.Spark.Render(strings.Repeat("█", filled)) + t.Border.Render(strings.Repeat("░", barW-filled))
	lines := []string{
		m.title("In flight", "", w),
		t.Value.Render(fmt.Sprint(s.InFlight)) + t.Muted.Render(fmt.Sprintf(" of %d", s.Knobs.Concurrency)),
		bar,
	}
	if s.Knobs.Mode == load.OpenLoop {
		backlog := t.Muted.Render(fmt.Sprintf("backlog %d", s.Backlog))
		if s.Backlog > 0 {
			backlog = t.Warn.Render(fmt.Sprintf("backlog %d", s.Backlog))
		}
		lines[1] = t.Value.Render(fmt.Sprint(s.InFlight)) + t.Muted.Render(" in flight")
		lines[2] = backlog + t.Muted.Render(" · "+rateNum(s.Knobs.Rate, 4)+" req/s")
		if blockWidth(lines[2]) > w { // the rate whole rather than its unit
			lines[2] = backlog + t.Muted.Render(" · "+rateNum(s.Knobs.Rate, 4)+"/s")
		}
	}
	lines = append(lines, m.streamLines(w)...)
	lines = append(lines, m.spark("inflight", w, h-len(lines), t.Spark, func(p load.Point) float64 { return float64(p.InFlight) })...)
	return block(lines, w, h)
}

// streamLines say what the requests in flight are doing: waiting for
// their first token or generating, the oldest of each (a hung server shows
// as a number that grows, where the counts and rates above would only go
// quiet), and the streams whose server has stopped sending (a stall: no
// message for longer than load.StallAfter of the stream's own pace).
func (m *Model) streamLines(w int) []string {
	t, s := m.theme, &m.snap
	st := s.Streams
	v := func(n int) string { return t.Value.Render(fmt.Sprint(n)) }
	lines := []string{firstFit(w,
		v(st.Waiting)+t.Muted.Render(" waiting · ")+v(st.Generating)+t.Muted.Render(" generating"),
		v(st.Waiting)+t.Muted.Render(" wait · ")+v(st.Generating)+t.Muted.Render(" gen"))}
	age := func(d time.Duration) string {
		if d <= 0 {
			return t.Muted.Render("—")
		}
		return t.Value.Render(Duration(d))
	}
	switch {
	case s.OldestInFlight <= 0:
		lines = append(lines, t.Muted.Render("oldest —"))
	case s.OldestInFlight > oldestLimit(s):
		lines = append(lines, t.Warn.Render("oldest "+Duration(s.OldestInFlight)+" · hung?"))
	default:
		lines = append(lines, firstFit(w,
			t.Muted.Render("oldest ")+age(st.OldestWaiting)+t.Muted.Render(" wait · ")+age(st.OldestGenerating)+t.Muted.Render(" gen"),
			t.Muted.Render("oldest ")+age(s.OldestInFlight)))
	}
	if st.Stalled > 0 {
		lines = append(lines, firstFit(w,
			t.Warn.Render(fmt.Sprintf("%d stalled · silent %s", st.Stalled, Duration(st.LongestStall))),
			t.Warn.Render(fmt.Sprintf("%d stalled", st.Stalled))))
	}
	return lines
}

// firstFit is the first of the renderings that fits in w cells, or the
// last.
func firstFit(w int, options ...string) string {
	for _, o := range options {
		if blockWidth(o) <= w {
			return o
		}
	}
	return options[len(options)-1]
}

// shownPhase says whether the phase table has a row for ph: not for a
// setting passed through on the way to another (keys held down).
func shownPhase(ph load.Phase) bool {
	return ph.Current || ph.Warmup || ph.Completed+ph.Failed > 0 && ph.End-ph.Start >= time.Second
}

// phasesPanel is the table of phases, newest at the bottom.
func (m *Model) phasesPanel(w, h int) string {
	t, s := m.theme, &m.snap
	lines := []string{m.title("Phases", "one row per knob setting", w)}
	cols := []struct {
		name  string
		width int
	}{{"#", 3}, {"load", 7}, {"prompt", 7}, {"output", 7}, {"reqs", 7}, {"ttft p50", 9}, {"ttft p99", 9}, {"e2e p99", 9}, {"tok/s", 7}, {"err", 6}, {"time", 7}}
	head := ""
	for _, c := range cols {
		head += padLeft(c.name, c.width)
	}
	lines = append(lines, t.Muted.Render(head))
	var rows []string
	for _, ph := range s.Phases {
		if !shownPhase(ph) {
			continue
		}
		// The error rate as error_rate counts it: the incomplete and the
		// open loop's dropped arrivals (late, never sent) are failures.
		errs := "0"
		if bad := ph.Failed + ph.Incomplete + ph.Dropped; bad > 0 {
			errs = pct(float64(bad) / float64(ph.Completed+bad))
			if ph.Completed == 0 { // "100.0%" fills the column and runs into tok/s ("0100.0%")
				errs = "100%"
			}
		}
		span := ph.End - ph.Start
		if ph.Current {
			span = s.Elapsed - ph.Start
		}
		level := fmt.Sprint(ph.Knobs.Concurrency)
		switch {
		case ph.Knobs.Paused: // a pause is a phase of its own, with no request
			level = "paused"
		case ph.Knobs.Mode == load.OpenLoop:
			level = rateNum(ph.Knobs.Rate, 3) + "/s"
		}
		id := fmt.Sprint(ph.ID)
		if ph.Warmup {
			id += "w"
		}
		// An open loop's phase shows TTFT* and E2E*, from the intended
		// send time, marked * as the latency table's note explains.
		ttft, e2e, star := load.TTFT, load.E2E, ""
		if ph.Knobs.Mode == load.OpenLoop && ph.Latency[load.TTFTIntended].Count > 0 {
			ttft, e2e, star = load.TTFTIntended, load.E2EIntended, "*"
		}
		cells := []string{
			id, level, count(int64(ph.Knobs.PromptTokens), 6), count(int64(ph.Knobs.OutputTokens), 6),
			count(ph.Completed, 6), Duration(ph.Latency[ttft].P50) + star, Duration(ph.Latency[ttft].P99) + star, Duration(ph.Latency[e2e].P99) + star,
			num(ph.DeliveredPerSec), errs, clock(span), // as it streams: the tokens delivered for the phase's requests
		}
		row := ""
		for i, c := range cols {
			row += padLeft(cells[i], c.width)
		}
		style := t.Text
		if ph.Current {
			style = t.Value
			row += t.Accent.Render(" ◀")
		}
		rows = append(rows, style.Render(row))
	}
	if room := h - len(lines); len(rows) > room && room > 0 {
		rows = rows[len(rows)-room:]
	}
	lines = append(lines, rows...)
	if len(rows) == 0 {
		lines = append(lines, t.Muted.Render("no requests finished yet"))
	}
	return block(lines, w, h)
}
