// Package ui is infertop's terminal dashboard: a bubbletea model split into
// panels (header, latency, TTFT, throughput, errors, in-flight, phases),
// each rendering a load.Snapshot into a string. Panels are rendered when a
// snapshot or a resize arrives and cached; View only joins the cache, so a
// frame costs almost nothing however often bubbletea asks for one.
package ui

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
	"github.com/infertop/infertop/themes"
)

// Minimum terminal size; below it the dashboard asks for more room.
const (
	MinWidth  = 80
	MinHeight = 24
)

// FPS is the most frames a second a program running the dashboard draws
// (tea.WithFPS): the frames change on each snapshot, four a second by
// default, and on keys, which a twentieth of a second shows at once to
// a person. bubbletea's default, 60, woke the process 60 times a second
// to compare a frame that had not changed, for a fifth of the
// dashboard's own CPU at an idle endpoint.
const FPS = 20

// Options configure a dashboard.
type Options struct {
	// Renderer builds every style (one per terminal, so per SSH session).
	Renderer *lipgloss.Renderer
	// Theme is the starting palette's name (default "dark").
	Theme string
	// Snapshots is the engine subscription; nil when snapshots are sent as
	// messages (tests).
	Snapshots <-chan load.Snapshot
	// Objectives are checked over the rolling window: their figures are
	// coloured, and a banner says when one breaks.
	Objectives []slo.Objective
	// Save, if set, writes the reports for the run so far (the `s` key)
	// and says where. It runs in a command's goroutine, never in Update,
	// so it may block (HTTP, files) without freezing the dashboard.
	Save func(load.Snapshot) (string, error)
	// Figures, if set, joins the server's and the GPUs' side over a
	// window, for the server panel and energy objectives.
	Figures func(load.Snapshot) telemetry.Figures
	// ReadOnly makes a watcher's view: the keys that act on the load (knobs,
	// window, reset, save) are locked and say so.
	ReadOnly bool
	// Notice, if set, is shown in the footer until the first key (an SSH
	// session's unknown theme, say).
	Notice string
	// Canary is the canary's subscription in a comparison (compare.Pair):
	// Snapshots is then the baseline's, and the panels show both sides.
	Canary <-chan load.Snapshot
	// Compare, if set, is the live comparison (compare.Pair.Comparison):
	// its verdict line sits under the header and its verdicts colour the
	// differences. Either it or Canary makes the view a comparison's.
	Compare func() (compare.Comparison, bool)
	// Groups, if set, is a split's live comparison of the groups that
	// answered the one load (compare.Split.Comparison): its verdict line
	// sits under the header and a panel shows each group's figures and
	// each newer group's differences from the baseline group. It makes
	// the view a split's; not with Canary or Compare.
	Groups func() (compare.Grouping, bool)
	// Agents, if set, is the agents followed (--agents): a panel above
	// the merged load's shows each one's state and figures.
	Agents func() Agents
	// Finder, if set, runs capacity searches (the f key); FindMax, if
	// given too, are the objectives of one started at once and of the f
	// key's (without, the key asks for them).
	Finder  Finder
	FindMax []slo.Objective
}

// SnapshotMsg delivers a new engine snapshot to the model.
type SnapshotMsg load.Snapshot

// engineDoneMsg says the engine stopped and closed the subscription.
type engineDoneMsg struct{}

// savedMsg is a save's outcome: where the reports went, or why not.
type savedMsg struct {
	where string
	err   error
}

// chartMetrics are the metrics the `c` key cycles through (a function, not
// a variable: no package state).
func chartMetrics() []load.Metric { return []load.Metric{load.E2E, load.TTFT} }

// screen is a view the body can show instead of the dashboard's panels.
type screen int

const (
	screenDashboard screen = iota
	screenHelp
	screenErrors
)

