package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExporterReference holds docs/reference/exporter.md to the
// exporter: every series the exporter's code names is on the page, and
// every series the page names is the exporter's.
func TestExporterReference(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("docs/reference/exporter.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"(infertop_[a-z_]+)"`)
	code := map[string]bool{}
	srcs, _ := filepath.Glob("exporter/*.go")
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		for _, m := range name.FindAllSubmatch(b, -1) {
			code[string(m[1])] = true
		}
	}
	if len(code) < 20 {
		t.Fatalf("found %d series in exporter/", len(code))
	}
	for n := range code {
		if !bytes.Contains(page, []byte("`"+n+"`")) {
			t.Errorf("the exporter serves %s; docs/reference/exporter.md does not name it", n)
		}
	}
	for _, m := range regexp.MustCompile("`(infertop_[a-z_]+)`").FindAllSubmatch(page, -1) {
		if n := string(m[1]); !code[n] {
			t.Errorf("docs/reference/exporter.md names %s, which the exporter does not serve", n)
		}
	}
}
