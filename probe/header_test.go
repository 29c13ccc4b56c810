package probe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseHeaders: lines and @FILE (comments and blanks skipped) are
// read; a line without a colon is refused without showing it.
func TestParseHeaders(t *testing.T) {
	file := filepath.Join(t.TempDir(), "h")
	if err := os.WriteFile(file, []byte("# a comment\nX-Key: s3cret\n\n X-Two : b \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeaders([]string{"X-One: a", "@" + file})
	if err != nil || h.Get("X-One") != "a" || h.Get("X-Key") != "s3cret" || h.Get("X-Two") != "b" || len(h) != 3 {
		t.Fatalf("got %v, %v", h, err)
	}
	_, err = ParseHeaders([]string{"Bearer hunter22"})
	if !errors.Is(err, ErrBadHeader) || strings.Contains(err.Error(), "hunter22") {
		t.Fatalf("a bad line: %v", err)
	}
	if _, err := ParseHeaders([]string{"@" + file + ".missing"}); err == nil || errors.Is(err, ErrBadHeader) {
		t.Fatalf("a missing file: %v", err)
	}
}
