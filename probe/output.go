package probe

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/infertop/infertop/outputcheck"
)

// Structured output and tool calls: what a request asks for
// (BodyOptions.Output, written into each kind's body), and what its answer
// held (outputTaker, read from every message a second time, only for a
// load that asks), judged at its end (Result.Output).

// SettingOutput names BodyOptions.Output in a SettingError.
const SettingOutput = "structured output"

// checkOutput refuses what a kind cannot ask for: a response format or
// tools where its API has no field for them.
func (c Config) checkOutput() error {
	o := c.Body.Output
	if o.IsZero() {
		return nil
	}
	switch c.API {
	case OpenAIChat, "", OpenAIResponses, Ollama:
		return nil
	case Anthropic:
		if o.Format != outputcheck.Text {
			return &SettingError{SettingOutput, fmt.Errorf("the Messages API (%s) has no response format; tools it takes", c.API)}
		}
		return nil
	}
	return &SettingError{SettingOutput, fmt.Errorf("%s has no response format or tools: use openai-chat, openai-responses, ollama or anthropic (tools)", c.API)}
}

// openaiTools are the tools in Chat Completions' (and Ollama's) shape.
func openaiTools(tools []outputcheck.Tool) []any {
	out := make([]any, len(tools))
	for i, t := range tools {
		out[i] = map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters}}
	}
	return out
}

// addChatOutput asks Chat Completions for the output: response_format and
// tools.
func addChatOutput(m map[string]any, o *outputcheck.Spec) {
	if o.IsZero() {
		return
	}
	switch o.Format {
	case outputcheck.JSON:
		m["response_format"] = map[string]any{"type": "json_object"}
	case outputcheck.Schema:
		m["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": o.SchemaDoc}}
	}
	if len(o.Tools) > 0 {
		m["tools"] = openaiTools(o.Tools)
	}
}

// addOllamaOutput asks Ollama's native API: format ("json" or the schema)
// and tools.
func addOllamaOutput(m map[string]any, o *outputcheck.Spec) {
	if o.IsZero() {
		return
	}
	switch o.Format {
	case outputcheck.JSON:
		m["format"] = "json"
	case outputcheck.Schema:
		m["format"] = o.SchemaDoc
	}
	if len(o.Tools) > 0 {
		m["tools"] = openaiTools(o.Tools)
	}
}

// addResponsesOutput asks the Responses API: text.format and its flat
// function tools.
func addResponsesOutput(m map[string]any, o *outputcheck.Spec) {
	if o.IsZero() {
		return
	}
	switch o.Format {
	case outputcheck.JSON:
		m["text"] = map[string]any{"format": map[string]any{"type": "json_object"}}
	case outputcheck.Schema:
		m["text"] = map[string]any{"format": map[string]any{"type": "json_schema", "name": "answer", "schema": o.SchemaDoc}}
	}
	if len(o.Tools) > 0 {
		tools := make([]any, len(o.Tools))
		for i, t := range o.Tools {
			tools[i] = map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.Parameters}
		}
		m["tools"] = tools
	}
}

// addAnthropicOutput asks the Messages API for tools (input_schema).
func addAnthropicOutput(m map[string]any, o *outputcheck.Spec) {
	if o.IsZero() || len(o.Tools) == 0 {
		return
	}
	tools := make([]any, len(o.Tools))
	for i, t := range o.Tools {
		tools[i] = map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Parameters}
	}
	m["tools"] = tools
}

// maxCalls bounds the tool calls an answer's taker keeps: past it the
// answer is cut (and invalid), so a server cannot grow the list.
const maxCalls = 64

// outputTaker gathers one answer's text and tool calls from its messages,
// bounded: the text to outputcheck.MaxBytes and a byte (so an answer past
// the judge's bound is seen to be), the calls to maxCalls and their
// arguments together to outputcheck.MaxBytes. The text is the server's,
// untrusted: it is judged, never shown.
type outputTaker struct {
	text  AnswerText
	calls []takenCall
	args  int // the arguments' bytes kept, all calls together
	cut   bool
	p     fastjson.Parser
}

// takenCall is one tool call as its messages built it: key is how its
// fragments find it (an index, an output index, a block's index).
type takenCall struct {
	key  int
	name string
	args []byte
}

func newOutputTaker() *outputTaker {
	return &outputTaker{text: AnswerText{Max: outputcheck.MaxBytes + 1}}
}

// answer is what the taker gathered, for the judge.
func (t *outputTaker) answer() outputcheck.Answer {
	a := outputcheck.Answer{Text: t.text.String(), Cut: t.cut}
	for _, c := range t.calls {
		a.Calls = append(a.Calls, outputcheck.ToolCall{Name: c.name, Arguments: string(c.args)})
	}
	return a
}

// call is the call keyed key, a new one when no call has that key.
func (t *outputTaker) call(key int) *takenCall {
	for i := range t.calls {
		if t.calls[i].key == key {
			return &t.calls[i]
		}
	}
	if len(t.calls) >= maxCalls {
		t.cut = true
		return nil
	}
	t.calls = append(t.calls, takenCall{key: key})
	return &t.calls[len(t.calls)-1]
}

