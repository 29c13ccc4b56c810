package ui

import (
	"math"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/load"
)

// keyDef is one key the dashboard answers. The table of them is the one
// place a key is declared: the key handler, the watcher's lock and both
// help views are read from it, so a new knob is one entry.
type keyDef struct {
	binding key.Binding
	// column is the help screen's column the key is listed in; short puts
	// it on the footer's help line too.
	column int
	short  bool
	// onLoad marks a key that acts on the load every session shares (a
	// knob, the window, a reset, a save): a watcher's view locks it.
	onLoad bool
	// act does what the key does; the model is drawn again after it.
	act func(*Model) tea.Cmd
}

// keyMap is every key the dashboard answers, in the help screen's order.
type keyMap []keyDef

func newKeyMap() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	// knob turns the load's knobs by f.
	knob := func(f func(*load.Knobs)) func(*Model) tea.Cmd {
		return func(m *Model) tea.Cmd { m.turn(f); return nil }
	}
	const short, long = true, false
	const shared, local = true, false
	return keyMap{
		{b([]string{"up", "k"}, "↑/k", "concurrency +1"), 0, short, shared, knob(func(k *load.Knobs) { k.Concurrency++ })},
		{b([]string{"down", "j"}, "↓/j", "concurrency −1"), 0, short, shared, knob(func(k *load.Knobs) { k.Concurrency-- })},
		{b([]string{"pgup", "K"}, "PgUp/K", "concurrency ×2"), 0, long, shared, knob(func(k *load.Knobs) { k.Concurrency *= 2 })},
		{b([]string{"pgdown", "J"}, "PgDn/J", "concurrency ÷2"), 0, long, shared, knob(func(k *load.Knobs) { k.Concurrency /= 2 })},

		{b([]string{"right", "l"}, "→/l", "prompt ×2"), 1, short, shared, knob(func(k *load.Knobs) { k.PromptTokens *= 2 })},
		{b([]string{"left", "h"}, "←/h", "prompt ÷2"), 1, long, shared, knob(func(k *load.Knobs) { k.PromptTokens /= 2 })},
		{b([]string{"]"}, "]", "output ×2"), 1, short, shared, knob(func(k *load.Knobs) { k.OutputTokens *= 2 })},
		{b([]string{"["}, "[", "output ÷2"), 1, long, shared, knob(func(k *load.Knobs) { k.OutputTokens /= 2 })},

		{b([]string{"o"}, "o", "open/closed loop"), 2, long, shared, (*Model).toggleLoop},
		{b([]string{"+", "="}, "+", "rate ×1.25"), 2, long, shared, rate(1.25)},
		{b([]string{"-", "_"}, "-", "rate ÷1.25"), 2, long, shared, rate(1 / 1.25)},
		{b([]string{" "}, "space", "pause/resume"), 2, short, shared, knob(func(k *load.Knobs) { k.Paused = !k.Paused })},
		{b([]string{"f"}, "f", "find max load"), 2, long, shared, (*Model).findKey},

		{b([]string{"w"}, "w", "window"), 3, short, shared, (*Model).nextWindow},
		{b([]string{"c"}, "c", "chart metric"), 3, long, local, func(m *Model) tea.Cmd {
			m.chartMetric = (m.chartMetric + 1) % len(chartMetrics())
			return nil
		}},
		{b([]string{"t"}, "t", "theme"), 3, long, local, func(m *Model) tea.Cmd {
			m.palette = (m.palette + 1) % len(m.palettes)
			m.applyTheme()
			return nil
		}},
		{b([]string{"e"}, "e", "errors"), 3, long, local, toggle(screenErrors)},

		{b([]string{"r"}, "r", "reset stats"), 4, long, shared, func(m *Model) tea.Cmd { m.ctl.Reset(); return nil }},
		{b([]string{"s"}, "s", "save reports"), 4, long, shared, (*Model).startSave},
		{b([]string{"?"}, "?", "help"), 4, short, local, toggle(screenHelp)},
		{b([]string{"esc"}, "esc", "back"), 4, long, local, func(m *Model) tea.Cmd { m.screen = screenDashboard; return nil }},
		{b([]string{"q", "ctrl+c"}, "q", "quit"), 4, short, local, func(*Model) tea.Cmd { return tea.Quit }},
	}
}

// toggle opens the screen s, or closes it when it is open; from another
// screen it goes straight to s (? on the errors shows the help), so no key
// ever needs pressing twice.
func toggle(s screen) func(*Model) tea.Cmd {
	return func(m *Model) tea.Cmd {
		if m.screen == s {
			m.screen = screenDashboard
		} else {
			m.screen = s
		}
		return nil
	}
}

// rate moves the open loop's rate by the factor f (to two decimals).
func rate(f float64) func(*Model) tea.Cmd {
	return func(m *Model) tea.Cmd {
		if m.snap.Trace.On { // the trace's speed, by the rate's steps
			m.turn(func(k *load.Knobs) { k.Speed = math.Round(k.Speed*f*100) / 100 })
			return nil
		}
		if m.snap.Knobs.Mode != load.OpenLoop {
			m.flash = "the rate sets the open loop: press o to open it"
			return nil
		}
		m.turn(func(k *load.Knobs) { k.Rate = math.Round(k.Rate*f*100) / 100 })
		return nil
	}
}

// lookup is the key msg presses, if the table has it.
func (k keyMap) lookup(msg tea.KeyMsg) (keyDef, bool) {
	for _, d := range k {
		if key.Matches(msg, d.binding) {
			return d, true
		}
	}
	return keyDef{}, false
}

// ShortHelp is the footer line.
func (k keyMap) ShortHelp() []key.Binding {
	var bs []key.Binding
	for _, d := range k {
		if d.short {
			bs = append(bs, d.binding)
		}
	}
	return bs
}

// FullHelp is the help screen, in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	var cols [][]key.Binding
	for _, d := range k {
		for len(cols) <= d.column {
			cols = append(cols, nil)
		}
		cols[d.column] = append(cols[d.column], d.binding)
	}
	return cols
}
