// Package schematest holds a result to report/result.schema.json in the
// tests of the packages that write or build results.
package schematest

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/infertop/infertop/report"
)

// Validate fails t unless doc is a result the schema accepts.
func Validate(t testing.TB, doc []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("result.schema.json", sch); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("the result does not match result.schema.json: %v", err)
	}
}