// Model is the dashboard.
type Model struct {
	ctl      load.Controller
	renderer *lipgloss.Renderer
	palettes []themes.Palette
	palette  int
	theme    themes.Theme
	keys     keyMap
	help     help.Model
	snaps    <-chan load.Snapshot
	objs     []slo.Objective
	readOnly bool
	figures  func(load.Snapshot) telemetry.Figures
	fig      telemetry.Figures // the last snapshot's, joined
	save     func(load.Snapshot) (string, error)
	// saving is true while a save runs; the footer says so, and another
	// `s` waits for it rather than writing the same files twice at once.
	saving   bool
	verdicts []slo.Verdict
	// flash is a one-line notice (a save, a locked key) shown in the
	// footer until the next key.
	flash string

	width, height int
	snap          load.Snapshot
	haveSnap      bool
	chartMetric   int
	// screen is what the body shows: the dashboard, the help or the errors.
	screen  screen
	stopped bool

	// cmp is the canary's side when the view is a comparison's.
	cmp compareView
	// split is the groups' side when the view is a split's.
	split splitView
	// agents is the agents' panel's (--agents).
	agents agentsView

	// cache is the rendered screen; View returns it.
	cache string
	// sparks keeps each sparkline's last drawing, by panel; charts each
	// chart's over time, by chartSpec.id.
	sparks map[string]*sparkDrawing
	charts map[string]*chartDrawing
	// cells draws the charts' canvases (canvas.go), for the theme's styles.
	cells *cells

	// capState is the capacity search's (capacity.go).
	capState capState
}

// New returns a dashboard acting on ctl.
func New(ctl load.Controller, o Options) (Model, error) {
	if o.Renderer == nil {
		o.Renderer = lipgloss.DefaultRenderer()
	}
	m := Model{ctl: ctl, renderer: o.Renderer, palettes: themes.Palettes(), keys: newKeyMap(), snaps: o.Snapshots,
		objs: o.Objectives, save: o.Save, readOnly: o.ReadOnly, figures: o.Figures, width: MinWidth, height: MinHeight,
		sparks: map[string]*sparkDrawing{}, charts: map[string]*chartDrawing{}}
	if o.Theme != "" {
		found := false
		for i, p := range m.palettes {
			if p.Name == o.Theme {
				m.palette, found = i, true
			}
		}
		if !found {
			_, err := themes.Lookup(o.Theme)
			return Model{}, err
		}
	}
	m.flash = o.Notice
	m.cmp = newCompareView(o)
	m.split = newSplitView(o)
	m.agents = newAgentsView(o)
	if m.cmp.on && m.split.on {
		return Model{}, errors.New("a dashboard compares two endpoints or splits one, not both")
	}
	m.capState = capState{finder: o.Finder, given: o.FindMax}
	m.help = help.New()
	m.applyTheme()
	return m, nil
}

func (m *Model) applyTheme() {
	m.theme = themes.New(m.renderer, m.palettes[m.palette])
	m.cells = newCells()
	t := m.theme
	// Every field: bubbles' defaults use the global renderer.
	m.help.Styles = help.Styles{
		Ellipsis: t.Muted.Style, ShortKey: t.Key.Style, ShortDesc: t.KeyDesc.Style, ShortSeparator: t.Muted.Style,
		FullKey: t.Key.Style, FullDesc: t.KeyDesc.Style, FullSeparator: t.Muted.Style,
	}
	m.help.ShortSeparator = " · "
}

// listen reads the engine's next snapshot; nil without a subscription.
func listen(ch <-chan load.Snapshot) tea.Cmd {
	return listenOn(ch, func(s load.Snapshot) tea.Msg { return SnapshotMsg(s) }, engineDoneMsg{})
}

// listenOn is the command that reads ch's next snapshot as msg makes it,
// or done once ch is closed; nil without a subscription. The engine's and
// the canary's subscriptions are read alike.
func listenOn(ch <-chan load.Snapshot, msg func(load.Snapshot) tea.Msg, done tea.Msg) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		defer crash.Recover() // a command's goroutine
		s, ok := <-ch
		if !ok {
			return done
		}
		return msg(s)
	}
}

// Init starts listening for snapshots and for the searches' news, and
// starts --find-max's search.
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{listen(m.snaps), listenFind(m.capState.finder), m.cmp.listen()}
	if c := m.capState; c.finder != nil && len(c.given) > 0 {
		cmds = append(cmds, func() tea.Msg { return findMsg{c.given} })
	}
	return tea.Batch(cmds...)
}

