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
	// For the Responses and Messages APIs (apis.go): the answer's id, the
	// model as JSON, the request's number, the time made, the seed of
	// its vectors; and the stream's state: the next sequence_number, the
	// parts opened so far, whether the last is reasoning.
	id, model   []byte
	num         string
	created     int64
	seed        uint64
	seqNo       int
	index       int
	inReasoning bool
	// The Responses API's: the text of the part open so far, and the
	// output items done, for their *.done events and the whole output
	// response.completed carries, as Ollama sends them and the OpenAI
	// SDKs build their final response from.
	partText, items []byte
}

// newChunkEncoder writes the answers of request id; fp, when set, is the
// system_fingerprint put after the model in every message, where OpenAI
// puts it (and where a reader that stops at the member finds it soon).
// bare names the chat and completions answers by the bare number, as
// recent TensorRT-LLM versions do (chatcmpl-<request_id>: the sim serving
// its /perf_metrics), where the sim's own are chatcmpl-sim<id>.
func newChunkEncoder(kind apiKind, id uint64, created int64, model, fp string, bare bool) *chunkEncoder {
	m, _ := json.Marshal(model)
	tag := "sim"
	if bare {
		tag = ""
	}
	idStr, object := "chatcmpl-"+tag+strconv.FormatUint(id, 10), "chat.completion.chunk"
	switch kind {
	case kindCompletions:
		idStr, object = "cmpl-"+tag+strconv.FormatUint(id, 10), "text_completion"
	case kindInfer:
		idStr, object = "infer-sim"+strconv.FormatUint(id, 10), "infer"
	}
	e := &chunkEncoder{kind: kind, model: m, num: strconv.FormatUint(id, 10), created: created, seed: id}
	switch kind {
	case kindResponses:
		e.id = []byte("resp_" + e.num)
	case kindMessages:
		e.id = []byte("msg_sim" + e.num)
	}
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

// token appends one token's chunk, of the reasoning or of the answer;
// word needs no JSON escaping.
func (e *chunkEncoder) token(b []byte, word string, reasoning bool) []byte {
	if e.kind == kindResponses || e.kind == kindMessages {
		return e.apiToken(b, word, reasoning)
	}
	b = append(b, e.prefix...)
	if e.kind == kindChat && reasoning {
		b = append(b, `"delta":{"reasoning_content":" `...)
		b = append(b, word...)
		return append(b, `"},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
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

func (e *chunkEncoder) usage(b []byte, prompt, out, reasoning int) []byte {
	b = append(b, `data: {`...)
	b = append(b, e.idModel...)
	b = append(b, `,"choices":[],"usage":`...)
	b = appendUsage(b, prompt, out, reasoning)
	return append(b, "}\n\n"...)
}

// appendUsage appends OpenAI's usage; the reasoning tokens, when there
// are any, in completion_tokens_details as OpenAI and DeepSeek give them.
func appendUsage(b []byte, prompt, out, reasoning int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+out), 10)
	if reasoning > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(reasoning), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// whole is a non-streamed answer: the reasoning (chat's
// reasoning_content; empty for none) and the text.
func (e *chunkEncoder) whole(b []byte, reasoning, text string, prompt, out, nReasoning int) []byte {
	if e.kind == kindResponses || e.kind == kindMessages {
		return append(b, e.wholeAPI(reasoning, text, prompt, out, nReasoning)...)
	}
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
		if reasoning != "" {
			r, _ := json.Marshal(reasoning)
			b = append(b, `,"reasoning_content":`...)
			b = append(b, r...)
		}
		b = append(b, `},"finish_reason":"length"}],"usage":`...)
	default:
		b = append(b, e.idModel...)
		b = append(b, `,"choices":[{"index":0,"text":`...)
		b = append(b, t...)
		b = append(b, `,"finish_reason":"length"}],"usage":`...)
	}
	b = appendUsage(b, prompt, out, nReasoning)
	return append(b, "}\n"...)
}
