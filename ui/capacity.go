package ui

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/linechart"
	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/themes"
)

// Finder runs the dashboard's capacity searches, one at a time, off the
// UI's goroutine: *capacity.Live in the program, a fake in tests.
type Finder interface {
	// Find starts a search for objs and returns at once, with the
	// search's id and stop, which cancels it with a cause and returns once
	// it no longer turns the knobs.
	Find(objs []slo.Objective) (id int, stop func(cause error), err error)
	// Next waits for news of a search (what came since the last call,
	// merged); ok is false once the finder is closed.
	Next() (msg SearchMsg, ok bool)
}

// SearchMsg is news of search ID: its latest progress, the steps judged
// since the last message, and its end. It is capacity's News, so that
// capacity.Live is a Finder without capacity knowing the dashboard.
type SearchMsg = capacity.News

// SearchEnd is how a search ended: its result and, when cut short, why.
type SearchEnd = capacity.End

// findMsg starts a search for objs (--find-max's, at the start).
type findMsg struct{ objs []slo.Objective }

// listenFind waits for the finder's next news, as listen does snapshots.
func listenFind(f Finder) tea.Cmd {
	if f == nil {
		return nil
	}
	return func() tea.Msg {
		defer crash.Recover() // a command's goroutine
		m, ok := f.Next()
		if !ok {
			return nil
		}
		return m
	}
}

// capState is the dashboard's side of the capacity search: the search
// running or last run, and the objective being typed.
type capState struct {
	finder Finder
	// given are --find-max's objectives: the f key's, when there are any.
	given []slo.Objective
	// id is the search shown (0: none yet); stop cancels it while it runs.
	id      int
	running bool
	stop    func(error)
	objs    []slo.Objective
	prog    capacity.Progress
	steps   []capacity.Step
	// outcome is the line that stays in the panel once the search ended.
	outcome string
	// asking is true while the footer asks for an objective.
	asking   bool
	input    textinput.Model
	inputErr string
	drawing  *capDrawing
}

// capDrawing is the capacity panel's last chart, by what it was drawn from:
// it changes once a step, not once a frame.
type capDrawing struct {
	w, h, steps int
	theme       string
	lines       []string
}

// findKey is the f key: a search with --find-max's objectives, or the
// footer's input asking for one.
func (m *Model) findKey() tea.Cmd {
	c := &m.capState
	switch {
	case c.finder == nil:
		m.flash = "the capacity search is not available here (it drives one load: a comparison has two, a watcher turns no knob)"
		return nil
	case c.running:
		m.flash = "a search is running: a knob key hands it back"
		return nil
	case m.snap.Trace.On:
		m.flash = "a trace sets the load: the capacity search does not apply to a replay"
		return nil
	case len(c.given) > 0:
		m.startSearch(c.given)
		return nil
	}
	c.input = textinput.New()
	t := m.theme
	// Every style: bubbles' defaults use the global renderer.
	c.input.Prompt = "find the most load holding: "
	c.input.PromptStyle, c.input.TextStyle, c.input.PlaceholderStyle, c.input.CompletionStyle = t.Key.Style, t.Value.Style, t.Muted.Style, t.Muted.Style
	c.input.Cursor.Style, c.input.Cursor.TextStyle = t.Value.Style.Reverse(true), t.Value.Style
	c.input.Placeholder = "ttft_p99<=500ms, error_rate<1%"
	c.input.CharLimit = 200
	// A static cursor: a blinking one is a tick every half second, for
	// the frames and the goldens alike.
	c.input.Cursor.SetMode(cursor.CursorStatic)
	c.input.Focus()
	c.asking, c.inputErr = true, ""
	return nil
}

// askKey is a key while the footer asks for an objective: Enter starts the
// search, Esc closes the input, the rest is typing.
func (m Model) askKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	c := &m.capState
	switch msg.Type {
	case tea.KeyEsc:
		c.asking, c.inputErr = false, ""
		m.flash = "no search started"
	case tea.KeyCtrlC:
		return m, tea.Quit
	case tea.KeyEnter:
		objs, err := parseObjectives(c.input.Value())
		if err != nil {
			c.inputErr = sanitize.Text(err.Error())
			break
		}
		c.asking, c.inputErr = false, ""
		m.startSearch(objs)
	default:
		var cmd tea.Cmd
		c.input, cmd = c.input.Update(msg)
		c.inputErr = ""
		m.render()
		return m, cmd
	}
	m.render()
	return m, nil
}

