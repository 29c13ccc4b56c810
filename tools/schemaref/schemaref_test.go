package schemaref

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "write docs/reference/result-json.md from the schema")

var (
	schemaFile = filepath.Join("..", "..", "report", "result.schema.json")
	pageFile   = filepath.Join("..", "..", "docs", "reference", "result-json.md")
)

// TestResultReference holds docs/reference/result-json.md to the
// result's schema, and every key of the schema to a description (its
// meaning and its unit).
func TestResultReference(t *testing.T) {
	schema, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := Undescribed(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range missing {
		t.Errorf("%s has no description in report/result.schema.json", k)
	}
	page, err := Page(schema)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(pageFile, page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(pageFile); err != nil || !bytes.Equal(got, page) {
		t.Errorf("docs/reference/result-json.md differs from the schema (go test ./tools/schemaref -update): %v", err)
	}
}