// Update handles snapshots, resizes and keys.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case SnapshotMsg:
		m.snap, m.haveSnap = load.Snapshot(msg), true
		if m.figures != nil {
			m.fig = m.figures(m.snap)
		} else {
			m.fig = telemetry.Join(m.snap, nil)
		}
		m.verdicts = slo.CheckAll(m.objs, m.fig.Window, "window")
		m.cmp.refresh()
		m.split.refresh()
		m.agents.refresh()
		m.render()
		return m, listen(m.snaps)
	case CanarySnapshotMsg, canaryDoneMsg:
		return m.updateCanary(msg)
	case engineDoneMsg:
		m.stopped = true
		m.render()
		return m, nil
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.render()
		return m, nil
	case tea.KeyMsg:
		return m.handleKey(msg)
	case findMsg:
		m.startSearch(msg.objs)
		m.render()
		return m, nil
	case SearchMsg:
		m.searchNews(msg)
		m.render()
		return m, listenFind(m.capState.finder)
	case savedMsg:
		m.saving = false
		if msg.err != nil {
			// A push gateway's answer may be quoted; several files' errors
			// are joined by newlines, which the flash shows as "; ".
			m.flash = "save failed: " + sanitize.Text(strings.ReplaceAll(msg.err.Error(), "\n", "; "))
		} else {
			m.flash = "saved " + msg.where
		}
		m.render()
		return m, nil
	}
	return m, nil
}

func (m Model) handleKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	if m.capState.asking { // the footer's input takes every key, pasted or typed
		return m.askKey(msg)
	}
	// Keys typed faster than the terminal is read arrive as one message
	// ("KK"): take them one by one.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
		var cmds []tea.Cmd
		var next tea.Model = m
		for _, r := range msg.Runes {
			var cmd tea.Cmd
			next, cmd = next.(Model).handleKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
			cmds = append(cmds, cmd)
		}
		return next, tea.Batch(cmds...)
	}
	m.flash = ""
	d, ok := m.keys.lookup(msg)
	if !ok {
		return m, nil
	}
	if m.readOnly && d.onLoad {
		m.flash = "this session watches: the knobs are locked (a controller's key turns them)"
		m.render()
		return m, nil
	}
	cmd := d.act(&m)
	m.render()
	return m, cmd
}

// turn changes the engine's knobs by f and shows the new values at once,
// before the next snapshot brings them.
func (m *Model) turn(f func(*load.Knobs)) {
	m.handBack() // a person's knob ends a search first
	asked := m.snap.Knobs
	f(&asked) // what the key asked for, before the engine's limits
	m.snap.Knobs = m.ctl.Update(f)
	m.saidHandBack(m.snap.Knobs)
	if l := atLimit(asked, m.snap.Knobs); l != "" && m.flash == "" {
		m.flash = l
	}
}

// atLimit says which knob a key could not move past its limit ("" when
// none): a knob that silently stops moving looks like a stuck dashboard.
func atLimit(asked, got load.Knobs) string {
	switch {
	case asked.Concurrency > got.Concurrency && got.Concurrency < load.MaxConcurrency:
		// Below the knob's own limit: the engine holds it where the
		// process's descriptors run out, or the client would fail.
		return fmt.Sprintf("concurrency is at what the open-file limit allows (%d; raise it with ulimit -n)", got.Concurrency)
	case asked.Concurrency > got.Concurrency:
		return fmt.Sprintf("concurrency is at its limit (%d)", got.Concurrency)
	case asked.Rate > got.Rate:
		return fmt.Sprintf("the rate is at its limit (%s req/s)", rateNum(got.Rate, 4))
	case asked.PromptTokens > got.PromptTokens:
		return fmt.Sprintf("the prompt length is at its limit (%d tokens)", got.PromptTokens)
	case asked.OutputTokens > got.OutputTokens:
		return fmt.Sprintf("the output length is at its limit (%d tokens)", got.OutputTokens)
	}
	return ""
}

// toggleLoop switches between the closed and the open loop; the open loop
// opens at the rate the closed loop reached when it has no rate yet.
func (m *Model) toggleLoop() tea.Cmd {
	if m.snap.Trace.On {
		m.flash = traceRefusal
		return nil
	}
	achieved := m.snap.ReqPerSec
	m.turn(func(k *load.Knobs) {
		if k.Mode == load.OpenLoop {
			k.Mode = load.ClosedLoop
			return
		}
		k.Mode = load.OpenLoop
		if k.Rate <= 0 {
			k.Rate = math.Max(math.Round(achieved*10)/10, 1)
		}
	})
	return nil
}

