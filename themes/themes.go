// Package themes turns colour palettes into lipgloss styles. Every style is
// built from a renderer passed in, so that each terminal (each SSH session)
// gets colours its own profile can show. It holds no logic beyond that.
package themes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Palette is a named set of colours (hex or ANSI numbers).
type Palette struct {
	Name                               string
	Text, Muted, Accent, Border, Title string
	Good, Warn, Bad                    string
	P50, P95, P99, Spark, Marker, Key  string
	BannerFg, BannerBg                 string
	// Background is the screen's colour ("": the terminal's own). A
	// light palette needs its own: on a dark terminal its dark text is
	// otherwise unreadable.
	Background string
}

// Palettes returns the built-in palettes in cycling order.
func Palettes() []Palette {
	return []Palette{
		{Name: "dark", Text: "#D8DEE9", Muted: "#7B8496", Accent: "#88C0D0", Border: "#4C566A", Title: "#EBCB8B",
			Good: "#A3BE8C", Warn: "#EBCB8B", Bad: "#BF616A", P50: "#A3BE8C", P95: "#EBCB8B", P99: "#BF616A",
			Spark: "#81A1C1", Marker: "#B48EAD", Key: "#88C0D0", BannerFg: "#2E3440", BannerBg: "#BF616A"},
		{Name: "light", Text: "#24292F", Muted: "#6E7781", Accent: "#0969DA", Border: "#AFB8C1", Title: "#8250DF",
			Good: "#1A7F37", Warn: "#9A6700", Bad: "#CF222E", P50: "#1A7F37", P95: "#9A6700", P99: "#CF222E",
			Spark: "#0969DA", Marker: "#8250DF", Key: "#0969DA", BannerFg: "#FFFFFF", BannerBg: "#CF222E",
			Background: "#FFFFFF"},
		{Name: "high-contrast", Text: "15", Muted: "7", Accent: "14", Border: "15", Title: "11",
			Good: "10", Warn: "11", Bad: "9", P50: "10", P95: "11", P99: "9",
			Spark: "14", Marker: "13", Key: "11", BannerFg: "0", BannerBg: "9"},
	}
}

// Default is the theme used when none is asked for.
const Default = "dark"

// Names lists the palette names.
func Names() []string {
	var n []string
	for _, p := range Palettes() {
		n = append(n, p.Name)
	}
	return n
}

// Lookup finds a palette by name.
func Lookup(name string) (Palette, error) {
	for _, p := range Palettes() {
		if p.Name == name {
			return p, nil
		}
	}
	return Palette{}, fmt.Errorf("unknown theme %q (have %s)", name, strings.Join(Names(), ", "))
}

// Theme is a palette's styles for one renderer.
type Theme struct {
	Name                                 string
	Text, Muted, Value, Title, Accent    Paint
	Good, Warn, Bad                      Paint
	P50, P95, P99, Spark, Marker, Border Paint
	Key, KeyDesc, Banner, Header         Paint
	// Background is the palette's screen colour, nil for the terminal's.
	Background lipgloss.TerminalColor
}

// New builds the styles of p on r.
func New(r *lipgloss.Renderer, p Palette) Theme {
	col := profileColor(r.ColorProfile())
	c := func(s string) lipgloss.Style { return r.NewStyle().Foreground(col(s)) }
	bold := func(s string) Paint { return NewPaint(c(s).Bold(true)) }
	var bg lipgloss.TerminalColor
	if p.Background != "" {
		bg = col(p.Background)
	}
	return Theme{
		Background: bg,
		Name:       p.Name,
		Text:       NewPaint(c(p.Text)),
		Muted:      NewPaint(c(p.Muted)),
		Value:      bold(p.Text),
		Title:      bold(p.Title),
		Accent:     NewPaint(c(p.Accent)),
		Good:       NewPaint(c(p.Good)),
		Warn:       bold(p.Warn),
		Bad:        bold(p.Bad),
		P50:        NewPaint(c(p.P50)),
		P95:        NewPaint(c(p.P95)),
		P99:        NewPaint(c(p.P99)),
		Spark:      NewPaint(c(p.Spark)),
		Marker:     NewPaint(c(p.Marker)),
		Border:     NewPaint(c(p.Border)),
		Key:        bold(p.Key),
		KeyDesc:    NewPaint(c(p.Muted)),
		Banner:     NewPaint(r.NewStyle().Foreground(col(p.BannerFg)).Background(col(p.BannerBg)).Bold(true)),
		Header:     bold(p.Accent),
	}
}

// profileColor turns a palette's hex colour into the one profile shows,
// once, when the styles are built: lipgloss converts a hex colour to a
// 256- or 16-colour terminal's nearest on every Render (by HSLuv
// distance: a sixth of a dashboard frame's cost in tmux), and takes a
// colour number as it is.
func profileColor(profile termenv.Profile) func(string) lipgloss.Color {
	return func(s string) lipgloss.Color {
		if !strings.HasPrefix(s, "#") {
			return lipgloss.Color(s)
		}
		switch c := profile.Convert(termenv.RGBColor(s)).(type) {
		case termenv.ANSI256Color:
			return lipgloss.Color(strconv.Itoa(int(c)))
		case termenv.ANSIColor:
			return lipgloss.Color(strconv.Itoa(int(c)))
		}
		return lipgloss.Color(s)
	}
}

// Paint is one of a theme's styles: colours and a weight, no layout. It
// renders a line as lipgloss renders it, the style's opening sequence,
// the text and the reset, from the two sequences it keeps: lipgloss's
// Render works through margins, padding, borders and alignment on every
// call, whatever the style sets, and the dashboard paints hundreds of
// short texts a frame (a third of a frame's cost was Render).
type Paint struct {
	// Style is the lipgloss style painted.
	Style     lipgloss.Style
	pre, post string
	ok        bool // pre and post paint as Style does
}

// paintProbe is the text a Paint renders once to find its sequences: a
// letter no sequence holds.
const paintProbe = "x"

// NewPaint is the paint of st, which sets colours and weights only.
func NewPaint(st lipgloss.Style) Paint {
	p := Paint{Style: st}
	if st.GetWidth() == 0 && st.GetHeight() == 0 && st.GetMaxWidth() == 0 && st.GetMaxHeight() == 0 &&
		!st.GetUnderline() && !st.GetStrikethrough() && st.GetTransform() == nil {
		out := st.Render(paintProbe)
		if strings.Count(out, paintProbe) == 1 {
			p.pre, p.post, _ = strings.Cut(out, paintProbe)
			p.ok = true
		}
	}
	return p
}

// Render paints the texts joined by spaces, as lipgloss.Style.Render
// does: a text of one line without tabs by the two sequences, any other
// by lipgloss itself.
func (p Paint) Render(strs ...string) string {
	var s string
	switch len(strs) {
	case 0:
	case 1:
		s = strs[0]
	default:
		s = strings.Join(strs, " ")
	}
	if !p.ok || s == "" || strings.ContainsAny(s, "\t\r\n") {
		return p.Style.Render(s)
	}
	if p.pre == "" {
		return s
	}
	return p.pre + s + p.post
}

// Underline is the paint underlined (or not).
func (p Paint) Underline(v bool) Paint { return NewPaint(p.Style.Underline(v)) }

// Reverse is the paint with the colours reversed (or not).
func (p Paint) Reverse(v bool) Paint { return NewPaint(p.Style.Reverse(v)) }
