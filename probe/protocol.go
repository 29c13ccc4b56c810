package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/infertop/infertop/outputcheck"
)

// Kind is an API a server speaks.
type Kind string

// The API kinds.
const (
	OpenAIChat        Kind = "openai-chat"
	OpenAICompletions Kind = "openai-completions"
	Ollama            Kind = "ollama"
	TGI               Kind = "tgi"
	Generic           Kind = "generic"
	// OpenAIResponses is the OpenAI Responses API (POST /v1/responses).
	OpenAIResponses Kind = "openai-responses"
	// Anthropic is the Anthropic Messages API (POST /v1/messages).
	Anthropic Kind = "anthropic"
	// OpenAIEmbeddings is POST /v1/embeddings; OllamaEmbed is Ollama's
	// POST /api/embed. Neither streams: there is no TTFT, only E2E.
	OpenAIEmbeddings Kind = "openai-embeddings"
	OllamaEmbed      Kind = "ollama-embed"
)

// Kinds lists every kind.
func Kinds() []Kind {
	return []Kind{OpenAIChat, OpenAICompletions, Ollama, TGI, Generic, OpenAIResponses, Anthropic, OpenAIEmbeddings, OllamaEmbed}
}

// Embeds reports whether k is an embeddings API: no output tokens, no
// stream, a batch of inputs per request.
func (k Kind) Embeds() bool { return k == OpenAIEmbeddings || k == OllamaEmbed }

// ParseKind reads a kind's name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", unknownKind(s)
}

// BodyOptions shape the generated request bodies.
type BodyOptions struct {
	// MaxTokensField names the output limit for the OpenAI kinds:
	// "max_tokens" (default) or "max_completion_tokens".
	MaxTokensField string
	// IgnoreEOS and MinTokens ask vLLM/SGLang-style servers to produce
	// exactly MaxTokens (ignore_eos, min_tokens = max_tokens).
	IgnoreEOS, MinTokens bool
	Temperature, TopP    *float64
	Seed                 *int64
	// Extra is merged into the top level of every JSON body.
	Extra map[string]any
	// Batch is the number of inputs per embeddings request (0: 1).
	Batch int
	// Output, if set, asks for structured output or offers tools (chat,
	// Responses, Ollama; Anthropic's tools), and every answer is judged
	// against it (Result.Output).
	Output *outputcheck.Spec
	// Images, past 0, sends that many synthetic PNGs of ImageW×ImageH in
	// every request (chat, Responses; see images.go), drawn from
	// ImageSeed.
	Images, ImageW, ImageH int
	ImageSeed              uint64
}

// GenericOptions describe a plain JSON API (Kind generic).
type GenericOptions struct {
	// Template is the body with {{prompt}}, {{max_tokens}} and {{model}}
	// (the prompt and model inserted JSON-escaped, without quotes). Empty:
	// {"model","input","max_tokens"}, the sim's /v1/infer.
	Template string
	// OutputPath picks the text from the whole response (dot path, numbers
	// index arrays); default "output".
	OutputPath string
	// UsagePath picks the object holding token counts (prompt_tokens or
	// input_tokens, completion_tokens or output_tokens); default: the root.
	UsagePath string
	// Stream is "none", "sse" or "ndjson"; ChunkPath picks each chunk's text.
	Stream    string
	ChunkPath string
}

// framing is how a response's messages are delimited.
type framing int

const (
	frameWhole framing = iota
	frameSSE
	frameNDJSON
)

// protocol is one kind's request body and message reading.
type protocol interface {
	body(model string, req Request) ([]byte, error)
	framing() framing
	// parse reads one message; p is reused per response.
	parse(p *parser, data []byte) (chunkInfo, error)
	// endsOnEOF is true when the stream carries no end marker of its own,
	// so the end of the body is the end of the answer.
	endsOnEOF() bool
	// limits are the kind's bounds on one message (limits.go).
	limits() limits
}