// parseObjectives reads the footer's objectives, comma separated.
func parseObjectives(s string) ([]slo.Objective, error) {
	var exprs []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			exprs = append(exprs, e)
		}
	}
	if len(exprs) == 0 {
		return nil, errors.New("type an objective, e.g. ttft_p99<=500ms (Esc cancels)")
	}
	objs, err := slo.ParseAll(exprs)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.NeedsEnergy() {
			return nil, fmt.Errorf("%s: the energy per token is not searched (a step is too short for the GPUs' counters)", o.Expr)
		}
	}
	return objs, nil
}

// startSearch starts a search for objs through the finder.
func (m *Model) startSearch(objs []slo.Objective) {
	c := &m.capState
	if c.finder == nil || c.running {
		return
	}
	id, stop, err := c.finder.Find(objs)
	if err != nil {
		m.flash = "the search did not start: " + sanitize.Text(err.Error())
		return
	}
	c.id, c.stop, c.running, c.objs = id, stop, true, objs
	c.prog, c.steps, c.outcome, c.drawing = capacity.Progress{}, nil, "", nil
}

// handBack stops a running search before a person's knob turns: the load
// is theirs again, and the footer says where the search left it.
func (m *Model) handBack() {
	c := &m.capState
	if !c.running {
		return
	}
	c.stop(capacity.ErrTakenOver)
	c.running, c.stop = false, nil
	c.outcome = "handed back after " + stepsText(len(c.steps)) + bestText(c.prog.Over, c.steps)
	m.flash = "the search handed control back"
}

// saidHandBack completes the footer's note once the person's knob turned:
// "the search handed control back: concurrency 25".
func (m *Model) saidHandBack(k load.Knobs) {
	if m.flash != "the search handed control back" {
		return
	}
	now := fmt.Sprintf("concurrency %d", k.Concurrency)
	if k.Mode == load.OpenLoop {
		now = "open loop " + rateNum(k.Rate, 4) + " req/s"
	}
	if k.Paused {
		now += ", paused"
	}
	m.flash += ": " + now
}

// searchNews takes a SearchMsg in.
func (m *Model) searchNews(msg SearchMsg) {
	c := &m.capState
	if msg.ID != c.id {
		return // an older search's, stopped already
	}
	if msg.Progress != nil {
		c.prog = *msg.Progress
	}
	c.steps = append(c.steps, msg.Steps...)
	if e := msg.End; e != nil {
		c.running, c.stop = false, nil
		// The result holds every step: the one a stop cut short is not
		// among them, and a step told late is not lost.
		if len(e.Result.Steps) >= len(c.steps) {
			c.steps = e.Result.Steps
		}
		if c.outcome == "" { // a hand-back said its own already
			c.outcome = outcomeText(e.Result, e.Err, c.objs)
		}
	}
}

// outcomeText is the line a finished search leaves in the panel:
// "found: concurrency 32 (ttft_p99<=500ms held; 33 broke)".
func outcomeText(r capacity.Result, err error, objs []slo.Objective) string {
	over := r.Over
	if over == "" {
		over = capacity.Concurrency
	}
	exprs := make([]string, len(objs))
	for i, o := range objs {
		exprs[i] = o.Expr
	}
	held := strings.Join(exprs, ", ")
	switch {
	case errors.Is(err, capacity.ErrTakenOver):
		return "handed back after " + stepsText(len(r.Steps)) + bestText(over, r.Steps)
	case err != nil:
		return "stopped after " + stepsText(len(r.Steps)) + ": " + sanitize.Text(err.Error()) + bestText(over, r.Steps)
	case r.Found && r.Bad > 0:
		return fmt.Sprintf("found: %s %s (%s held; %s broke)", over, over.Format(r.MaxLoad), held, over.Format(r.Bad))
	case r.Found:
		return fmt.Sprintf("found: at least %s %s (%s held at the top of the range)", over, over.Format(r.MaxLoad), held)
	case r.Bad > 0:
		return fmt.Sprintf("none held: even %s %s broke %s", over, over.Format(r.Bad), held)
	}
	return "no step finished"
}

func stepsText(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}

