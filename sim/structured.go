package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
)

// Structured output and tool calls, on Chat Completions: a request that
// offers tools is answered with a call of the first tool, its arguments
// made from the tool's parameters; one that asks for a response format
// (json_object, json_schema) with a JSON document (a json_schema's made
// from its schema). Params.Invalid of them are broken: the document or
// the arguments lose their last byte, so they are no JSON. The document
// is spread over the answer's tokens (padded with the spaces JSON allows
// after it when it is shorter), so the timing model is the text's.

// structured is one answer's document: a tool call's arguments (call
// names the tool) or the answer's text.
type structured struct {
	call string
	doc  []byte
}

// maxSchemaDepth bounds the nesting a schema's sample follows.
const maxSchemaDepth = 8

// errStructuredAPI refuses structured output where the sim does not
// write it.
var errStructuredAPI = errors.New("the sim answers response_format and tools on /v1/chat/completions only")

// askedStructure reads what req asks for (nil: plain text); invalid breaks
// the document.
func askedStructure(kind apiKind, req *genRequest, seed uint64, invalid bool) (*structured, error) {
	if len(req.Tools) == 0 && len(req.ResponseFormat) == 0 {
		return nil, nil
	}
	if kind != kindChat {
		return nil, errStructuredAPI
	}
	var st structured
	switch {
	case len(req.Tools) > 0:
		var tool struct {
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(req.Tools[0], &tool); err != nil || tool.Function.Name == "" {
			return nil, errors.New("tools[0]: want {\"type\":\"function\",\"function\":{\"name\",...}}")
		}
		st.call = tool.Function.Name
		st.doc = sample(nil, tool.Function.Parameters, seed, 0)
	default:
		var rf struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return nil, errors.New("response_format: want an object")
		}
		switch rf.Type {
		case "text":
			return nil, nil
		case "json_object":
			st.doc = sample(nil, map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}, seed, 0)
		case "json_schema":
			st.doc = sample(nil, rf.JSONSchema.Schema, seed, 0)
		default:
			return nil, errors.New("response_format: the type is text, json_object or json_schema")
		}
	}
	if invalid {
		st.doc = st.doc[:len(st.doc)-1]
	}
	return &st, nil
}

// sample appends a value that holds to schema (the common keywords: type,
// properties and required, enum, const, maxLength, minimum, items),
// drawn from seed.
func sample(b []byte, schema map[string]any, seed uint64, depth int) []byte {
	if v, ok := schema["const"]; ok {
		return appendJSON(b, v)
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return appendJSON(b, e[seed%uint64(len(e))])
	}
	typ, _ := schema["type"].(string)
	if ts, ok := schema["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	if typ == "" {
		if _, ok := schema["properties"]; ok {
			typ = "object"
		}
	}
	switch typ {
	case "object":
		if depth >= maxSchemaDepth {
			return append(b, "{}"...)
		}
		props, _ := schema["properties"].(map[string]any)
		b = append(b, '{')
		i := 0
		for _, name := range sortedKeys(props) {
			sub, _ := props[name].(map[string]any)
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, name)
			b = append(b, ':')
			b = sample(b, sub, seed+uint64(i)+1, depth+1)
			i++
		}
		return append(b, '}')
	case "array":
		items, _ := schema["items"].(map[string]any)
		if depth >= maxSchemaDepth || items == nil {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		b = sample(b, items, seed+1, depth+1)
		return append(b, ']')
	case "integer", "number":
		n := int64(seed % 100)
		if lo, ok := schema["minimum"].(float64); ok && float64(n) < lo {
			n = int64(lo + 0.5)
		}
		if hi, ok := schema["maximum"].(float64); ok && float64(n) > hi {
			n = int64(hi)
		}
		return strconv.AppendInt(b, n, 10)
	case "boolean":
		return strconv.AppendBool(b, seed%2 == 0)
	case "null":
		return append(b, "null"...)
	}
	s := Word(seed, 0)
	if m, ok := schema["maxLength"].(float64); ok && int(m) < len(s) {
		s = s[:max(int(m), 0)]
	}
	return appendJSON(b, s)
}

// appendJSON appends v's JSON.
func appendJSON(b []byte, v any) []byte {
	j, _ := json.Marshal(v)
	return append(b, j...)
}

// sortedKeys are m's keys in order: a document the same for a seed.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// piece is token i's part of the document over n tokens, padded with
// spaces to at least n bytes so every token carries one.
func (st *structured) piece(i, n int) []byte {
	l := max(len(st.doc), n)
	from, to := i*l/n, (i+1)*l/n
	out := make([]byte, 0, to-from)
	for k := from; k < to; k++ {
		if k < len(st.doc) {
			out = append(out, st.doc[k])
		} else {
			out = append(out, ' ')
		}
	}
	return out
}

// whole is the whole padded document over n tokens.
func (st *structured) whole(n int) []byte {
	return append(append([]byte(nil), st.doc...), bytes.Repeat([]byte{' '}, max(n-len(st.doc), 0))...)
}

// structToken appends token i of n of a structured chat answer: the
// text's piece as content, or the call's piece of its arguments (the
// first with the call's id, type and name, as llama.cpp and vLLM stream
// them).
func (e *chunkEncoder) structToken(b []byte, st *structured, i, n int) []byte {
	b = append(b, e.prefix...)
	piece := appendJSON(nil, string(st.piece(i, n)))
	if st.call == "" {
		b = append(b, `"delta":{"content":`...)
		b = append(b, piece...)
		return append(b, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	b = append(b, `"delta":{"tool_calls":[{"index":0,`...)
	if i == 0 {
		b = append(b, `"id":"call_`...)
		b = append(b, e.num...)
		b = append(b, `","type":"function","function":{"name":`...)
		b = appendJSON(b, st.call)
		b = append(b, `,"arguments":`...)
	} else {
		b = append(b, `"function":{"arguments":`...)
	}
	b = append(b, piece...)
	return append(b, `}}]},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// structWhole is a whole structured chat answer.
func (e *chunkEncoder) structWhole(b []byte, st *structured, prompt, out int) []byte {
	doc := appendJSON(nil, string(st.whole(out)))
	b = append(b, '{')
	b = append(b, e.idModel...)
	if st.call == "" {
		b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		b = append(b, doc...)
		b = append(b, `},"finish_reason":"stop"}],"usage":`...)
	} else {
		b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_`...)
		b = append(b, e.num...)
		b = append(b, `","type":"function","function":{"name":`...)
		b = appendJSON(b, st.call)
		b = append(b, `,"arguments":`...)
		b = append(b, doc...)
		b = append(b, `}}]},"finish_reason":"tool_calls"}],"usage":`...)
	}
	b = appendUsage(b, prompt, out, 0)
	return append(b, "}\n"...)
}
