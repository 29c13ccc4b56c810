package probe

import "encoding/json"

// errorStatus reads the HTTP-like code of an error object sent inside a
// stream ({"code": 429, ...} or {"error": {"code": ...}}); 0 when none.
// An error named rather than numbered (Anthropic's {"type":"error",
// "error":{"type":"overloaded_error"}}, the Responses API's
// {"code":"rate_limit_exceeded"}) gets the status its name stands for.
func errorStatus(raw []byte) int {
	var e struct {
		Code  json.RawMessage `json:"code"`
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return 0
	}
	var n int
	if json.Unmarshal(e.Code, &n) == nil {
		return n
	}
	var name string
	if json.Unmarshal(e.Code, &name) == nil {
		if n := namedErrorStatus(name); n > 0 {
			return n
		}
	}
	if len(e.Error) > 0 && e.Error[0] == '{' {
		if n := errorStatus(e.Error); n > 0 {
			return n
		}
	}
	return namedErrorStatus(e.Type)
}

// namedErrorStatus is the HTTP status an error's name stands for in the
// Anthropic and OpenAI APIs; 0 for a name it does not know.
func namedErrorStatus(name string) int {
	switch name {
	case "invalid_request_error", "invalid_prompt", "content_filter", "bad_request":
		return 400
	case "authentication_error", "invalid_api_key":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error", "rate_limit_exceeded", "insufficient_quota":
		return 429
	case "api_error", "server_error":
		return 500
	case "overloaded_error", "overloaded", "server_overloaded":
		return 529
	}
	return 0
}
