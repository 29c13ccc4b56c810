package probe

import (
	"encoding/json"
	"fmt"

	"github.com/valyala/fastjson"
)

// chatRequest is the body of an OpenAI chat-completions request.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func chatBody(model string, req Request) ([]byte, error) {
	body := chatRequest{
		Model:     model,
		Messages:  []chatMessage{{Role: "user", Content: req.Prompt}},
		MaxTokens: req.MaxTokens,
		Stream:    true,
	}
	body.StreamOptions = &struct {
		IncludeUsage bool `json:"include_usage"`
	}{true}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

// chunkInfo is what one message tells the timing code.
type chunkInfo struct {
	output   bool // carries generated text
	choices  bool // has a non-empty choices list
	finished bool // a finish_reason was given
	usage    *usage
	errMsg   []byte
	id       string
}

type usage struct {
	PromptTokens     int
	CompletionTokens int
}

// chunkParser reads streamed chat (or completions) chunks, or a whole
// non-streamed answer. It reuses its buffers (fastjson, no reflection):
// parsing sits between a byte arriving and its timestamp, so its cost is
// measurement error under load. Not safe for concurrent use.
type chunkParser struct {
	p fastjson.Parser
}

// textFields are where output text can be, per choice: chat deltas
// (content, reasoning models' reasoning_content or reasoning), completions'
// text, and a non-streamed message.
var textFields = [][]string{
	{"delta", "content"}, {"delta", "reasoning_content"}, {"delta", "reasoning"},
	{"text"}, {"message", "content"}, {"message", "reasoning_content"},
}

func (cp *chunkParser) parse(data []byte) (chunkInfo, error) {
	v, err := cp.p.ParseBytes(data)
	if err != nil {
		return chunkInfo{}, fmt.Errorf("malformed chunk: %w", err)
	}
	if v.Type() != fastjson.TypeObject {
		return chunkInfo{}, fmt.Errorf("malformed chunk: a JSON %s, not an object", v.Type())
	}
	var info chunkInfo
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		info.errMsg = e.MarshalTo(nil)
	}
	info.id = string(v.GetStringBytes("id"))
	choices := v.GetArray("choices")
	info.choices = len(choices) > 0
	for _, ch := range choices {
		for _, path := range textFields {
			if len(ch.GetStringBytes(path...)) > 0 {
				info.output = true
				break
			}
		}
		if len(ch.GetStringBytes("finish_reason")) > 0 {
			info.finished = true
		}
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		info.usage = &usage{PromptTokens: u.GetInt("prompt_tokens"), CompletionTokens: u.GetInt("completion_tokens")}
	}
	return info, nil
}

// errorStatus reads the HTTP-like code of an error object sent inside a
// stream ({"code": 429, ...} or {"error": {"code": ...}}); 0 when none.
func errorStatus(raw []byte) int {
	var e struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return 0
	}
	var n int
	if json.Unmarshal(e.Code, &n) == nil {
		return n
	}
	return 0
}