// nextWindow selects the next rolling window, round to the first.
func (m *Model) nextWindow() tea.Cmd {
	ws := load.Windows()
	next := ws[0]
	for i, w := range ws {
		if w == m.snap.Window && i+1 < len(ws) {
			next = ws[i+1]
		}
	}
	m.ctl.SetWindow(next)
	m.snap.Window = next
	return nil
}

// startSave starts writing the reports for the snapshot shown. The saver
// talks HTTP and writes files, so it runs as a command and its outcome
// comes back as a savedMsg; meanwhile the keys keep working.
func (m *Model) startSave() tea.Cmd {
	switch {
	case m.save == nil:
		m.flash = "saving is not available here"
		return nil
	case m.saving:
		m.flash = "a save is already running: wait for it"
		return nil
	}
	m.saving = true
	save, snap := m.save, m.snap
	return func() tea.Msg {
		defer crash.Recover() // a command's goroutine
		where, err := save(snap)
		return savedMsg{where, err}
	}
}

// View returns the cached screen.
func (m Model) View() string { return m.cache }

// ThemeName is the theme in use.
func (m Model) ThemeName() string { return m.theme.Name }

// render redraws every panel into the cache.
func (m *Model) render() {
	w, h := m.width, m.height
	if w < MinWidth || h < MinHeight {
		// Wrapped, not cut: the message is the whole screen, and its end
		// (the size needed) is the part that matters.
		msg := fmt.Sprintf("terminal too small: %dx%d, infertop needs %dx%d", w, h, MinWidth, MinHeight)
		m.cache = block(append(wrap(msg, w), wrap("q quits", w)...), max(w, 1), max(h, 1))
		return
	}
	header := m.header(w)
	if v := m.verdictLine(w); v != "" {
		header += "\n" + v
	}
	if l := m.searchLine(w); l != "" {
		header += "\n" + l
	}
	if b := m.banner(w); b != "" {
		header += "\n" + b
	}
	footer := m.footer(w)
	avail := h - lipgloss.Height(header) - lipgloss.Height(footer)
	var body string
	switch m.screen {
	case screenHelp:
		body = m.helpScreen(w, avail)
	case screenErrors:
		body = m.errorsScreen(w, avail)
	default:
		body = m.dashboard(w, avail)
	}
	m.cache = m.paint(joinVertical(header, body, footer), w)
}

// paint lays the theme's background (if it has one) under every cell of
// view, lines of w cells: at the start of each line and again after every
// reset a style ends with, since a style without a background of its own
// would end it. Without this a light theme on a dark terminal painted its
// dark text on the terminal's dark background.
func (m *Model) paint(view string, w int) string {
	if m.theme.Background == nil {
		return view
	}
	seq := m.renderer.ColorProfile().Color(colorString(m.theme.Background)).Sequence(true)
	if seq == "" { // a profile without colour (NO_COLOR, Ascii)
		return view
	}
	bg := termenv.CSI + seq + "m"
	lines := strings.Split(view, "\n")
	for i, l := range lines {
		pad := strings.Repeat(" ", max(w-textWidth(l), 0))
		lines[i] = bg + strings.ReplaceAll(l, termenv.CSI+termenv.ResetSeq+"m", termenv.CSI+termenv.ResetSeq+"m"+bg) + pad + termenv.CSI + termenv.ResetSeq + "m"
	}
	return strings.Join(lines, "\n")
}

// colorString is a lipgloss colour's string (a hex or an ANSI number).
func colorString(c lipgloss.TerminalColor) string {
	if s, ok := c.(lipgloss.Color); ok {
		return string(s)
	}
	return ""
}

