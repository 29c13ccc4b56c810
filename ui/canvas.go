package ui

import (
	"strings"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/charmbracelet/lipgloss"
)

// cells draws ntcharts canvases as canvas.Model.View does, cell by cell,
// but renders each distinct styled cell once: View renders every cell
// through lipgloss (about half a microsecond a cell, most of a chart's
// cost), while a chart's cells take a few styles and a few hundred runes.
// A cell's drawing is known by its rune, its colours and its attributes:
// the canvases the dashboard draws hold only such styles (the theme's,
// and ntcharts' plain defaults), never one with a size, spacing, border
// or transform, which would need the whole style (TestCellsDrawAsView).
// Reading the rest of a style cost as much as rendering it: lipgloss'
// getters copy the style. One cells serves one renderer's styles: the
// model makes a new one with its theme.
type cells struct {
	seen map[cellKey]string
}

// cellKey is what a plain style's rendering of one rune depends on.
type cellKey struct {
	fg, bg                                                 lipgloss.TerminalColor
	bold, italic, underline, strike, reverse, blink, faint bool
	r                                                      rune
}

// cellsMax bounds what a cells keeps: a chart has a few styles and at
// most 256 braille patterns each, so the bound is never reached by one;
// past it the drawings are forgotten and learnt again.
const cellsMax = 4096

func newCells() *cells { return &cells{seen: map[cellKey]string{}} }

// view is c.View().
func (cs *cells) view(c *canvas.Model) string {
	var sb strings.Builder
	sb.Grow(c.ViewWidth * c.ViewHeight * 4)
	cur := c.Cursor()
	endY := cur.Y + c.ViewHeight - 1
	endX := cur.X + c.ViewWidth - 1
	for i := cur.Y; i <= endY && i < c.Height(); i++ {
		for j := cur.X; j <= endX && j < c.Width(); j++ {
			sb.WriteString(cs.cell(c.Cell(canvas.Point{X: j, Y: i})))
		}
		if i != endY {
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// cell is one cell's drawing, as View renders it.
func (cs *cells) cell(c canvas.Cell) string {
	r := c.Rune
	if r == 0 {
		r = ' '
	}
	st := c.Style
	k := cellKey{
		fg: st.GetForeground(), bg: st.GetBackground(),
		bold: st.GetBold(), italic: st.GetItalic(), underline: st.GetUnderline(), strike: st.GetStrikethrough(),
		reverse: st.GetReverse(), blink: st.GetBlink(), faint: st.GetFaint(), r: r,
	}
	if s, ok := cs.seen[k]; ok {
		return s
	}
	if len(cs.seen) >= cellsMax {
		clear(cs.seen)
	}
	s := st.Render(string(r))
	cs.seen[k] = s
	return s
}
