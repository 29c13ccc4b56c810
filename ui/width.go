package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// textWidth is ansi.StringWidth(s), the cells a line takes, without its
// grapheme segmentation for the lines the dashboard draws: ASCII, SGR
// escapes, and runes one cell wide that join no cluster (box drawing,
// blocks, braille, Latin-1, punctuation, arrows and operators). A line
// with anything else is measured by ansi.StringWidth. lipgloss measured
// every line of every panel so, twice per join, and the dashboard's
// frames spent a third of their time in it (TestTextWidthAgrees holds
// the two equal).
func textWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f:
			n++
			i++
		case c == 0x1b:
			// A CSI sequence (lipgloss' colours and attributes): its
			// parameters up to its final byte take no cell.
			if i+1 >= len(s) || s[i+1] != '[' {
				return ansi.StringWidth(s)
			}
			j := i + 2
			for j < len(s) && s[j] >= 0x20 && s[j] < 0x40 {
				j++
			}
			if j >= len(s) || s[j] < 0x40 || s[j] > 0x7e {
				return ansi.StringWidth(s)
			}
			i = j + 1
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !narrowRune(r) {
				return ansi.StringWidth(s)
			}
			n++
			i += size
		default: // another control character
			return ansi.StringWidth(s)
		}
	}
	return n
}

// narrowRune reports whether r takes one cell and neither extends nor
// joins a grapheme cluster, as ansi.StringWidth counts it.
func narrowRune(r rune) bool {
	switch {
	case r >= 0xa0 && r <= 0x2ff: // Latin-1, Latin Extended, IPA, spacing modifiers
		return r != 0xad // the soft hyphen
	case r >= 0x2010 && r <= 0x2027: // dashes, quotes, bullets, the ellipsis
		return true
	case r >= 0x2190 && r <= 0x22ff: // arrows, mathematical operators
		return true
	case r >= 0x2500 && r <= 0x25fc: // box drawing, blocks, geometric shapes
		return true
	case r >= 0x2800 && r <= 0x28ff: // braille
		return true
	}
	return false
}

// blockWidth is lipgloss.Width(s): the widest of its lines.
func blockWidth(s string) int {
	w := 0
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		w = max(w, textWidth(line))
	}
	return w
}

// joinVertical is lipgloss.JoinVertical(lipgloss.Left, strs...): the
// blocks one under the other, every line padded to the widest, with
// each line measured once (by textWidth).
func joinVertical(strs ...string) string {
	if len(strs) == 0 {
		return ""
	}
	if len(strs) == 1 {
		return strs[0]
	}
	var lines []string
	var widths []int
	widest, size := 0, 0
	for _, s := range strs {
		for _, l := range strings.Split(s, "\n") {
			w := textWidth(l)
			lines, widths = append(lines, l), append(widths, w)
			widest = max(widest, w)
			size += len(l)
		}
	}
	var b strings.Builder
	b.Grow(size + len(lines)*(widest+1))
	for i, l := range lines {
		b.WriteString(l)
		pad(&b, widest-widths[i])
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// joinHorizontal is lipgloss.JoinHorizontal(lipgloss.Top, strs...): the
// blocks side by side, each padded to its widest line and the shorter
// ones with empty lines below, each line measured once.
func joinHorizontal(strs ...string) string {
	if len(strs) == 0 {
		return ""
	}
	if len(strs) == 1 {
		return strs[0]
	}
	blocks := make([][]string, len(strs))
	widths := make([][]int, len(strs))
	widest := make([]int, len(strs))
	height, size := 0, 0
	for i, s := range strs {
		blocks[i] = strings.Split(s, "\n")
		widths[i] = make([]int, len(blocks[i]))
		for j, l := range blocks[i] {
			widths[i][j] = textWidth(l)
			widest[i] = max(widest[i], widths[i][j])
		}
		height = max(height, len(blocks[i]))
		size += len(s)
	}
	var b strings.Builder
	b.Grow(size + height*len(strs)*8)
	for j := range height {
		for i, bl := range blocks {
			if j < len(bl) {
				b.WriteString(bl[j])
				pad(&b, widest[i]-widths[i][j])
			} else {
				pad(&b, widest[i])
			}
		}
		if j < height-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// spaces is what pad writes from.
const spaces = "                                                                "

// pad writes n spaces.
func pad(b *strings.Builder, n int) {
	for n > 0 {
		k := min(n, len(spaces))
		b.WriteString(spaces[:k])
		n -= k
	}
}
