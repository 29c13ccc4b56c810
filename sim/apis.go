package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// The wire formats of the OpenAI Responses API, the Anthropic Messages
// API and the embeddings APIs, and the reasoning a thinking model streams
// before its answer (Params.Reasoning). The shapes follow what Ollama
// v0.24.0 sends (recorded in infertop's probe/testdata/ollama) and the
// vendors' documentation for what Ollama never sends (reasoning events,
// thinking blocks, ping).

// begin appends what a stream opens with before its first token: the
// Responses API's response.created and response.in_progress, Anthropic's
// message_start and a ping; chat's role chunk.
func (e *chunkEncoder) begin(b []byte, prompt int) []byte {
	switch e.kind {
	case kindResponses:
		b = e.event(b, "response.created", `"response":`, e.response(nil, "in_progress", -1, 0, 0), "")
		return e.event(b, "response.in_progress", `"response":`, e.response(nil, "in_progress", -1, 0, 0), "")
	case kindMessages:
		b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\""...)
		b = append(b, e.id...)
		b = append(b, `","type":"message","role":"assistant","model":`...)
		b = append(b, e.model...)
		b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(prompt), 10)
		b = append(b, ",\"output_tokens\":0}}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n"...)
		return b
	}
	return e.role(b)
}

// event appends one server-sent event of the Responses API: its event:
// line, then the JSON with the members given, the sequence number and
// the type (keys in Ollama's order: sorted, the type last).
func (e *chunkEncoder) event(b []byte, typ, key string, value []byte, more string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {"...)
	b = append(b, key...)
	b = append(b, value...)
	b = append(b, more...)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.seqNo), 10)
	e.seqNo++
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	return append(b, "\"}\n\n"...)
}

// response is a Responses API response object; out < 0 leaves the usage
// null.
func (e *chunkEncoder) response(text []byte, status string, prompt, out, reasoning int) []byte {
	b := []byte(`{"id":"`)
	b = append(b, e.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = strconv.AppendInt(b, e.created, 10)
	b = append(b, `,"model":`...)
	b = append(b, e.model...)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","output":[`...)
	b = append(b, text...)
	b = append(b, `],"usage":`...)
	if prompt < 0 {
		b = append(b, "null"...)
	} else {
		b = appendResponsesUsage(b, prompt, out, reasoning)
	}
	return append(b, '}')
}

func appendResponsesUsage(b []byte, prompt, out, reasoning int) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(reasoning), 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+out), 10)
	return append(b, '}')
}

// startPart appends what opens the reasoning (reasoning true) or the
// answer on the new APIs: Responses' output item (and the answer's
// content part), Anthropic's content block. Chat needs none.
func (e *chunkEncoder) startPart(b []byte, reasoning bool) []byte {
	switch e.kind {
	case kindResponses:
		if e.index > 0 { // the reasoning is over: its item is done
			b = e.donePart(b)
		}
		idx := strconv.Itoa(e.index)
		if reasoning {
			b = e.event(b, "response.output_item.added", `"item":`, []byte(`{"content":[],"id":"rs_`+e.num+`","summary":[],"type":"reasoning"}`), `,"output_index":`+idx)
			return e.event(b, "response.content_part.added", `"content_index":0,"item_id":"rs_`+e.num+`","output_index":`+idx, nil, `,"part":{"text":"","type":"reasoning_text"}`)
		}
		b = e.event(b, "response.output_item.added", `"item":`, []byte(`{"content":[],"id":"msg_`+e.num+`","role":"assistant","status":"in_progress","type":"message"}`), `,"output_index":`+idx)
		return e.event(b, "response.content_part.added", `"content_index":0,"item_id":"msg_`+e.num+`","output_index":`+idx, nil, `,"part":{"annotations":[],"logprobs":[],"text":"","type":"output_text"}`)
	case kindMessages:
		if e.index > 0 {
			b = e.stopBlock(b)
		}
		b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
		b = strconv.AppendInt(b, int64(e.index), 10)
		if reasoning {
			return append(b, ",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"...)
		}
		return append(b, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
	}
	return b
}

func (e *chunkEncoder) stopBlock(b []byte) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	b = strconv.AppendInt(b, int64(e.index-1), 10)
	return append(b, "}\n\n"...)
}

