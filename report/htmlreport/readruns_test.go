package htmlreport

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadRuns: runs are named by their files; two of one name, from two
// directories, by their paths; a missing file is an error.
func TestReadRuns(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a", "run.json"), filepath.Join(dir, "b", "run.json")
	for _, p := range []string{a, b} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := ReadRuns([]string{a})
	if err != nil || len(runs) != 1 || runs[0].Name != "run" || string(runs[0].JSON) != "{}" {
		t.Fatalf("one: %+v, %v", runs, err)
	}
	runs, err = ReadRuns([]string{a, b})
	if err != nil || runs[0].Name != a || runs[1].Name != b {
		t.Fatalf("two of one name: %+v, %v", runs, err)
	}
	if _, err := ReadRuns([]string{filepath.Join(dir, "none.json")}); err == nil {
		t.Fatal("a missing file read")
	}
}
