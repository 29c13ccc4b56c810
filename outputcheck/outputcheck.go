// Package outputcheck judges what a server generated when a load asks for
// structured output or tool calls: whether an answer is JSON, whether it
// holds to the JSON schema asked for, whether a tool was called, with
// arguments that are JSON matching the tool's parameters. It reads what a
// server sends, so every parse is bounded (MaxBytes, MaxDepth) before any
// value is built. It imports nothing of this module.
package outputcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The bounds on a document judged: past them an answer is invalid without
// being parsed. A structured answer is a few KiB; the caps keep a hostile
// answer's parse to a few MB of values.
const (
	MaxBytes = 256 << 10
	MaxDepth = 64
)

// Format is what the requests ask the answers to be.
type Format int

const (
	// Text asks for nothing: the answers are not judged.
	Text Format = iota
	// JSON asks for any JSON object (OpenAI's json_object, Ollama's "json").
	JSON
	// Schema asks for JSON holding to a schema (json_schema).
	Schema
)

// Spec is what a load asks for: a response format, and tools (any of
// which the model may call). The zero value asks for nothing.
type Spec struct {
	Format Format
	// SchemaDoc is the schema as given (Schema), sent in the requests.
	SchemaDoc json.RawMessage
	// Tools are the tools offered, in OpenAI's shape.
	Tools  []Tool
	schema *jsonschema.Schema
}

// Tool is one function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of its arguments, as given.
	Parameters json.RawMessage
	schema     *jsonschema.Schema
}

// IsZero reports whether s asks for nothing to be judged.
func (s *Spec) IsZero() bool { return s == nil || (s.Format == Text && len(s.Tools) == 0) }

// ParseFormat reads a response format: "json", or "json_schema:FILE"
// whose schema read gives. "" or "text" is none.
func ParseFormat(spec string, read func(path string) ([]byte, error)) (Spec, error) {
	switch kind, path, _ := strings.Cut(strings.TrimSpace(spec), ":"); kind {
	case "", "text":
		return Spec{}, nil
	case "json":
		if path != "" {
			return Spec{}, fmt.Errorf("bad response format %q: json takes no file (json_schema:FILE does)", spec)
		}
		return Spec{Format: JSON}, nil
	case "json_schema":
		if path == "" {
			return Spec{}, fmt.Errorf("bad response format %q: want json_schema:FILE", spec)
		}
		doc, err := read(path)
		if err != nil {
			return Spec{}, fmt.Errorf("response format's schema: %w", err)
		}
		sch, err := compile(doc)
		if err != nil {
			return Spec{}, fmt.Errorf("response format's schema %s: %w", path, err)
		}
		return Spec{Format: Schema, SchemaDoc: compact(doc), schema: sch}, nil
	}
	return Spec{}, fmt.Errorf("bad response format %q: want json or json_schema:FILE", spec)
}

// ParseTools reads OpenAI-style tool definitions: a JSON array of
// {"type":"function","function":{"name","description","parameters"}}
// (the bare function objects are taken too).
func ParseTools(doc []byte) ([]Tool, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(doc, &items); err != nil {
		return nil, fmt.Errorf("tools: want a JSON array of tool definitions: %w", err)
	}
	if len(items) == 0 {
		return nil, errors.New("tools: the list is empty")
	}
	var out []Tool
	seen := map[string]bool{}
	for i, item := range items {
		var wrap struct {
			Function json.RawMessage `json:"function"`
		}
		fn := item
		if json.Unmarshal(item, &wrap) == nil && len(wrap.Function) > 0 {
			fn = wrap.Function
		}
		var f struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(fn, &f); err != nil || f.Name == "" {
			return nil, fmt.Errorf("tools: tool %d has no function name", i+1)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("tools: %q is defined twice", f.Name)
		}
		seen[f.Name] = true
		if len(f.Parameters) == 0 || string(f.Parameters) == "null" {
			f.Parameters = json.RawMessage(`{"type":"object"}`)
		}
		sch, err := compile(f.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tools: %q's parameters: %w", f.Name, err)
		}
		out = append(out, Tool{Name: f.Name, Description: f.Description, Parameters: compact(f.Parameters), schema: sch})
	}
	return out, nil
}

// Builtin is the built-in tool set (--tools builtin): a weather lookup
// and a search, the shapes peers' tool-calling loads use.
func Builtin() []Tool {
	t, err := ParseTools([]byte(builtinTools))
	if err != nil {
		panic(err) // a constant of this package
	}
	return t
}