// donePart appends the Responses API's events that close the part open
// (the last opened, at e.index-1): the text's done, the content part's
// done and the output item's done, each with the whole text (Ollama's
// order); and keeps the item for response.completed's output.
func (e *chunkEncoder) donePart(b []byte) []byte {
	text, _ := json.Marshal(string(e.partText))
	e.partText = e.partText[:0]
	idx := strconv.Itoa(e.index - 1)
	var item []byte
	if e.inReasoning {
		at := `"content_index":0,"item_id":"rs_` + e.num + `","output_index":` + idx
		b = e.event(b, "response.reasoning_text.done", at, nil, `,"text":`+string(text))
		part := `{"text":` + string(text) + `,"type":"reasoning_text"}`
		b = e.event(b, "response.content_part.done", at, nil, `,"part":`+part)
		item = []byte(`{"content":[` + part + `],"id":"rs_` + e.num + `","summary":[],"type":"reasoning"}`)
	} else {
		at := `"content_index":0,"item_id":"msg_` + e.num + `","logprobs":[],"output_index":` + idx
		b = e.event(b, "response.output_text.done", at, nil, `,"text":`+string(text))
		part := `{"annotations":[],"logprobs":[],"text":` + string(text) + `,"type":"output_text"}`
		b = e.event(b, "response.content_part.done", `"content_index":0,"item_id":"msg_`+e.num+`","output_index":`+idx, nil, `,"part":`+part)
		item = []byte(`{"content":[` + part + `],"id":"msg_` + e.num + `","role":"assistant","status":"completed","type":"message"}`)
	}
	b = e.event(b, "response.output_item.done", `"item":`, item, `,"output_index":`+idx)
	if len(e.items) > 0 {
		e.items = append(e.items, ',')
	}
	e.items = append(e.items, item...)
	return b
}

// apiToken appends one token of the new APIs, a reasoning one or the
// answer's, opening the part it belongs to first.
func (e *chunkEncoder) apiToken(b []byte, word string, reasoning bool) []byte {
	if e.index == 0 || e.inReasoning != reasoning {
		b = e.startPart(b, reasoning)
		e.inReasoning = reasoning
		e.index++
	}
	switch e.kind {
	case kindResponses:
		typ, item := "response.output_text.delta", "msg_"
		if reasoning {
			typ, item = "response.reasoning_text.delta", "rs_"
		}
		e.partText = append(append(e.partText, ' '), word...)
		return e.event(b, typ, `"content_index":0,"delta":" `+word+`","item_id":"`+item+e.num+`","output_index":`+strconv.Itoa(e.index-1), nil, "")
	default: // kindMessages
		b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
		b = strconv.AppendInt(b, int64(e.index-1), 10)
		if reasoning {
			b = append(b, `,"delta":{"type":"thinking_delta","thinking":" `...)
		} else {
			b = append(b, `,"delta":{"type":"text_delta","text":" `...)
		}
		b = append(b, word...)
		return append(b, "\"}}\n\n"...)
	}
}