// bestText is ", best held: concurrency 16", or nothing when none held.
func bestText(over capacity.Over, steps []capacity.Step) string {
	if i := bestStep(steps); i >= 0 {
		if over == "" {
			over = capacity.Concurrency
		}
		return fmt.Sprintf(", best held: %s %s", over, over.Format(steps[i].Load))
	}
	return ""
}

// bestStep is the index of the highest load that held (-1: none).
func bestStep(steps []capacity.Step) int {
	best := -1
	for i, s := range steps {
		if s.Held && (best < 0 || s.Load > steps[best].Load) {
			best = i
		}
	}
	return best
}

// searchLine is the header's line while a search runs, or "": "search
// step 5: concurrency 48, holding 12s more (37 of 50 requests) · held
// at 32, broke at 64".
func (m *Model) searchLine(w int) string {
	c, t := &m.capState, m.theme
	if !c.running {
		return ""
	}
	p := c.prog
	if p.Step == 0 {
		return fit(t.Accent.Render("capacity search")+t.Muted.Render(": starting…"), w)
	}
	doing := fmt.Sprintf("step %d: %s %s, %s", p.Step, p.Over, p.Over.Format(p.Load), p.State)
	switch p.State {
	case capacity.StateWarmup:
		if p.Need > 0 {
			doing += " " + p.Need.Round(time.Second).String() + " more"
		}
	case capacity.StateHolding:
		doing += " " + p.Need.Round(time.Second).String() + " more"
	}
	parts := []part{{t.Accent.Render("capacity search") + t.Muted.Render(" · ") + t.Value.Render(doing), 0}}
	if p.State == capacity.StateHolding {
		parts = append(parts, part{t.Muted.Render(fmt.Sprintf("%d of %d requests", p.Requests, p.NeedRequests)), 2})
	}
	if p.Good > 0 || p.Bad > 0 {
		bound := func(v float64) string {
			if v <= 0 {
				return "—"
			}
			return p.Over.Format(v)
		}
		parts = append(parts, part{t.Muted.Render("held at ") + t.Good.Render(bound(p.Good)) + t.Muted.Render(", broke at ") + t.Bad.Render(bound(p.Bad)), 1})
	}
	parts = append(parts, part{t.Muted.Render("a knob key hands back"), 3})
	return fit(strings.Join(flowParts(parts, t.Muted.Render(" · "), w, 1), ""), w)
}

// capacityShown reports whether the capacity panel has something to show.
func (m *Model) capacityShown() bool { return m.capState.id > 0 }

// capacityPanel is the search's curve: goodput and the p99s against the
// load, the best so far marked, as charts where there is room, else as a
// table; its first line is what the search does or how it ended.
func (m *Model) capacityPanel(w, h int) string {
	c, t := &m.capState, m.theme
	exprs := make([]string, len(c.objs))
	for i, o := range c.objs {
		exprs[i] = o.Expr
	}
	lines := []string{m.title("Capacity", strings.Join(exprs, ", "), w)}
	switch {
	case c.outcome != "":
		style := t.Accent
		if strings.HasPrefix(c.outcome, "found") {
			style = t.Good
		}
		lines = append(lines, wrapInto(style.Render(c.outcome), w, 2, t.Muted.Render("…"))...)
	case c.running && c.prog.Step > 0:
		// The header says what the step does; here, what it has found.
		p := c.prog
		best := t.Muted.Render("none held yet")
		if p.Good > 0 {
			best = t.Muted.Render("best so far ") + t.Good.Render(p.Over.Format(p.Good))
		}
		if p.Bad > 0 {
			best += t.Muted.Render(" · ") + t.Bad.Render(p.Over.Format(p.Bad)+" broke")
		}
		lines = append(lines, fit(best, w))
	default:
		lines = append(lines, fit(t.Muted.Render("starting…"), w))
	}
	room := h - len(lines)
	if room <= 0 {
		return block(lines, w, h)
	}
	if w >= 60 && room >= 10 {
		return block(append(lines, m.capacityCharts(w, room)...), w, h)
	}
	return block(append(lines, m.capacityTable(w, room)...), w, h)
}

// stepsByLoad are the steps ordered by load, the curve's order (the
// bisection comes back down between the bounds).
func stepsByLoad(steps []capacity.Step) []capacity.Step {
	s := slices.Clone(steps)
	slices.SortStableFunc(s, func(a, b capacity.Step) int {
		switch {
		case a.Load < b.Load:
			return -1
		case a.Load > b.Load:
			return 1
		}
		return 0
	})
	return s
}

