package probe

import "encoding/json"

// errorStatus reads the HTTP-like code of an error object sent inside a
// stream ({"code": 429, ...} or {"error": {"code": ...}}); 0 when none.
func errorStatus(raw []byte) int {
	var e struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return 0
	}
	var n int
	if json.Unmarshal(e.Code, &n) == nil {
		return n
	}
	return 0
}
