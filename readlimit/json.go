package readlimit

import "io"

// JSONValues counts the values of a JSON text, as its separators and
// opening brackets outside strings, stopping once past max: an upper
// bound of the values a decoder would build of it, counted without
// building any. A body within a size bound can still cost far more in
// decoded values than in bytes ([{},{},...] is three bytes an object),
// so what a peer sends is held to both before it is decoded.
func JSONValues(b []byte, max int) int {
	n, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == ',' || c == ':':
			if n++; n > max {
				return n
			}
		}
	}
	return n
}

// JSONScan walks a JSON text's bytes outside its strings without
// decoding any: fn is given each such byte (n 0), and at each string's
// closing quote '"' with the string's length in bytes as written. What a
// peer sends is measured with it before it is decoded (its values, its
// longest string, a list's length).
func JSONScan(b []byte, fn func(c byte, n int)) {
	in, esc, from := false, false, 0
	for i, c := range b {
		switch {
		case esc:
			esc = false
		case in:
			esc, in = c == '\\', c != '"'
			if !in {
				fn('"', i-from)
			}
		case c == '"':
			in, from = true, i+1
		default:
			fn(c, 0)
		}
	}
}

// Reader reads r up to max bytes; past them it fails with ErrTooLarge,
// and an r of exactly max bytes ends as r does. For a body from a peer
// that is read through a decoder (the bound is then the decoder's error).
func Reader(r io.Reader, max int64) io.Reader { return &bounded{r: r, left: max} }

type bounded struct {
	r    io.Reader
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: the end is fine, one more byte is not.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