// addArgs appends b to c's arguments within the bound.
func (t *outputTaker) addArgs(c *takenCall, b []byte) {
	if c == nil || len(b) == 0 {
		return
	}
	if t.args+len(b) > outputcheck.MaxBytes {
		t.cut = true
		return
	}
	t.args += len(b)
	c.args = append(c.args, b...)
}

// setName names c (the first name a call's messages give).
func setName(c *takenCall, name []byte) {
	if c != nil && c.name == "" && len(name) > 0 {
		c.name = string(name[:min(len(name), 256)])
	}
}

// argsOf is a call's arguments as sent: a string's text, or an object's
// JSON (Ollama's native calls, Anthropic's whole tool_use input).
func argsOf(v *fastjson.Value) []byte {
	if v == nil {
		return nil
	}
	if v.Type() == fastjson.TypeString {
		return v.GetStringBytes()
	}
	return v.MarshalTo(nil)
}

// take reads one message (a stream's, or the whole answer when whole).
// A message that does not parse adds nothing: the timing path has judged
// it already.
func (t *outputTaker) take(pr protocol, data []byte, whole bool) {
	t.text.take(pr, data, whole)
	p := &t.p
	if whole {
		p = new(fastjson.Parser) // a whole answer's parser is not kept
	}
	v, err := p.ParseBytes(data)
	if err != nil {
		return
	}
	switch pr.(type) {
	case *openaiProto:
		ch := v.Get("choices", "0")
		for _, where := range []string{"delta", "message"} {
			for i, tc := range ch.GetArray(where, "tool_calls") {
				key := i
				if idx := tc.Get("index"); idx != nil && idx.Type() == fastjson.TypeNumber {
					key = idx.GetInt()
				}
				c := t.call(key)
				setName(c, tc.GetStringBytes("function", "name"))
				t.addArgs(c, argsOf(tc.Get("function", "arguments")))
			}
		}
	case *ollamaProto:
		for _, tc := range v.GetArray("message", "tool_calls") {
			c := t.call(len(t.calls)) // Ollama sends each call whole: a key of its own
			setName(c, tc.GetStringBytes("function", "name"))
			t.addArgs(c, argsOf(tc.Get("function", "arguments")))
		}
	case *responsesProto:
		t.takeResponses(v)
	case *anthropicProto:
		t.takeAnthropic(v)
	}
}

// takeResponses reads a Responses event or a whole response.
func (t *outputTaker) takeResponses(v *fastjson.Value) {
	switch string(v.GetStringBytes("type")) {
	case "response.output_item.added":
		if item := v.Get("item"); string(item.GetStringBytes("type")) == "function_call" {
			c := t.call(v.GetInt("output_index"))
			setName(c, item.GetStringBytes("name"))
			t.addArgs(c, item.GetStringBytes("arguments"))
		}
	case "response.function_call_arguments.delta":
		t.addArgs(t.call(v.GetInt("output_index")), v.GetStringBytes("delta"))
	case "":
		for i, item := range v.GetArray("output") {
			if string(item.GetStringBytes("type")) == "function_call" {
				c := t.call(i)
				setName(c, item.GetStringBytes("name"))
				t.addArgs(c, item.GetStringBytes("arguments"))
			}
		}
	}
}

// takeAnthropic reads a Messages event or a whole message. A streamed
// tool_use block starts with an empty input, its JSON coming in
// input_json_delta fragments; a whole one holds its input as an object.
func (t *outputTaker) takeAnthropic(v *fastjson.Value) {
	switch string(v.GetStringBytes("type")) {
	case "content_block_start":
		if b := v.Get("content_block"); string(b.GetStringBytes("type")) == "tool_use" {
			setName(t.call(v.GetInt("index")), b.GetStringBytes("name"))
		}
	case "content_block_delta":
		if d := v.Get("delta"); string(d.GetStringBytes("type")) == "input_json_delta" {
			t.addArgs(t.call(v.GetInt("index")), d.GetStringBytes("partial_json"))
		}
	case "message":
		for i, b := range v.GetArray("content") {
			if string(b.GetStringBytes("type")) == "tool_use" {
				c := t.call(i)
				setName(c, b.GetStringBytes("name"))
				t.addArgs(c, argsOf(b.Get("input")))
			}
		}
	}
}

// OutputResult is one answer judged against what the load asked for.
type OutputResult struct {
	// Judged is true when the load asked for structured output or tools
	// and the request succeeded (a failed request has no answer to judge).
	Judged bool
	outputcheck.Verdict
}

// String is the result as a requests log writes it: "", "valid", or the
// reason it is invalid.
func (r OutputResult) String() string {
	switch {
	case !r.Judged:
		return ""
	case r.Valid:
		return "valid"
	}
	return r.Why
}