// capacityTable is the steps as rows, by load, at most h lines: the
// newest steps' rows kept when they do not all fit.
func (m *Model) capacityTable(w, h int) []string {
	c, t := &m.capState, m.theme
	if len(c.steps) == 0 {
		return []string{t.Muted.Render("no step judged yet")}
	}
	lines := []string{fit(t.Muted.Render(padLeft("load", 5)+padLeft("good/s", 7)+padLeft("ttft99", 7)+padLeft("e2e99", 7)), w)}
	best := bestStep(c.steps)
	var bestLoad float64
	if best >= 0 {
		bestLoad = c.steps[best].Load
	}
	rows := stepsByLoad(c.steps)
	if room := h - 1; len(rows) > room {
		// Keep the rows around the best: that is the answer.
		at := slices.IndexFunc(rows, func(s capacity.Step) bool { return s.Load == bestLoad })
		lo := min(max(at-room/2, 0), len(rows)-room)
		rows = rows[lo : lo+room]
	}
	for _, s := range rows {
		level := fmt.Sprint(s.Knobs.Concurrency)
		if s.Knobs.Mode == load.OpenLoop {
			level = rateNum(s.Knobs.Rate, 3)
		}
		// A figure nothing measured is "—", never a 0 that reads as one.
		good, ttft, e2e := "—", "—", "—"
		if s.PerRequestKnown {
			good = num(s.GoodPerSec)
		}
		if s.TTFT.Count > 0 {
			ttft = Duration(s.TTFT.P99)
		}
		if s.E2E.Count > 0 {
			e2e = Duration(s.E2E.P99)
		}
		row := padLeft(level, 5) + padLeft(good, 7) + padLeft(ttft, 7) + padLeft(e2e, 7)
		style, mark := t.Bad, " ✗"
		if s.Held {
			style, mark = t.Text, " ✓"
		}
		if best >= 0 && s.Load == bestLoad {
			style, mark = t.Good, " ◀ best"
			if blockWidth(row+mark) > w {
				mark = " ◀"
			}
		}
		lines = append(lines, fit(style.Render(row+mark), w))
	}
	return lines
}

// capacityCharts draws goodput (top) and the p99s (bottom) against the
// load, sharing the load axis, with a column at the best load; cached
// until a step is added or the size or theme changes.
func (m *Model) capacityCharts(w, h int) []string {
	c, t := &m.capState, m.theme
	if d := c.drawing; d != nil && d.w == w && d.h == h && d.steps == len(c.steps) && d.theme == t.Name {
		return d.lines
	}
	legend := t.P50.Render("goodput req/s") + t.Muted.Render(" · ") + t.P95.Render("TTFT p99") + " " + t.P99.Render("E2E p99") +
		t.Muted.Render(" · ") + t.Marker.Render("┊ best held")
	lines := []string{fit(legend, w)}
	steps := stepsByLoad(c.steps)
	if len(steps) == 0 {
		lines = append(lines, t.Muted.Render("no step judged yet"))
		c.drawing = &capDrawing{w: w, h: h, steps: len(c.steps), theme: t.Name, lines: lines}
		return lines
	}
	best := bestStep(c.steps)
	bestLoad := -1.0
	if best >= 0 {
		bestLoad = c.steps[best].Load
	}
	xMax := niceCeil(steps[len(steps)-1].Load * 1.05)
	topH := (h - 1) / 2
	botH := h - 1 - topH
	var good, ttft, e2e []canvas.Float64Point
	var goodTop, latTop float64
	for _, s := range steps { // a figure nothing measured is no point, never a fall to 0
		if s.PerRequestKnown {
			good = append(good, canvas.Float64Point{X: s.Load, Y: s.GoodPerSec})
			goodTop = max(goodTop, s.GoodPerSec)
		}
		if s.TTFT.Count > 0 {
			ttft = append(ttft, canvas.Float64Point{X: s.Load, Y: s.TTFT.P99.Seconds() * 1000})
			latTop = max(latTop, s.TTFT.P99.Seconds()*1000)
		}
		if s.E2E.Count > 0 {
			e2e = append(e2e, canvas.Float64Point{X: s.Load, Y: s.E2E.P99.Seconds() * 1000})
			latTop = max(latTop, s.E2E.P99.Seconds()*1000)
		}
	}
	labelLoad := func(_ int, v float64) string { return fmt.Sprintf("%.0f", v) }
	top := m.loadChart(w, topH, xMax, niceCeil(max(goodTop, 1e-3)*1.1), bestLoad, num, nil,
		[]chartLine{{good, t.P50}})
	bottom := m.loadChart(w, botH, xMax, niceCeil(max(latTop, 1e-3)*1.1), bestLoad,
		func(v float64) string { return Duration(secs(v / 1000)) }, labelLoad,
		[]chartLine{{e2e, t.P99}, {ttft, t.P95}})
	lines = append(lines, top...)
	lines = append(lines, bottom...)
	c.drawing = &capDrawing{w: w, h: h, steps: len(c.steps), theme: t.Name, lines: lines}
	return lines
}

