// Package sanitize makes text that came from an endpoint safe to print:
// an error body, a stream's error message, a model name, a header value or
// a metric label may hold terminal escapes (a window title, the clipboard
// through OSC 52, a cleared screen) or bidirectional overrides that reverse
// what is shown. Every such string passes Text before it reaches a terminal
// or a text report, and encoded JSON passes JSON (encoding/json leaves
// C1 controls and bidi overrides raw).
package sanitize

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text returns s with every C0 control but tab, DEL, every C1 control and
// the bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069) shown as
// escapes (\x1b, \u202e), and invalid UTF-8 replaced by U+FFFD. Text that
// needs none of it is returned as it is, without a copy.
func Text(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case unsafe(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s needs nothing done: the common case, checked
// byte by byte without decoding.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' || c == 0x7f || c >= 0x80 {
			if c < 0x80 {
				return false
			}
			return cleanFrom(s[i:])
		}
	}
	return true
}

// cleanFrom is clean's decoding half, from the first non-ASCII byte.
func cleanFrom(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || unsafe(r) {
			return false
		}
		i += n
	}
	return true
}

// unsafe reports whether r must not reach a terminal as it is.
func unsafe(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// JSON returns encoded JSON with every rune Text would escape written as a
// JSON \u escape instead, so that the file is safe to cat in a terminal
// and still decodes to exactly the same values: encoding/json escapes the
// C0 controls but leaves DEL, the C1 controls (a CSI among them) and the
// bidi overrides raw. Only the line ends and tabs of the encoding's own
// layout are left, which encoding/json never leaves raw inside a string;
// invalid UTF-8 becomes \ufffd, as encoding/json writes it. JSON that
// needs nothing is returned as it is, without a copy.
func JSON(b []byte) []byte {
	i := nextJSONUnsafe(b, 0)
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+16), b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		out = append(out, fmt.Sprintf(`\u%04x`, r)...)
		j := nextJSONUnsafe(b, i+n)
		out = append(out, b[i+n:j]...)
		i = j
	}
	return out
}

// nextJSONUnsafe returns the index of the first rune at or after i that
// JSON must escape (len(b) for none): ASCII is checked byte by byte, and
// only the rest decoded.
func nextJSONUnsafe(b []byte, i int) int {
	for i < len(b) {
		c := b[i]
		switch {
		case c < 0x80:
			if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
				return i
			}
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 || unsafe(r) {
				return i
			}
			i += n
		}
	}
	return i
}

// Short is Text(s) cut to at most n bytes on a rune's boundary, "…"
// marking a cut: for what a peer names that a line quotes (a model id, a
// method, a path), so that one long name cannot flood a terminal or a
// log.
func Short(s string, n int) string {
	s = Text(s)
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