// end appends what closes a stream: chat's and completions' finish chunk,
// usage chunk (when asked for) and [DONE]; the Responses API's
// response.completed with the usage; Anthropic's content_block_stop,
// message_delta with the usage and message_stop.
func (e *chunkEncoder) end(b []byte, prompt, out, reasoning int, usage bool) []byte {
	switch e.kind {
	case kindResponses:
		if e.index > 0 {
			b = e.donePart(b)
		}
		return e.event(b, "response.completed", `"response":`, e.response(e.items, "completed", prompt, out, reasoning), "")
	case kindMessages:
		if e.index > 0 {
			b = e.stopBlock(b)
		}
		b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":"...)
		b = strconv.AppendInt(b, int64(prompt), 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		return append(b, "}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	}
	b = e.finish(b)
	if usage {
		b = e.usage(b, prompt, out, reasoning)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// wholeAPI is a non-streamed answer of the new APIs: reasoning then text.
func (e *chunkEncoder) wholeAPI(reasoning, text string, prompt, out, nReasoning int) []byte {
	r, _ := json.Marshal(reasoning)
	t, _ := json.Marshal(text)
	if e.kind == kindResponses {
		var items []byte
		if reasoning != "" {
			items = append(items, `{"id":"rs_`+e.num+`","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":`...)
			items = append(items, r...)
			items = append(items, "}]},"...)
		}
		items = append(items, `{"id":"msg_`+e.num+`","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
		items = append(items, t...)
		items = append(items, "}]}"...)
		return append(e.response(items, "completed", prompt, out, nReasoning), '\n')
	}
	b := []byte(`{"id":"`)
	b = append(b, e.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = append(b, e.model...)
	b = append(b, `,"content":[`...)
	if reasoning != "" {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = append(b, r...)
		b = append(b, `,"signature":"sim"},`...)
	}
	b = append(b, `{"type":"text","text":`...)
	b = append(b, t...)
	b = append(b, `}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	return append(b, "}}\n"...)
}

// embeddings is an embeddings answer: n vectors of embedDims unit-length
// floats, drawn from the request's id, and the input count; with b64
// (OpenAI's encoding_format base64) each vector is the base64 of its
// float32s, little-endian, as OpenAI and Ollama send it.
func (e *chunkEncoder) embeddings(n, prompt int, b64 bool) []byte {
	var b []byte
	if e.kind == kindOllamaEmbed {
		b = append(b, `{"model":`...)
		b = append(b, e.model...)
		b = append(b, `,"embeddings":[`...)
	} else {
		b = append(b, `{"object":"list","data":[`...)
	}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if e.kind != kindOllamaEmbed {
			b = append(b, `{"object":"embedding","index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"embedding":`...)
		}
		b = appendVector(b, e.seed+uint64(i), b64)
		if e.kind != kindOllamaEmbed {
			b = append(b, '}')
		}
	}
	if e.kind == kindOllamaEmbed {
		b = append(b, `],"total_duration":0,"load_duration":0,"prompt_eval_count":`...)
		b = strconv.AppendInt(b, int64(prompt), 10)
		return append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = append(b, e.model...)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	return append(b, "}}\n"...)
}

// embedDims is the length of the sim's embeddings (Ollama's tiny model's).
const embedDims = 64

// appendVector appends a unit vector drawn from seed: a JSON list of
// numbers, or with b64 a JSON string, the base64 of its float32s
// (little-endian).
func appendVector(b []byte, seed uint64, b64 bool) []byte {
	var v [embedDims]float64
	norm := 0.0
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float64(int64(x>>11)-(1<<52)) / (1 << 52)
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	if b64 {
		raw := make([]byte, 0, 4*embedDims)
		for i := range v {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(v[i]/norm)))
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, raw)
		return append(b, '"')
	}
	b = append(b, '[')
	for i := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, v[i]/norm, 'g', 7, 32)
	}
	return append(b, ']')
}

// writeAPIError writes an error in the kind's shape: Anthropic's
// {"type":"error","error":{"type","message"}}, Ollama's {"error":"..."}
// on /api/embed, OpenAI's elsewhere.
func writeAPIError(w http.ResponseWriter, kind apiKind, code int, typ, msg string) {
	switch kind {
	case kindMessages:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(code), "message": msg}})
		w.Write(b)
	case kindOllamaEmbed:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		b, _ := json.Marshal(map[string]any{"error": msg})
		w.Write(b)
	default:
		writeError(w, code, typ, msg)
	}
}

// anthropicErrorType is the Messages API's name for a status.
func anthropicErrorType(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	}
	return "api_error"
}

// apiPromptTokens counts the prompt of the new APIs: the Responses API's
// input and instructions, the Messages API's messages and system, the
// embeddings' inputs (and says how many there are).
func apiPromptTokens(kind apiKind, req *genRequest) (tokens, inputs int, err error) {
	switch kind {
	case kindResponses:
		n, err := messagesTokens(req.Input, true)
		if err != nil {
			return 0, 0, fmt.Errorf("bad input: %w", err)
		}
		return n + CountTokens(req.Instructions), 1, nil
	case kindMessages:
		if len(req.Messages) == 0 {
			return 0, 0, errors.New("messages: at least one message is required")
		}
		n := 0
		for _, m := range req.Messages {
			k, err := messagesTokens(m, false)
			if err != nil {
				return 0, 0, err
			}
			n += k
		}
		sys, err := contentText(req.System)
		if err != nil {
			return 0, 0, fmt.Errorf("bad system: %w", err)
		}
		return n + CountTokens(sys), 1, nil
	}
	// Embeddings: a string or a list of them.
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		return CountTokens(one), 1, nil
	}
	var many []string
	if err := json.Unmarshal(req.Input, &many); err != nil || len(many) == 0 {
		return 0, 0, errors.New("input must be a string or a non-empty array of strings")
	}
	n := 0
	for _, s := range many {
		n += CountTokens(s)
	}
	return n, len(many), nil
}

// messagesTokens counts a string, a message ({"content": ...}) or, when
// list is true, a list of messages.
func messagesTokens(raw json.RawMessage, list bool) (int, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return CountTokens(s), nil
	}
	if list {
		var msgs []json.RawMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return 0, errors.New("want a string or a list of messages")
		}
		n := 0
		for _, m := range msgs {
			k, err := messagesTokens(m, false)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	return messageTokens(raw)
}

// messageTokens counts one message's content: a string or a list of parts.
func messageTokens(raw json.RawMessage) (int, error) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("bad message: %w", err)
	}
	text, err := contentText(m.Content)
	if err != nil {
		return 0, err
	}
	return CountTokens(text), nil
}
