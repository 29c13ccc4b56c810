package ratelog

import (
	"strings"
	"sync"
	"testing"
)

// TestBounded: a flood of lines writes at most the bound in its second,
// then one line with the count of the rest; each line sanitised and cut.
func TestBounded(t *testing.T) {
	var mu sync.Mutex
	var got []string
	l := New(5, func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() })
	long := strings.Repeat("M", 15<<10) + "\x1b]0;title\x07"
	for range 1000 {
		l.Logf("refused %s", long)
	}
	l.Flush()
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 5+1+5 { // a second may turn over once while the loop runs
		t.Fatalf("%d lines for a flood of 1000, want at most the bound and a count", len(got))
	}
	if last := got[len(got)-1]; !strings.Contains(last, "lines left out") {
		t.Errorf("the last line %q, want the count left out", last)
	}
	for _, s := range got {
		if len(s) > MaxLine+len("…") || strings.ContainsRune(s, '\x1b') || strings.ContainsRune(s, '\x07') {
			t.Fatalf("a line of %d bytes, or unsanitised: %q", len(s), s[:40])
		}
	}
}