// chunkInfo is what one message tells the timing code.
type chunkInfo struct {
	output   bool // carries generated text
	choices  bool // has a non-empty choices list (OpenAI)
	finished bool // the answer is complete (finish_reason, done, details)
	done     bool // the [DONE] sentinel
	usage    *usage
	errMsg   []byte
	id       []byte // valid until the next parse
	// reasoning and answer say which kind of generated text the message
	// carries (reasoning_content, thinking; or the answer's content). A
	// protocol that cannot tell sets neither, and its output is answer.
	reasoning, answer bool
	// vectors is the number of embeddings a whole answer carries.
	vectors int
}

// reasoningOnly reports whether the message's output is reasoning alone:
// it does not end TTFO.
func (c *chunkInfo) reasoningOnly() bool { return c.reasoning && !c.answer }

// usage is a message's token counts as the server gave them (badCount for
// one that is no int); finishTokens decides what to believe.
type usage struct {
	PromptTokens     int
	CompletionTokens int
	// ReasoningTokens is the part of CompletionTokens spent reasoning,
	// where the server splits them (completion_tokens_details or
	// output_tokens_details.reasoning_tokens); 0 when it does not.
	ReasoningTokens int
}

// badCount stands for a count that is a JSON number but no int.
const badCount = -1

func newProtocol(cfg *Config) (protocol, error) {
	b := cfg.Body
	if b.MaxTokensField == "" {
		b.MaxTokensField = "max_tokens"
	}
	images, err := newImagePool(b)
	if err != nil {
		return nil, err
	}
	switch cfg.API {
	case OpenAIChat, "":
		return &openaiProto{chat: true, stream: !cfg.NoStream, opts: b, images: images}, nil
	case OpenAICompletions:
		return &openaiProto{stream: !cfg.NoStream, opts: b}, nil
	case Ollama:
		return &ollamaProto{chat: !strings.HasSuffix(strings.TrimRight(cfg.URL, "/"), "/api/generate"), stream: !cfg.NoStream, opts: b}, nil
	case TGI:
		return &tgiProto{stream: !cfg.NoStream, opts: b}, nil
	case OpenAIResponses:
		return &responsesProto{stream: !cfg.NoStream, opts: b, images: images}, nil
	case Anthropic:
		return &anthropicProto{stream: !cfg.NoStream, opts: b}, nil
	case OpenAIEmbeddings, OllamaEmbed:
		return &embedProto{native: cfg.API == OllamaEmbed, opts: b}, nil
	case Generic:
		g := cfg.Generic
		if g.OutputPath == "" {
			g.OutputPath = "output"
		}
		if g.Stream == "" {
			g.Stream = "none"
		}
		// The stream format, the chunk path and the template are
		// Validate's to check (New called it).
		return &genericProto{opts: g, extra: b.Extra}, nil
	}
	return nil, fmt.Errorf("unknown API kind %q", cfg.API)
}

