package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/tools/hostile"
)

// hostileText is a server's text with every kind of rune a terminal acts
// on: the hostile servers' payload (ESC, BEL, U+202E), a C1 CSI, DEL.
const hostileText = hostile.Payload + "\u009b2J\x7f"

// rawControls counts the runes of b a terminal would act on, but the
// line ends and tabs of the layout.
func rawControls(b []byte) int {
	n := 0
	for _, r := range string(b) {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			n++
		}
	}
	return n
}

// holds reports whether the decoded JSON v holds the string s.
func holds(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		for _, e := range x {
			if holds(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if holds(e, s) {
				return true
			}
		}
	}
	return false
}

// TestFilesEscapeServerText: a server's text in a model name, an error
// and a response id reaches the JSON report and the requests log as \u
// escapes (raw ESC, BEL, C1 and U+202E survived into the JSON before:
// harmless in a browser, not for cat in a terminal), and decodes to the
// very same text.
func TestFilesEscapeServerText(t *testing.T) {
	r := testReport()
	r.Manifest.Model = "m" + hostileText
	r.Final.Errors = []load.ErrorCount{{Class: probe.HTTP5xx, Status: 500, Message: "HTTP 500: " + hostileText, Count: 3}}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if n := rawControls(buf.Bytes()); n != 0 {
		t.Errorf("the JSON holds %d raw controls", n)
	}
	if !utf8.Valid(buf.Bytes()) || !strings.Contains(buf.String(), `\u009b2J\u007f`) || !strings.Contains(buf.String(), `\u202e`) {
		t.Errorf("the JSON lacks the escapes:\n%.400s", buf.String())
	}
	var doc any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !holds(doc, "m"+hostileText) || !holds(doc, "HTTP 500: "+hostileText) {
		t.Error("the JSON does not decode to the server's text")
	}
	if !strings.Contains(buf.String(), "\\u001b]0;pwned") {
		t.Errorf("ESC not escaped")
	}

	path := filepath.Join(t.TempDir(), "req.jsonl")
	l, err := OpenRequestsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(load.Record{Result: probe.Result{Status: 500, Class: probe.HTTP5xx, Err: "HTTP 500: " + hostileText, ID: "id" + hostileText}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	line, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := rawControls(line); n != 0 {
		t.Errorf("the requests log holds %d raw controls: %q", n, line)
	}
	var back struct{ Error, ID string }
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if back.Error != "HTTP 500: "+hostileText || back.ID != "id"+hostileText {
		t.Errorf("the log decodes to %q, %q", back.Error, back.ID)
	}
}
