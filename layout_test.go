package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImportPicture holds ARCHITECTURE.md's table of each package's
// imports of this module to the code: a new import of a layer it should not
// link (ui importing the runner, compare the exporter) changes the
// table, and a reviewer sees it.
func TestImportPicture(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```imports\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("ARCHITECTURE.md has no ```imports block")
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		f := strings.Fields(line)
		want[f[0]] = strings.Join(f[1:], " ")
	}
	const module = "github.com/infertop/infertop"
	got := map[string]string{}
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path == "tools" || path != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "deploy" {
			return filepath.SkipDir
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		imports := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, im := range af.Imports {
				p := strings.Trim(im.Path.Value, `"`)
				if rest, ok := strings.CutPrefix(p, module+"/"); ok {
					imports[rest] = true
				}
			}
		}
		if len(files) == 0 {
			return nil
		}
		name := filepath.ToSlash(path)
		if name == "." {
			name = "main"
		}
		var list []string
		for p := range imports {
			list = append(list, p)
		}
		slices.Sort(list)
		got[name] = strings.Join(list, " ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg, imps := range got {
		if w, ok := want[pkg]; !ok {
			t.Errorf("package %s is not in ARCHITECTURE.md's table; it imports: %s", pkg, imps)
		} else if w != imps {
			t.Errorf("%s imports %q, ARCHITECTURE.md says %q", pkg, imps, w)
		}
	}
	for pkg := range want {
		if _, ok := got[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md's table names %s, which is no package", pkg)
		}
	}
}