// marshal merges the extra fields into body and encodes it.
func marshal(body map[string]any, extra map[string]any) ([]byte, error) {
	for k, v := range extra {
		body[k] = v
	}
	b, err := encodeBody(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

func sampling(m map[string]any, o BodyOptions, temperature, topP, seed string) {
	if o.Temperature != nil {
		m[temperature] = *o.Temperature
	}
	if o.TopP != nil {
		m[topP] = *o.TopP
	}
	if o.Seed != nil {
		m[seed] = *o.Seed
	}
}

// openaiProto speaks /v1/chat/completions and /v1/completions.
type openaiProto struct {
	chat, stream bool
	opts         BodyOptions
	images       *imagePool // nil: none
}

func (o *openaiProto) body(model string, req Request) ([]byte, error) {
	m := map[string]any{"model": model, "stream": o.stream, o.opts.MaxTokensField: req.MaxTokens}
	if o.chat {
		m["messages"] = req.messages()
		if o.images != nil {
			m["messages"] = chatWithImages(req.messages(), o.images.take())
		}
		addChatOutput(m, o.opts.Output)
	} else {
		m["prompt"] = req.text()
	}
	if o.stream {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	if o.opts.IgnoreEOS {
		m["ignore_eos"] = true
	}
	if o.opts.MinTokens {
		m["min_tokens"] = req.MaxTokens
	}
	sampling(m, o.opts, "temperature", "top_p", "seed")
	return marshal(m, o.opts.Extra)
}

// streamed is f when the answer is streamed, else a whole answer.
func streamed(stream bool, f framing) framing {
	if stream {
		return f
	}
	return frameWhole
}

func (o *openaiProto) framing() framing { return streamed(o.stream, frameSSE) }

func (o *openaiProto) endsOnEOF() bool { return false }

// openaiTextKeys are where OpenAI-style output text can be, per choice:
// chat deltas (content; reasoning models' reasoning_content or reasoning),
// completions' text, and a non-streamed message.
func openaiTextKey(k []byte) bool {
	switch string(k) {
	case "content", "reasoning_content", "reasoning":
		return true
	}
	return false
}

// noteTextKey marks the text under an openaiTextKey as reasoning or answer.
func noteTextKey(k []byte, info *chunkInfo) {
	if string(k) == "content" {
		info.answer = true
	} else {
		info.reasoning = true
	}
}

// parse reads an OpenAI-style message in one pass over its members (and
// each choice's): this runs once per token, and looking each member up by
// path cost as much as parsing the message.
func (o *openaiProto) parse(p *parser, data []byte) (chunkInfo, error) {
	var info chunkInfo
	if isDone(data) {
		info.done = true
		return info, nil
	}
	if info, ok := fastChunk(data, &p.memo); ok {
		return info, nil
	}
	if err := checkValues(data, o.limits().values); err != nil {
		return info, err
	}
	return o.parseFull(&p.json, data)
}

// parseFull is parse without the fast path.
func (o *openaiProto) parseFull(p *fastjson.Parser, data []byte) (chunkInfo, error) {
	var info chunkInfo
	if isDone(data) {
		info.done = true
		return info, nil
	}
	v, err := parseObject(p, data)
	if err != nil {
		return info, err
	}
	errObject := false
	obj, _ := v.Object() // an object: parseObject checked
	obj.Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "object": // vLLM: {"object":"error","message":...,"code":400}
			errObject = errObject || string(x.GetStringBytes()) == "error"
		case "id":
			if len(info.id) == 0 {
				info.id = capID(x.GetStringBytes())
			}
		case "choices":
			choices, _ := x.Array()
			info.choices = info.choices || len(choices) > 0
			for _, ch := range choices {
				readChoice(ch, &info)
			}
		case "usage":
			if x.Type() == fastjson.TypeObject && info.usage == nil {
				info.usage = readUsage(x)
			}
		case "error":
			if x.Type() != fastjson.TypeNull && info.errMsg == nil {
				info.errMsg = x.MarshalTo(nil)
			}
		}
	})
	if errObject {
		info.errMsg = append([]byte(nil), data...)
	}
	return info, nil
}

// readChoice notes whether one choice carries output text or a finish
// reason.
func readChoice(ch *fastjson.Value, info *chunkInfo) {
	o, err := ch.Object()
	if err != nil {
		return
	}
	o.Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "delta", "message":
			if m, err := x.Object(); err == nil {
				m.Visit(func(k []byte, x *fastjson.Value) {
					if openaiTextKey(k) && len(x.GetStringBytes()) > 0 {
						info.output = true
						noteTextKey(k, info)
					}
					// A tool call, whole or a fragment, is output: an
					// answer that calls a tool first has its TTFT there.
					if string(k) == "tool_calls" && len(x.GetArray()) > 0 {
						info.output, info.answer = true, true
					}
				})
			}
		case "text":
			if len(x.GetStringBytes()) > 0 {
				info.output, info.answer = true, true
			}
		case "finish_reason":
			info.finished = info.finished || len(x.GetStringBytes()) > 0
		}
	})
}

var doneMarker = []byte("[DONE]")

// openMessage starts reading an SSE-style JSON message: the [DONE]
// sentinel (info.done, v nil), or the parsed object with its "error"
// member. v is nil when there is nothing more to read.
func openMessage(p *fastjson.Parser, data []byte) (v *fastjson.Value, info chunkInfo, err error) {
	if isDone(data) {
		info.done = true
		return nil, info, nil
	}
	if v, err = parseObject(p, data); err != nil {
		return nil, info, err
	}
	info.errMsg = errorField(v)
	return v, info, nil
}

