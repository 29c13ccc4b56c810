package ui

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/linechart/timeserieslinechart"
	"github.com/NimbleMarkets/ntcharts/sparkline"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/themes"
)

// colourRenderer draws in 256 colours, as the dashboard does in tmux.
func colourRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI256)
	r.SetHasDarkBackground(true)
	return r
}

// TestTextWidthAgrees: textWidth measures as ansi.StringWidth does:
// every rune of its fast path alone, after another and inside escapes,
// and random lines mixing them with what it leaves to ansi (wide runes,
// combining marks, joiners, emoji, other escapes, control characters).
func TestTextWidthAgrees(t *testing.T) {
	var fast []rune
	for r := rune(0); r < 0x3000; r++ {
		if narrowRune(r) {
			fast = append(fast, r)
			s := string(r)
			for _, line := range []string{s, "a" + s + "b", s + s, "\x1b[38;5;12m" + s + "\x1b[0m", s + "\u0301", s + "\ufe0f", s + "\u200d" + s} {
				if got, want := textWidth(line), ansi.StringWidth(line); got != want {
					t.Fatalf("%q (U+%04X): %d, ansi says %d", line, r, got, want)
				}
			}
		}
	}
	others := []string{"界", "😀", "\u0301", "\u200d", "\ufe0f", "\u00ad", "\t", "\x1b]8;;x\x1b\\", "\x1b[", "\x1b", "\x7f", "e\u0301", "🇫🇷", "\x1b[1;38;2;1;2;3m", "\x1b[0m"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			switch rng.IntN(4) {
			case 0:
				b.WriteByte(byte(0x20 + rng.IntN(0x5f)))
			case 1:
				b.WriteRune(fast[rng.IntN(len(fast))])
			case 2:
				b.WriteString("\x1b[38;5;" + string(rune('0'+rng.IntN(10))) + "m")
			default:
				if rng.IntN(4) == 0 {
					b.WriteString(others[rng.IntN(len(others))])
				}
			}
		}
		if got, want := textWidth(b.String()), ansi.StringWidth(b.String()); got != want {
			t.Fatalf("%q: %d, ansi says %d", b.String(), got, want)
		}
	}
}

// TestJoinsAgree: joinVertical and joinHorizontal draw what lipgloss'
// joins (Left, Top) draw, for blocks of styled lines of uneven widths and
// heights.
func TestJoinsAgree(t *testing.T) {
	th := themes.New(colourRenderer(), themes.Palettes()[0])
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"p99", "1.20s", "▁▂▃", "⣿⡇", "·", "界", "tok/s", "", " ", "e\u0301"}
	blockOf := func() string {
		lines := make([]string, 1+rng.IntN(5))
		for i := range lines {
			var b strings.Builder
			for range rng.IntN(6) {
				w := words[rng.IntN(len(words))]
				if rng.IntN(2) == 0 {
					w = th.P99.Render(w)
				}
				b.WriteString(w)
			}
			lines[i] = b.String()
		}
		return strings.Join(lines, "\n")
	}
	for range 2000 {
		strs := make([]string, rng.IntN(5))
		for i := range strs {
			strs[i] = blockOf()
		}
		if got, want := joinVertical(strs...), lipgloss.JoinVertical(lipgloss.Left, strs...); got != want {
			t.Fatalf("vertical %q:\n%q\nlipgloss:\n%q", strs, got, want)
		}
		if got, want := joinHorizontal(strs...), lipgloss.JoinHorizontal(lipgloss.Top, strs...); got != want {
			t.Fatalf("horizontal %q:\n%q\nlipgloss:\n%q", strs, got, want)
		}
		if len(strs) > 0 {
			if got, want := blockWidth(strs[0]), lipgloss.Width(strs[0]); got != want {
				t.Fatalf("width %q: %d, lipgloss %d", strs[0], got, want)
			}
		}
	}
}

// TestCellsDrawAsView: the charts' and sparklines' canvases drawn through
// cells are what ntcharts' View draws, escapes and all, in colour, and a
// second drawing from the cells' memory is the same again.
func TestCellsDrawAsView(t *testing.T) {
	th := themes.New(colourRenderer(), themes.Palettes()[0])
	cs := newCells()
	ts := func(s int) time.Time { return time.Unix(int64(s), 0) }
	c := timeserieslinechart.New(70, 14, timeserieslinechart.WithTimeRange(ts(0), ts(60)),
		timeserieslinechart.WithYRange(0, 100), timeserieslinechart.WithAxesStyles(th.Border.Style, th.Muted.Style))
	c.SetDataSetStyle("a", th.P50.Style)
	c.SetDataSetStyle("b", th.P99.Style)
	for s := range 60 {
		c.PushDataSet("a", timeserieslinechart.TimePoint{Time: ts(s), Value: float64(s%17) * 5})
		c.PushDataSet("b", timeserieslinechart.TimePoint{Time: ts(s), Value: 40 + float64(s%7)*8})
	}
	c.DrawBrailleAll()
	c.Canvas.SetCell(canvas.Point{X: 30, Y: 2}, canvas.NewCellWithStyle('┊', th.Marker.Style))
	want := c.View()
	for range 2 {
		if got := cs.view(&c.Canvas); got != want {
			t.Fatalf("chart:\n%s\nView:\n%s", got, want)
		}
	}
	sl := sparkline.New(40, 4, sparkline.WithNoAutoMaxValue(), sparkline.WithStyle(th.Accent.Style))
	sl.SetMax(10)
	for i := range 40 {
		sl.Push(float64(i % 11))
	}
	sl.Draw()
	if got, want := cs.view(&sl.Canvas), sl.View(); got != want {
		t.Fatalf("sparkline:\n%s\nView:\n%s", got, want)
	}
}
