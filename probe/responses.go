package probe

import (
	"fmt"

	"github.com/valyala/fastjson"
)

// responsesProto speaks the OpenAI Responses API (POST /v1/responses):
// streamed, server-sent events whose JSON "type" names the event (the
// event: line says it too, but not every gateway keeps it, so the type is
// what is read); not streamed, one response object.
//
// The stream has no [DONE]: response.completed ends it, and a stream that
// ends without it (or response.incomplete for its output limit) is cut.
// response.failed, an incomplete answer for any other reason (a content
// filter) and the error event are errors, classed by their code.
type responsesProto struct {
	stream bool
	opts   BodyOptions
	images *imagePool // nil: none
}

func (o *responsesProto) body(model string, req Request) ([]byte, error) {
	m := map[string]any{"model": model, "stream": o.stream, "max_output_tokens": req.MaxTokens}
	input, instructions := splitSystem(req)
	if instructions != "" {
		m["instructions"] = instructions
	}
	switch {
	case o.images != nil:
		m["input"] = responsesWithImages(input, o.images.take())
	case len(input) == 1 && input[0].Role == "user":
		m["input"] = input[0].Content
	default:
		m["input"] = input
	}
	// The Responses API has no seed (nor min_tokens). ignore_eos is no
	// part of it either, but servers built on vLLM's engine take it there
	// as on chat (--fixed-output asks for it: OpenAI itself refuses it).
	if o.opts.IgnoreEOS {
		m["ignore_eos"] = true
	}
	sampling(m, BodyOptions{Temperature: o.opts.Temperature, TopP: o.opts.TopP}, "temperature", "top_p", "")
	addResponsesOutput(m, o.opts.Output)
	return marshal(m, o.opts.Extra)
}

// splitSystem separates a conversation's system turns (Responses'
// instructions, Anthropic's system) from the rest, joined by blank lines.
func splitSystem(req Request) (rest []Message, system string) {
	for _, m := range req.messages() {
		if m.Role == "system" || m.Role == "developer" {
			if system != "" {
				system += "\n\n"
			}
			system += m.Content
			continue
		}
		rest = append(rest, m)
	}
	if len(rest) == 0 {
		rest = []Message{{Role: "user", Content: ""}}
	}
	return rest, system
}

func (o *responsesProto) framing() framing { return streamed(o.stream, frameSSE) }

func (o *responsesProto) endsOnEOF() bool { return false }

// responsesTextEvent says whether an event of the Responses API carries
// generated text, and whether it is the reasoning's (the open models'
// reasoning_text, OpenAI's summaries of it) or the answer's.
func responsesTextEvent(typ string) (text, reasoning bool) {
	switch typ {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		return true, false
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.reasoning.delta":
		return true, true
	}
	return false, false
}

func (o *responsesProto) parse(ps *parser, data []byte) (chunkInfo, error) {
	var info chunkInfo
	if err := checkValues(data, o.limits().values); err != nil {
		return chunkInfo{}, err
	}
	v, err := parseObject(&ps.json, data)
	if err != nil {
		return info, err
	}
	typ := string(v.GetStringBytes("type"))
	text, reasoning := responsesTextEvent(typ)
	switch {
	case text:
		if len(v.GetStringBytes("delta")) > 0 {
			info.output, info.reasoning, info.answer = true, reasoning, !reasoning
		}
	case typ == "response.created", typ == "response.in_progress":
		info.id = capID(v.GetStringBytes("response", "id"))
	case typ == "response.completed", typ == "response.incomplete", typ == "response.failed":
		readResponse(v.Get("response"), &info, false)
	case typ == "error":
		info.errMsg = append([]byte(nil), data...)
	case typ == "":
		// No type: the whole response object (not streamed), or an
		// error object with a 200.
		if e := errorField(v); e != nil {
			info.errMsg = e
			return info, nil
		}
		if string(v.GetStringBytes("object")) != "response" {
			return info, fmt.Errorf("malformed message: neither an event nor a response object")
		}
		readResponse(v, &info, true)
	}
	return info, nil
}

// readResponse reads a response object: its id, usage and status, and
// (whole, for a non-streamed answer) whether its output holds text.
func readResponse(r *fastjson.Value, info *chunkInfo, whole bool) {
	if r == nil || r.Type() != fastjson.TypeObject {
		info.errMsg = []byte(`{"message":"a response event without its response object"}`)
		return
	}
	info.id = capID(r.GetStringBytes("id"))
	if u := r.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		info.usage = readUsage(u)
	}
	if whole {
		for _, item := range r.GetArray("output") {
			readResponseItem(item, info)
		}
	}
	switch status := string(r.GetStringBytes("status")); status {
	case "completed":
		info.finished = true
	case "incomplete":
		reason := string(r.GetStringBytes("incomplete_details", "reason"))
		if reason == "max_output_tokens" {
			// The output limit reached: the answer asked for, which a
			// load test with a fixed length meets every time.
			info.finished = true
			return
		}
		if reason == "" {
			reason = "unknown"
		}
		info.errMsg = fmt.Appendf(nil, `{"code":%q,"message":"response incomplete: %s"}`, reason, reason)
	case "failed", "cancelled":
		if e := r.Get("error"); e != nil && e.Type() == fastjson.TypeObject {
			info.errMsg = e.MarshalTo(nil)
		} else {
			info.errMsg = fmt.Appendf(nil, `{"message":"response %s"}`, status)
		}
	default:
		info.errMsg = []byte(`{"message":"response ended with an unknown status"}`)
	}
}

// readResponseItem notes the text of one output item of a whole
// response: a message's output_text (answer), a reasoning item's text or
// summary (reasoning).
func readResponseItem(item *fastjson.Value, info *chunkInfo) {
	switch string(item.GetStringBytes("type")) {
	case "message":
		for _, part := range item.GetArray("content") {
			if len(part.GetStringBytes("text")) > 0 || len(part.GetStringBytes("refusal")) > 0 {
				info.output, info.answer = true, true
			}
		}
	case "reasoning":
		for _, key := range []string{"content", "summary"} {
			for _, part := range item.GetArray(key) {
				if len(part.GetStringBytes("text")) > 0 {
					info.output, info.reasoning = true, true
				}
			}
		}
	case "function_call":
		if len(item.GetStringBytes("arguments")) > 0 {
			info.output, info.answer = true, true
		}
	}
}
