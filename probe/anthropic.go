package probe

import (
	"net/http"

	"github.com/valyala/fastjson"
)

// AnthropicVersion is the anthropic-version header sent unless a header
// given sets another.
const AnthropicVersion = "2023-06-01"

// anthropicProto speaks the Anthropic Messages API (POST /v1/messages):
// streamed, server-sent events (message_start with the input usage,
// content_block_start/delta/stop, message_delta with the output usage,
// message_stop, ping, and error mid-stream) whose JSON "type" names the
// event; not streamed, one message object. max_tokens is required; a
// system turn goes in "system". The key goes in x-api-key, never as a
// bearer token (see setHeaders).
type anthropicProto struct {
	stream bool
	opts   BodyOptions
}

func (a *anthropicProto) body(model string, req Request) ([]byte, error) {
	msgs, system := splitSystem(req)
	m := map[string]any{"model": model, "max_tokens": max(req.MaxTokens, 1), "messages": msgs}
	if a.stream {
		m["stream"] = true
	}
	if system != "" {
		m["system"] = system
	}
	// The Messages API has no seed. ignore_eos is vLLM's, which takes it
	// on its Messages endpoint too (--fixed-output asks for it).
	if a.opts.IgnoreEOS {
		m["ignore_eos"] = true
	}
	sampling(m, BodyOptions{Temperature: a.opts.Temperature, TopP: a.opts.TopP}, "temperature", "top_p", "")
	addAnthropicOutput(m, a.opts.Output)
	return marshal(m, a.opts.Extra)
}

func (a *anthropicProto) framing() framing { return streamed(a.stream, frameSSE) }

func (a *anthropicProto) endsOnEOF() bool { return false }

func (a *anthropicProto) parse(ps *parser, data []byte) (chunkInfo, error) {
	var info chunkInfo
	if err := checkValues(data, a.limits().values); err != nil {
		return chunkInfo{}, err
	}
	v, err := parseObject(&ps.json, data)
	if err != nil {
		return info, err
	}
	switch typ := string(v.GetStringBytes("type")); typ {
	case "message_start":
		msg := v.Get("message")
		info.id = capID(msg.GetStringBytes("id"))
		if u := msg.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
			info.usage = readUsage(u)
		}
	case "content_block_start":
		anthropicBlock(v.Get("content_block"), &info)
	case "content_block_delta":
		anthropicBlock(v.Get("delta"), &info)
	case "message_delta":
		if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
			info.usage = readUsage(u)
		}
	case "message_stop":
		info.finished = true
	case "error":
		info.errMsg = append([]byte(nil), data...)
	case "message": // a whole answer
		info.id = capID(v.GetStringBytes("id"))
		for _, block := range v.GetArray("content") {
			anthropicBlock(block, &info)
		}
		if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
			info.usage = readUsage(u)
		}
		info.finished = true
	case "ping", "content_block_stop":
	default:
		if e := errorField(v); e != nil && typ == "" {
			info.errMsg = e
		}
		// An event of a later version of the API: nothing to time.
	}
	return info, nil
}

// anthropicBlock notes the text of a content block or of a delta to one:
// text (text, text_delta), a tool call's JSON (input_json_delta) and
// thinking (thinking, thinking_delta; redacted thinking carries none to
// time).
func anthropicBlock(b *fastjson.Value, info *chunkInfo) {
	if b == nil || b.Type() != fastjson.TypeObject {
		return
	}
	switch string(b.GetStringBytes("type")) {
	case "text", "text_delta":
		if len(b.GetStringBytes("text")) > 0 {
			info.output, info.answer = true, true
		}
	case "input_json_delta":
		if len(b.GetStringBytes("partial_json")) > 0 {
			info.output, info.answer = true, true
		}
	case "thinking", "thinking_delta":
		if len(b.GetStringBytes("thinking")) > 0 {
			info.output, info.reasoning = true, true
		}
	}
}

// setAuth puts the API key where the kind expects it: Anthropic's
// x-api-key (with anthropic-version unless a header sets one), everyone
// else's Authorization bearer token. A key given as a header (-H
// 'x-api-key: ...') is already in h.
func setAuth(kind Kind, key string, h http.Header) {
	if kind == Anthropic {
		if h.Get("anthropic-version") == "" {
			h.Set("anthropic-version", AnthropicVersion)
		}
		if key != "" && h.Get("x-api-key") == "" {
			h.Set("x-api-key", key)
		}
		return
	}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}