const builtinTools = `[
{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}},
{"type":"function","function":{"name":"search","description":"Search the web","parameters":{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"integer","minimum":1,"maximum":20}},"required":["query"]}}}
]`

// compile compiles a schema document.
func compile(doc []byte) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///schema.json", v); err != nil {
		return nil, err
	}
	return c.Compile("mem:///schema.json")
}

// compact is doc on one line, as it goes into every request.
func compact(doc []byte) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, doc) != nil {
		return append(json.RawMessage(nil), doc...)
	}
	return b.Bytes()
}

// ToolCall is one call an answer made: the function's name and its
// arguments as the server sent them (a JSON text, or its fragments joined).
type ToolCall struct {
	Name      string
	Arguments string
}

// Answer is what one request's answer held, as the client gathered it.
type Answer struct {
	// Text is the answer's text (not its reasoning).
	Text string
	// Calls are its tool calls, in order.
	Calls []ToolCall
	// Cut is true when the client kept less than the server sent (its
	// cap): such an answer cannot be judged valid.
	Cut bool
}

// Why an answer was judged invalid.
const (
	WhyNotJSON    = "not_json"     // the text is no JSON document (or past the bounds)
	WhySchema     = "schema"       // JSON, not holding to the schema
	WhyNoCall     = "no_tool_call" // tools offered, none called, and no valid answer instead
	WhyUnknown    = "unknown_tool" // a call of a tool not offered
	WhyArgsJSON   = "args_not_json"
	WhyArgsSchema = "args_schema"
	WhyCut        = "cut" // the answer went past the client's cap
)

// Verdict is one answer judged.
type Verdict struct {
	// Valid is true when the answer is what was asked for.
	Valid bool
	// Called is true when it called a tool; ArgsValid when every call's
	// arguments were JSON holding to its tool's parameters.
	Called, ArgsValid bool
	// Why is the first reason it is invalid (a Why* constant; "" when
	// valid).
	Why string
}

// Judge judges one answer against s. With tools offered, a tool call
// with valid arguments is valid; an answer without a call is valid only
// where a response format is asked for and its text holds to it (a model
// may answer without calling), else it is WhyNoCall.
func (s *Spec) Judge(a Answer) Verdict {
	var v Verdict
	if a.Cut {
		v.Why = WhyCut
		v.Called = len(a.Calls) > 0
		return v
	}
	if len(s.Tools) > 0 && len(a.Calls) > 0 {
		v.Called, v.ArgsValid = true, true
		for _, c := range a.Calls {
			if why := s.judgeCall(c); why != "" {
				v.ArgsValid = false
				if v.Why == "" {
					v.Why = why
				}
			}
		}
		v.Valid = v.ArgsValid
		return v
	}
	if s.Format == Text {
		if len(s.Tools) > 0 {
			v.Why = WhyNoCall
		} else {
			v.Valid = true
		}
		return v
	}
	v.Why = s.judgeText(a.Text)
	v.Valid = v.Why == ""
	return v
}

// judgeText judges a text answer against the response format.
func (s *Spec) judgeText(text string) string {
	doc, ok := parse(text)
	if !ok {
		return WhyNotJSON
	}
	if s.Format == JSON {
		if _, isObject := doc.(map[string]any); !isObject {
			return WhyNotJSON // json_object asks for an object
		}
		return ""
	}
	if s.schema != nil && s.schema.Validate(doc) != nil {
		return WhySchema
	}
	return ""
}

// judgeCall judges one call against the tools offered.
func (s *Spec) judgeCall(c ToolCall) string {
	for i := range s.Tools {
		t := &s.Tools[i]
		if t.Name != c.Name {
			continue
		}
		doc, ok := parse(c.Arguments)
		if !ok {
			return WhyArgsJSON
		}
		if t.schema != nil && t.schema.Validate(doc) != nil {
			return WhyArgsSchema
		}
		return ""
	}
	return WhyUnknown
}

// parse reads text as one JSON document within the bounds; whitespace
// around it is allowed (a grammar lets a model write it).
func parse(text string) (any, bool) {
	if len(text) > MaxBytes || !withinDepth(text, MaxDepth) {
		return nil, false
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, false
	}
	return v, true
}

// withinDepth reports whether the brackets of text nest at most max
// deep, counting outside strings only; it builds nothing.
func withinDepth(text string, max int) bool {
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}
