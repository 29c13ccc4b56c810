package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// chatChunk is the part of a streamed chat (or completions) chunk, or of a
// whole non-streamed response, that infertop reads.
type chatChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		Message struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"message"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
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

func parseChatChunk(data []byte) (chunkInfo, error) {
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return chunkInfo{}, fmt.Errorf("malformed chunk: %w", err)
	}
	info := chunkInfo{choices: len(c.Choices) > 0, usage: c.Usage, id: c.ID}
	if len(c.Error) > 0 && !bytes.Equal(c.Error, []byte("null")) {
		info.errMsg = c.Error
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" ||
			ch.Text != "" || ch.Message.Content != "" || ch.Message.ReasoningContent != "" {
			info.output = true
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			info.finished = true
		}
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