// dashboard lays the panels out in h lines. A bigger terminal shows more,
// not taller bars: the sparklines keep a sparkline's height; the latency
// row grows to hold the window's distribution under the table and, when
// wide, a second chart; on a wide terminal with rows to spare a row of
// throughput charts follows; the phase table has the rest, and at least
// the rows its phases need while the charts can give them up.
func (m *Model) dashboard(w, h int) string {
	switch {
	case m.cmp.on && m.agents.on: // agents comparing a canary
		return m.agentsDashboard(w, h, m.compareDashboard)
	case m.cmp.on:
		return m.compareDashboard(w, h)
	case m.split.on:
		return m.splitDashboard(w, h)
	case m.agents.on:
		return m.agentsDashboard(w, h, m.loadPanels)
	}
	return m.loadPanels(w, h)
}

// loadPanels are the one load's panels in h lines (dashboard's layout).
// The server panel gives way where the latency and the small panels would
// not keep their least beside it (a split's groups above them).
func (m *Model) loadPanels(w, h int) string {
	server := m.serverPanel(w)
	serverH := 0
	if server != "" {
		serverH = lipgloss.Height(server)
	}
	if smallLeast, latLeast := 6, 6; server != "" && h-serverH < smallLeast+latLeast {
		server, serverH = "", 0
	}
	// The Phases table keeps its title, head and two rows (one when
	// there is one) before the server panel: it is where the README sends
	// a newcomer, and a server line wrapped at 80 columns hid it. The
	// server panel keeps its first lines, the title and two, or goes.
	if server != "" {
		phaseLeast := 2 + min(max(m.visiblePhases(), 1), 2)
		if room := h - 6 - 6 - phaseLeast; serverH > room {
			if room < 3 {
				server, serverH = "", 0
			} else {
				server, serverH = strings.Join(strings.Split(server, "\n")[:room], "\n"), room
			}
		}
	}
	// Title, two or three figures and three or four rows of bars.
	smallH := 6
	switch {
	case h >= 60:
		smallH = 8
	case h >= 30:
		smallH = 7
	}
	phaseNeed := 2 + max(m.visiblePhases(), 1) + m.turnsNeed()
	rest := h - smallH - serverH
	latH := min(max(rest-phaseNeed, 6), max(20, h*40/100))
	rest -= latH
	if rest < 3 { // a title and the heads without a row say nothing: the latency panel has them
		latH, rest = latH+max(rest, 0), 0
	}
	tputH := 0
	if w >= 120 && rest-phaseNeed >= 8 {
		tputH = min(rest-phaseNeed, 20)
		rest -= tputH
	}
	parts := []string{m.latencyPanel(w, latH)}
	if tputH > 0 {
		parts = append(parts, m.throughputRow(w, tputH))
	}
	parts = append(parts, m.smallPanels(w, smallH))
	if server != "" {
		parts = append(parts, server)
	}
	if n := min(m.turnsNeed(), rest); sessionsOn(&m.snap) && n > 2 { // the turns' table, above the phases'
		parts = append(parts, m.turnsPanel(w, n))
		rest -= n
	}
	if rest > 0 {
		parts = append(parts, m.phasesPanel(w, rest))
	}
	return joinVertical(parts...)
}

// footer is the keys' line, and a notice above it when there is one. The
// line always ends with ? help and q quit, the keys a newcomer needs
// first; the other keys show as far as they fit, each whole.
func (m *Model) footer(w int) string {
	t := m.theme
	if m.capState.asking {
		return m.askFooter(w)
	}
	var parts []part
	for i, b := range m.footerKeys() {
		prio := 1 + i // the earlier in the table, the longer kept
		if k := b.Keys()[0]; k == "?" || k == "q" {
			prio = 0
		}
		parts = append(parts, part{t.Key.Render(b.Help().Key) + " " + t.KeyDesc.Render(b.Help().Desc), prio})
	}
	keys := fit(strings.Join(flowParts(parts, t.Muted.Render(" · "), w, 1), ""), w)
	notice := m.flash
	if notice == "" && m.saving {
		notice = "saving…"
	}
	if notice == "" {
		return keys
	}
	// The notice wraps (a saved report's paths are its point) over at
	// most three lines above the keys.
	lines := wrapInto(t.Accent.Render(notice), w, 3, t.Muted.Render("…"))
	return block(append(lines, keys), w, len(lines)+1)
}

