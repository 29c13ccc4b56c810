package readlimit

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestJSONValues: separators inside strings, escaped quotes included,
// are no values; the count stops past max.
func TestJSONValues(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`1`, 0},
		{`[]`, 1},
		{`[1,2,3]`, 3},
		{`{"a":{"b":[1,2]}}`, 6},
		{`{"a,{[:":"\",{[:"}`, 2},
		{`["\\",1]`, 2},
	} {
		if got := JSONValues([]byte(c.in), 100); got != c.want {
			t.Errorf("%s: %d values, want %d", c.in, got, c.want)
		}
	}
	if got := JSONValues([]byte("["+strings.Repeat("{},", 1e6)+"{}]"), 10); got != 11 {
		t.Errorf("stopped at %d, want 11", got)
	}
}

// TestReader: a reader of exactly the bound ends as it does; one byte
// more is ErrTooLarge.
func TestReader(t *testing.T) {
	if b, err := io.ReadAll(Reader(strings.NewReader("12345"), 5)); err != nil || string(b) != "12345" {
		t.Errorf("%q, %v", b, err)
	}
	if b, err := io.ReadAll(Reader(strings.NewReader("123456"), 5)); !errors.Is(err, ErrTooLarge) || string(b) != "12345" {
		t.Errorf("%q, %v", b, err)
	}
}

// TestJSONScan: the bytes outside strings are given, each string's
// length at its closing quote, an escaped quote inside one included.
func TestJSONScan(t *testing.T) {
	var outside []byte
	var lens []int
	JSONScan([]byte(`{"a":"b\"c,]","dd":[1,2]}`), func(c byte, n int) {
		if c == '"' {
			lens = append(lens, n)
			return
		}
		outside = append(outside, c)
	})
	if string(outside) != `{:,:[1,2]}` || fmt.Sprint(lens) != "[1 6 2]" {
		t.Errorf("outside %q, lengths %v", outside, lens)
	}
}
