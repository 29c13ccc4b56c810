package report

import _ "embed"

//go:embed result.schema.json
var schema []byte

// Schema returns the JSON Schema (draft 2020-12) of the result WriteJSON
// writes; the file is report/result.schema.json in the repository.
func Schema() []byte { return append([]byte(nil), schema...) }
