package probe

import (
	"bytes"
	"encoding/json"
	"strings"
)

// errorText is what an error answer's body says, for the error's message:
// the message of the JSON error shapes the servers send (OpenAI's and
// vLLM's {"error":{"message":…}}, vLLM's older {"object":"error",
// "message":…}, Ollama's and TGI's {"error":"…"}, FastAPI's {"detail":"…"}),
// else the body itself with its runs of space collapsed. "HTTP 404: The
// model `nope` does not exist." reads where the whole JSON did not fit a
// line. The caller redacts and the display sanitises it, as before.
func errorText(body []byte) string {
	if msg := jsonErrorMessage(body); msg != "" {
		return msg
	}
	return strings.Join(strings.Fields(string(body)), " ")
}

// jsonErrorMessage is the message of a JSON error body, or "".
func jsonErrorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return ""
	}
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "" // cut at the excerpt's end, or not JSON: the body as it is
	}
	var nested struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
	}
	if len(e.Error) > 0 && e.Error[0] == '{' && json.Unmarshal(e.Error, &nested) == nil {
		if s := jsonString(nested.Message); s != "" {
			return withType(s, jsonString(nested.Type))
		}
	}
	if s := jsonString(e.Message); s != "" {
		return withType(s, jsonString(e.Type))
	}
	for _, raw := range []json.RawMessage{e.Error, e.Detail} {
		if s := jsonString(raw); s != "" {
			return s
		}
	}
	return ""
}

// withType adds the error's type to its message, "… (NotFoundError)":
// the kind of failure, where the message is about the one request.
func withType(msg, typ string) string {
	if typ == "" || strings.Contains(msg, typ) {
		return msg
	}
	return msg + " (" + typ + ")"
}

// jsonString is raw as a JSON string with its runs of space collapsed, or
// "" when it is none.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.Join(strings.Fields(s), " ")
}