func isDone(data []byte) bool {
	return bytes.Equal(bytes.TrimSpace(data), doneMarker)
}

func parseObject(p *fastjson.Parser, data []byte) (*fastjson.Value, error) {
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil, fmt.Errorf("malformed message: %w", err)
	}
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("malformed message: a JSON %s, not an object", v.Type())
	}
	return v, nil
}

// errorField returns the message's "error" member, if it has a non-null one.
func errorField(v *fastjson.Value) []byte {
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		return e.MarshalTo(nil)
	}
	return nil
}

// readUsage reads OpenAI's or other servers' names for the token counts.
// A count that is no int (1e30, 2.5, past int64) reads as badCount, for
// finishTokens to set aside: fastjson's GetInt says 0 for those, which
// would pass for "no count" and hide that the server sent nonsense.
func readUsage(u *fastjson.Value) *usage {
	pick := func(names ...string) int {
		for _, n := range names {
			if x := u.Get(n); x != nil && x.Type() == fastjson.TypeNumber {
				if n := x.GetInt(); n != 0 {
					return n
				}
				// 0, or a number GetInt could not take: a float that
				// is a whole count (1e3, 5.0) is still one.
				f, err := x.Float64()
				switch {
				case err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53:
					return badCount
				case f != 0:
					return int(f)
				}
				return 0
			}
		}
		return 0
	}
	us := &usage{
		PromptTokens:     pick("prompt_tokens", "input_tokens", "prompt_eval_count", "input_length", "tokens_evaluated"),
		CompletionTokens: pick("completion_tokens", "output_tokens", "eval_count", "generated_tokens", "tokens_predicted"),
	}
	for _, d := range []string{"completion_tokens_details", "output_tokens_details"} {
		if x := u.Get(d); x != nil && x.Type() == fastjson.TypeObject && us.ReasoningTokens == 0 {
			us.ReasoningTokens = readUsage1(x, "reasoning_tokens")
		}
	}
	if us.PromptTokens == 0 && us.CompletionTokens == 0 {
		return nil
	}
	return us
}

// readUsage1 reads one count of a usage object as readUsage does
// (badCount for one that is no int).
func readUsage1(u *fastjson.Value, name string) int {
	x := u.Get(name)
	if x == nil || x.Type() != fastjson.TypeNumber {
		return 0
	}
	f, err := x.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return badCount
	}
	return int(f)
}

// ollamaProto speaks Ollama's /api/chat and /api/generate (NDJSON).
type ollamaProto struct {
	chat, stream bool
	opts         BodyOptions
}

func (o *ollamaProto) body(model string, req Request) ([]byte, error) {
	options := map[string]any{"num_predict": req.MaxTokens}
	sampling(options, o.opts, "temperature", "top_p", "seed")
	m := map[string]any{"model": model, "stream": o.stream, "options": options}
	if o.chat {
		m["messages"] = req.messages()
		addOllamaOutput(m, o.opts.Output)
	} else {
		m["prompt"] = req.text()
	}
	return marshal(m, o.opts.Extra)
}

func (o *ollamaProto) framing() framing { return streamed(o.stream, frameNDJSON) }

func (o *ollamaProto) endsOnEOF() bool { return false }

func (o *ollamaProto) parse(ps *parser, data []byte) (chunkInfo, error) {
	p := &ps.json
	var info chunkInfo
	if err := checkValues(data, o.limits().values); err != nil {
		return info, err
	}
	v, err := parseObject(p, data)
	if err != nil {
		return info, err
	}
	info.errMsg = errorField(v)
	for _, path := range [][]string{{"message", "content"}, {"message", "thinking"}, {"response"}, {"thinking"}} {
		if len(v.GetStringBytes(path...)) > 0 {
			info.output = true
			if path[len(path)-1] == "thinking" {
				info.reasoning = true
			} else {
				info.answer = true
			}
		}
	}
	if len(v.GetArray("message", "tool_calls")) > 0 { // a tool call is output
		info.output, info.answer = true, true
	}
	if v.GetBool("done") {
		info.finished = true
		info.usage = readUsage(v)
	}
	return info, nil
}

