package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, tabs\tand all", "plain text, tabs\tand all"},
		{"héllo wörld ✓", "héllo wörld ✓"},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"\x1b[2J cleared", `\x1b[2J cleared`},
		{"\x1b]52;c;aGVsbG8=\x07", `\x1b]52;c;aGVsbG8=\a`},
		{"abc\u202edef", `abc\u202edef`},
		{"iso\u2066late\u2069", `iso\u2066late\u2069`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"del\x7f", `del\x7f`},
		{"line\nbreak\r", `line\nbreak\r`},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "ok", "\x1b]0;x\x07", "\u202e", "\xff\xfe", "a\tb\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		for _, r := range out {
			if unsafe(r) {
				t.Fatalf("%q kept %U", s, r)
			}
		}
		if Text(out) != out {
			t.Fatalf("not idempotent on %q", s)
		}
		if clean(s) && out != s || !strings.ContainsAny(s, "\x00\x1b\x7f") && utf8.ValidString(s) && !strings.ContainsFunc(s, unsafe) && out != s {
			t.Fatalf("changed clean text %q", s)
		}
	})
}

func BenchmarkTextClean(b *testing.B) {
	s := strings.Repeat("The model `llama` does not exist. ", 4)
	for b.Loop() {
		_ = Text(s)
	}
}