// footerKeys are the footer's keys for the state the dashboard is in: a
// watcher's are those that act on its own view (the load's are locked to
// it), and the open loop's load keys are the rate's, not the
// concurrency's, which move nothing there.
func (m *Model) footerKeys() []key.Binding {
	open := m.snap.Knobs.Mode == load.OpenLoop
	var bs []key.Binding
	for _, d := range m.keys {
		k := d.binding.Keys()[0]
		switch {
		case m.readOnly && d.onLoad:
		case open && (k == "up" || k == "down"):
		case d.short || open && (k == "+" || k == "-"):
			bs = append(bs, d.binding)
		}
	}
	return bs
}

// visiblePhases counts the phase table's rows (phasesPanel's filter).
func (m *Model) visiblePhases() int {
	n := 0
	for _, ph := range m.snap.Phases {
		if shownPhase(ph) {
			n++
		}
	}
	return n
}

// banner names the objectives the window breaks, or is empty.
func (m *Model) banner(w int) string {
	var broken []string
	// Nothing measured is a breach once a whole window has passed without
	// an answer (a hung server), not in the first seconds of a run.
	full := m.snap.Elapsed >= m.snap.Window
	for _, v := range m.verdicts {
		switch {
		case v.Held:
		case v.Known:
			broken = append(broken, fmt.Sprintf("%s (%s)", v.Expr, v.Format(v.Actual)))
		case full:
			broken = append(broken, v.Expr+" (nothing measured)")
		}
	}
	if len(broken) == 0 {
		return ""
	}
	// Wrapped, not cut: the breach that does not fit is the one missed.
	lines := wrapInto(" SLO BREACHED over the "+window(m.snap.Window)+" window: "+strings.Join(broken, ", "), w, 3, "…")
	for i, l := range lines {
		lines[i] = m.theme.Banner.Render(fit(l, w))
	}
	return strings.Join(lines, "\n")
}

// sloStyle is the style for a latency figure an objective watches: good or
// bad; ok is false when none does.
func (m *Model) sloStyle(met load.Metric, stat string) (style themes.Paint, ok bool) {
	for _, v := range m.verdicts {
		if _, latency := slo.LatencyMetric(v.Metric); latency && v.Judged == met && v.Stat == stat && v.Known {
			if !v.Held {
				return m.theme.Bad, true
			}
			style, ok = m.theme.Good, true
		}
	}
	return style, ok
}

func (m *Model) helpScreen(w, h int) string {
	t := m.theme
	lines := []string{t.Title.Render("Keys"), ""}
	// The columns side by side where they fit, else in rows of as many as
	// fit: bubbles would cut the last ones off (at 80 columns, e and q).
	full := m.help
	full.Width = 0
	cols := m.keys.FullHelp()
	for start := 0; start < len(cols); {
		end := start + 1
		for end < len(cols) && blockWidth(full.FullHelpView(cols[start:end+1])) <= w {
			end++
		}
		if start > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, strings.Split(full.FullHelpView(cols[start:end]), "\n")...)
		start = end
	}
	lines = append(lines, "")
	if m.readOnly { // the table lists every key; a watcher's turn nothing of the load
		lines = append(lines, wrap(t.Warn.Render("This session watches: the keys on the load (the knobs, o, f, w, r, s) are a controller's; c, t, e, ? and q are yours."), w)...)
	}
	for _, note := range []string{
		"Latency figures are over the rolling window; the phase table keeps one row per knob setting.",
		"TTFT: time to the first output-bearing message. ITL: gaps between messages. TPOT: (E2E−TTFT)/(tokens−1).",
		"Press ? or Esc to return.",
	} {
		lines = append(lines, wrap(t.Muted.Render(note), w)...)
	}
	return block(lines, w, h)
}

// title draws a panel's title rule: "─ name · extra ─────". The dot
// keeps the muted extra from reading on as part of the name in a
// terminal without colour ("Server its own metrics").
func (m *Model) title(name, extra string, w int) string {
	t := m.theme
	s := t.Border.Render("─ ") + t.Title.Render(name)
	if extra != "" {
		s += t.Muted.Render(" · " + extra)
	}
	s += " "
	if n := lipglossWidth(s); n < w {
		s += t.Border.Render(strings.Repeat("─", w-n))
	}
	return fit(s, w)
}

func lipglossWidth(s string) int { return blockWidth(s) }