// chartLine is one series of a chart against the load.
type chartLine struct {
	pts   []canvas.Float64Point
	style themes.Paint
}

// loadChart is one chart against the load, from 0 to xMax: its lines
// through the steps, a dot at each, and a dotted column at the best load.
// Without xLabel the load axis has no labels (the chart under it has).
func (m *Model) loadChart(w, h int, xMax, yMax, bestLoad float64, yLabel func(float64) string, xLabel linechart.LabelFormatter, series []chartLine) []string {
	t := m.theme
	if h < 3 {
		return nil
	}
	opts := []linechart.Option{
		linechart.WithStyles(t.Border.Style, t.Muted.Style, t.Text.Style),
		// Labels of one width: the charts' origins, and so their load
		// axes, line up one above the other.
		linechart.WithYLabelFormatter(func(_ int, v float64) string {
			if v <= 0 {
				return padLeft("0", 6)
			}
			return padLeft(yLabel(v), 6)
		}),
		linechart.WithXYSteps(8, 2),
	}
	if xLabel != nil {
		opts = append(opts, linechart.WithXLabelFormatter(xLabel))
	} else {
		opts = append(opts, linechart.WithXLabelFormatter(func(int, float64) string { return "" }))
	}
	lc := linechart.New(w, h, 0, xMax, 0, yMax, opts...)
	lc.DrawXYAxisAndLabel()
	for _, s := range series {
		for i := 1; i < len(s.pts); i++ {
			lc.DrawBrailleLineWithStyle(s.pts[i-1], s.pts[i], s.style.Style)
		}
		if len(s.pts) == 1 {
			lc.DrawBrailleLineWithStyle(s.pts[0], s.pts[0], s.style.Style)
		}
	}
	if bestLoad > 0 {
		// The best load as a dotted column, where no line is drawn: the
		// answer, read against both charts.
		p := lc.ScaleFloat64Point(canvas.Float64Point{X: bestLoad, Y: 0})
		x := lc.Origin().X + 1 + int(math.Round(p.X))
		for y := 0; y < lc.Origin().Y; y++ {
			pt := canvas.Point{X: x, Y: y}
			if cell := lc.Canvas.Cell(pt); cell.Rune == 0 || cell.Rune == ' ' {
				lc.Canvas.SetCell(pt, canvas.NewCellWithStyle('┊', t.Marker.Style))
			}
		}
	}
	return strings.Split(block(strings.Split(m.cells.view(&lc.Canvas), "\n"), w, h), "\n")
}

// askFooter is the footer while it asks for an objective: the error of
// the last try above the input, the keys beside it.
func (m *Model) askFooter(w int) string {
	c, t := &m.capState, m.theme
	in := c.input
	// The keys in short when the example and they do not fit at once (80
	// columns): the example is what says what to type.
	hint := "  enter starts · esc cancels"
	prompt := blockWidth(in.Prompt)
	if prompt+blockWidth(in.Placeholder)+blockWidth(hint)+1 > w {
		hint = "  enter · esc"
	}
	// bubbles' textinput counts the prompt in its Width while it shows the
	// placeholder, and not once there is text: the same room either way.
	in.Width = max(w-blockWidth(hint)-prompt-1, 10)
	if in.Value() == "" {
		in.Width += prompt
	}
	line := fit(in.View()+t.Muted.Render(hint), w)
	if c.inputErr == "" {
		return line
	}
	lines := wrapInto(t.Bad.Render(c.inputErr), w, 2, t.Muted.Render("…"))
	return block(append(lines, line), w, len(lines)+1)
}
