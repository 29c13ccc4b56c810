package readlimit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFile: a file within its bound is read whole; one past it, a
// regular file by its size and an endless device by reading one byte
// past the bound, is ErrTooLarge.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := File(path, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("within: %q, %v", b, err)
	}
	if _, err := File(path, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("past: %v", err)
	}
	if _, err := File("/dev/zero", Secret); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero: %v", err)
	}
	if _, err := File(filepath.Join(t.TempDir(), "none"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
