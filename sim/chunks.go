package sim

import (
	"encoding/json"
	"strconv"
)

// chunkEncoder writes the wire format of one request's answer by appending
// to byte slices: no reflection on the per-token path, since at zero model
// cost the sim's speed is the encoder's.
type chunkEncoder struct {
	kind    apiKind
	prefix  []byte // `data: {"id":...,"choices":[{"index":0,`
	idModel []byte // `"id":"...","object":...,"created":...,"model":"..."`
}

// newChunkEncoder writes the answers of request id; fp, when set, is the
// system_fingerprint put after the model in every message, where OpenAI
// puts it (and where a reader that stops at the member finds it soon).
func newChunkEncoder(kind apiKind, id uint64, created int64, model, fp string) *chunkEncoder {
	m, _ := json.Marshal(model)
	idStr, object := "chatcmpl-sim"+strconv.FormatUint(id, 10), "chat.completion.chunk"
	switch kind {
	case kindCompletions:
		idStr, object = "cmpl-sim"+strconv.FormatUint(id, 10), "text_completion"
	case kindInfer:
		idStr, object = "infer-sim"+strconv.FormatUint(id, 10), "infer"
	}
	e := &chunkEncoder{kind: kind}
	e.idModel = append(e.idModel, `"id":"`+idStr+`","object":"`+object+`","created":`+strconv.FormatInt(created, 10)+`,"model":`...)
	e.idModel = append(e.idModel, m...)
	if fp != "" {
		f, _ := json.Marshal(fp)
		e.idModel = append(e.idModel, `,"system_fingerprint":`...)
		e.idModel = append(e.idModel, f...)
	}
	e.prefix = append([]byte(`data: {`), e.idModel...)
	e.prefix = append(e.prefix, `,"choices":[{"index":0,`...)
	return e
}

// role is the role-only chunk that vLLM sends before the first token.
func (e *chunkEncoder) role(b []byte) []byte {
	if e.kind != kindChat {
		return b
	}
	b = append(b, e.prefix...)
	return append(b, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// token appends one token's chunk; word needs no JSON escaping.
func (e *chunkEncoder) token(b []byte, word string) []byte {
	b = append(b, e.prefix...)
	if e.kind == kindChat {
		b = append(b, `"delta":{"content":" `...)
		b = append(b, word...)
		return append(b, `"},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	b = append(b, `"text":" `...)
	b = append(b, word...)
	return append(b, `","logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

func (e *chunkEncoder) finish(b []byte) []byte {
	b = append(b, e.prefix...)
	if e.kind == kindChat {
		return append(b, `"delta":{},"logprobs":null,"finish_reason":"length"}]}`+"\n\n"...)
	}
	return append(b, `"text":"","logprobs":null,"finish_reason":"length"}]}`+"\n\n"...)
}

func (e *chunkEncoder) usage(b []byte, prompt, out int) []byte {
	b = append(b, `data: {`...)
	b = append(b, e.idModel...)
	b = append(b, `,"choices":[],"usage":`...)
	b = appendUsage(b, prompt, out)
	return append(b, "}\n\n"...)
}

func appendUsage(b []byte, prompt, out int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+out), 10)
	return append(b, '}')
}

// whole is a non-streamed answer.
func (e *chunkEncoder) whole(b []byte, text string, prompt, out int) []byte {
	t, _ := json.Marshal(text)
	b = append(b, '{')
	switch e.kind {
	case kindInfer:
		b = append(b, e.idModel...)
		b = append(b, `,"output":`...)
		b = append(b, t...)
		b = append(b, `,"input_tokens":`...)
		b = strconv.AppendInt(b, int64(prompt), 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		return append(b, "}\n"...)
	case kindChat:
		b = append(b, e.idModel[:len(e.idModel)]...)
		b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		b = append(b, t...)
		b = append(b, `},"finish_reason":"length"}],"usage":`...)
	default:
		b = append(b, e.idModel...)
		b = append(b, `,"choices":[{"index":0,"text":`...)
		b = append(b, t...)
		b = append(b, `,"finish_reason":"length"}],"usage":`...)
	}
	b = appendUsage(b, prompt, out)
	return append(b, "}\n"...)
}
