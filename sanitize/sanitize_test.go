package sanitize

import (
	"encoding/json"
	"reflect"
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

// FuzzJSON: encoded JSON through JSON decodes to the same value and holds
// no rune a terminal acts on but the layout's line ends.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{"", "ok", "\x1b]0;x\x07", "\u202egnp.exe", "\u009b31m", "\x7f", "\xff\xfe", "a\tb\nc\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, err := json.MarshalIndent(map[string]any{"k" + s: []string{s}}, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		out := JSON(enc)
		var back map[string][]string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		var want map[string][]string
		json.Unmarshal(enc, &want)
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("%q decodes to %q, want %q", out, back, want)
		}
		for _, r := range string(out) {
			if unsafe(r) && r != '\n' && r != '\t' {
				t.Fatalf("%q kept %U", out, r)
			}
		}
		if !utf8.Valid(out) {
			t.Fatalf("invalid UTF-8 out of %q", enc)
		}
	})
}

// TestJSONEscapes: the hostile payload's runes come out as \u escapes.
func TestJSONEscapes(t *testing.T) {
	enc, _ := json.Marshal("\x1b]0;x\x07\u009b2J\u202e\x7f")
	got := string(JSON(enc))
	if want := `"\u001b]0;x\u0007\u009b2J\u202e\u007f"`; got != want {
		t.Fatalf("JSON(%s) = %s, want %s", enc, got, want)
	}
	clean := []byte(`{"a": "b"}`)
	if out := JSON(clean); &out[0] != &clean[0] {
		t.Fatal("clean JSON copied")
	}
}
