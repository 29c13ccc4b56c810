package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDir: a report directory that is missing, or a file, is told
// at the start; one that takes files passes and is left as it was.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "nope"), "nope: no such file or directory"},
		{file, "is not a directory"},
	} {
		if err := CheckDir(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
	}
	if err := CheckDir(dir); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("the check left %d files", len(es))
	}
}

// TestReplaceFileNamesThePath: a failed write names the file asked for,
// never the temporary one beside it (on main: "report: open
// /x/.r.json.123: ...").
func TestReplaceFileNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope", "r.json")
	err := ReplaceFile(path, []byte("{}"))
	if err == nil || err.Error() != "write "+path+": no such file or directory" {
		t.Fatalf("%v", err)
	}
}
