package ui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key the dashboard answers, with its help text.
type keyMap struct {
	ConcUp, ConcDown, ConcDouble, ConcHalve key.Binding
	PromptUp, PromptDown                    key.Binding
	OutputUp, OutputDown                    key.Binding
	Pause, Window, Chart, Theme, Reset      key.Binding
	Save, RateUp, RateDown, Loop            key.Binding
	Help, Quit                              key.Binding
}

func newKeyMap() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return keyMap{
		ConcUp:     b([]string{"up", "k"}, "↑/k", "concurrency +1"),
		ConcDown:   b([]string{"down", "j"}, "↓/j", "concurrency −1"),
		ConcDouble: b([]string{"pgup", "K"}, "PgUp/K", "concurrency ×2"),
		ConcHalve:  b([]string{"pgdown", "J"}, "PgDn/J", "concurrency ÷2"),
		PromptUp:   b([]string{"right", "l"}, "→/l", "prompt ×2"),
		PromptDown: b([]string{"left", "h"}, "←/h", "prompt ÷2"),
		OutputUp:   b([]string{"]"}, "]", "output ×2"),
		OutputDown: b([]string{"["}, "[", "output ÷2"),
		Pause:      b([]string{" "}, "space", "pause/resume"),
		Window:     b([]string{"w"}, "w", "window"),
		Chart:      b([]string{"c"}, "c", "chart metric"),
		Theme:      b([]string{"t"}, "t", "theme"),
		Reset:      b([]string{"r"}, "r", "reset stats"),
		Save:       b([]string{"s"}, "s", "save reports"),
		RateUp:     b([]string{"+", "="}, "+", "rate ×1.25"),
		RateDown:   b([]string{"-", "_"}, "-", "rate ÷1.25"),
		Loop:       b([]string{"o"}, "o", "open/closed loop"),
		Help:       b([]string{"?"}, "?", "help"),
		Quit:       b([]string{"q", "ctrl+c"}, "q", "quit"),
	}
}

// ShortHelp is the footer line.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.ConcUp, k.ConcDown, k.PromptUp, k.OutputUp, k.Pause, k.Window, k.Help, k.Quit}
}

// FullHelp is the help screen, in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.ConcUp, k.ConcDown, k.ConcDouble, k.ConcHalve},
		{k.PromptUp, k.PromptDown, k.OutputUp, k.OutputDown},
		{k.Loop, k.RateUp, k.RateDown, k.Pause},
		{k.Window, k.Chart, k.Theme},
		{k.Reset, k.Save, k.Help, k.Quit},
	}
}