// tgiProto speaks Text Generation Inference's /generate_stream (SSE of
// token objects) and /generate.
type tgiProto struct {
	stream bool
	opts   BodyOptions
}

func (t *tgiProto) body(_ string, req Request) ([]byte, error) {
	params := map[string]any{"max_new_tokens": req.MaxTokens, "details": true}
	sampling(params, t.opts, "temperature", "top_p", "seed")
	return marshal(map[string]any{"inputs": req.text(), "parameters": params}, t.opts.Extra)
}

func (t *tgiProto) framing() framing { return streamed(t.stream, frameSSE) }

// endsOnEOF: TGI sends no [DONE]; its last message carries the details.
func (t *tgiProto) endsOnEOF() bool { return false }

func (t *tgiProto) parse(ps *parser, data []byte) (chunkInfo, error) {
	p := &ps.json
	var info chunkInfo
	if err := checkValues(data, t.limits().values); err != nil {
		return info, err
	}
	v, err := p.ParseBytes(data)
	if err != nil {
		return info, fmt.Errorf("malformed message: %w", err)
	}
	if v.Type() == fastjson.TypeArray { // /generate may answer a list
		if arr := v.GetArray(); len(arr) > 0 {
			v = arr[0]
		}
	}
	if v.Type() != fastjson.TypeObject {
		return info, fmt.Errorf("malformed message: a JSON %s, not an object", v.Type())
	}
	info.errMsg = errorField(v)
	if tok := v.Get("token"); tok != nil && !tok.GetBool("special") && len(tok.GetStringBytes("text")) > 0 {
		info.output = true
	}
	if !t.stream && len(v.GetStringBytes("generated_text")) > 0 {
		info.output = true
	}
	if d := v.Get("details"); d != nil && d.Type() == fastjson.TypeObject {
		info.finished = true
		info.usage = readUsage(d)
	} else if g := v.Get("generated_text"); g != nil && g.Type() == fastjson.TypeString {
		info.finished = true
	}
	return info, nil
}

// genericProto speaks any JSON API through a template and paths.
type genericProto struct {
	opts  GenericOptions
	extra map[string]any
}

func (g *genericProto) body(model string, req Request) ([]byte, error) {
	if g.opts.Template == "" {
		return marshal(map[string]any{"model": model, "input": req.text(), "max_tokens": req.MaxTokens}, g.extra)
	}
	esc := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	out := strings.NewReplacer("{{prompt}}", esc(req.text()), "{{max_tokens}}", strconv.Itoa(req.MaxTokens), "{{model}}", esc(model)).Replace(g.opts.Template)
	if len(g.extra) == 0 {
		return []byte(out), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return nil, fmt.Errorf("extra body fields need a body template that is a JSON object: %w", err)
	}
	return marshal(m, g.extra)
}

func (g *genericProto) framing() framing {
	switch g.opts.Stream {
	case "sse":
		return frameSSE
	case "ndjson":
		return frameNDJSON
	}
	return frameWhole
}

// endsOnEOF: a generic stream has no end marker infertop knows of.
func (g *genericProto) endsOnEOF() bool { return true }

func path(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, ".")
}

func (g *genericProto) parse(ps *parser, data []byte) (chunkInfo, error) {
	p := &ps.json
	if err := checkValues(data, g.limits().values); err != nil {
		return chunkInfo{}, err
	}
	v, info, err := openMessage(p, data)
	if v == nil {
		return info, err
	}
	textPath := g.opts.OutputPath
	if g.opts.Stream != "none" {
		textPath = g.opts.ChunkPath
	}
	if len(v.GetStringBytes(path(textPath)...)) > 0 {
		info.output = true
	}
	if u := v.Get(path(g.opts.UsagePath)...); u != nil && u.Type() == fastjson.TypeObject {
		info.usage = readUsage(u)
	}
	return info, nil
}
