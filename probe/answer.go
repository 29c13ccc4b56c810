package probe

import (
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// DefaultAnswerBytes is AnswerText's cap when its Max is 0.
const DefaultAnswerBytes = 256 << 10

// AnswerText keeps the text of a request's answer, up to Max bytes, for a
// caller that sends it back to the server: a session's next turn carries
// the previous answers. Only a request that carries one (Request.Answer)
// pays for it: each message with answer text is read a second time, by a
// parser of the AnswerText's own, and its text appended; the
// per-message path of every other request is untouched. Reasoning text is
// not kept (a conversation's history holds the answers). Past Max the
// rest of the answer is dropped and Truncated reports it, so a stream
// cannot grow it without bound.
//
// The text is the server's, untrusted: it is meant to go back to the
// server, and must pass the sanitiser before it is ever shown.
//
// Do resets it at the request's start. One request at a time may use it.
type AnswerText struct {
	// Max caps the text kept, in bytes (0: DefaultAnswerBytes).
	Max int

	text      []byte
	truncated bool
	p         fastjson.Parser
}

// Reset forgets the last answer's text, keeping the buffer.
func (a *AnswerText) Reset() {
	if a == nil {
		return
	}
	a.text, a.truncated = a.text[:0], false
}

// String is the answer's text so far.
func (a *AnswerText) String() string { return string(a.text) }

// Len is the length of the answer's text so far, in bytes.
func (a *AnswerText) Len() int { return len(a.text) }

// Truncated reports whether the answer's text went past Max and was cut.
func (a *AnswerText) Truncated() bool { return a.truncated }

func (a *AnswerText) limit() int {
	if a.Max > 0 {
		return a.Max
	}
	return DefaultAnswerBytes
}

// add appends s, or as much of it as the cap leaves (cut at a character's
// boundary).
func (a *AnswerText) add(s []byte) {
	if len(s) == 0 || a.truncated {
		return
	}
	room := a.limit() - len(a.text)
	if len(s) > room {
		a.truncated = true
		s = s[:max(room, 0)]
		for len(s) > 0 { // no half of a character at the cut
			if r, size := utf8.DecodeLastRune(s); r != utf8.RuneError || size > 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	a.text = append(a.text, s...)
}

// take reads the answer text of one message of pr's (a stream's message,
// or the whole answer when whole) into a. A message that does not parse
// adds nothing: the timing path has judged it already.
func (a *AnswerText) take(pr protocol, data []byte, whole bool) {
	if a == nil || a.truncated {
		return
	}
	p := &a.p
	if whole {
		// A whole answer may be large: its parser's memory is not kept.
		p = new(fastjson.Parser)
	}
	v, err := p.ParseBytes(data)
	if err != nil {
		return
	}
	switch pr := pr.(type) {
	case *openaiProto:
		ch := v.Get("choices", "0")
		a.add(ch.GetStringBytes("delta", "content"))
		a.add(ch.GetStringBytes("message", "content"))
		a.add(ch.GetStringBytes("text"))
	case *ollamaProto:
		a.add(v.GetStringBytes("message", "content"))
		a.add(v.GetStringBytes("response"))
	case *tgiProto:
		if v.Type() == fastjson.TypeArray {
			v = v.Get("0")
		}
		if tok := v.Get("token"); tok != nil && !tok.GetBool("special") {
			a.add(tok.GetStringBytes("text"))
		}
		if !pr.stream {
			a.add(v.GetStringBytes("generated_text"))
		}
	case *responsesProto:
		switch string(v.GetStringBytes("type")) {
		case "response.output_text.delta":
			a.add(v.GetStringBytes("delta"))
		case "":
			for _, item := range v.GetArray("output") {
				if string(item.GetStringBytes("type")) == "message" {
					for _, part := range item.GetArray("content") {
						a.add(part.GetStringBytes("text"))
					}
				}
			}
		}
	case *anthropicProto:
		switch string(v.GetStringBytes("type")) {
		case "content_block_start":
			a.addAnthropic(v.Get("content_block"))
		case "content_block_delta":
			a.addAnthropic(v.Get("delta"))
		case "message":
			for _, block := range v.GetArray("content") {
				a.addAnthropic(block)
			}
		}
	case *genericProto:
		textPath := pr.opts.OutputPath
		if pr.opts.Stream != "none" {
			textPath = pr.opts.ChunkPath
		}
		a.add(v.GetStringBytes(path(textPath)...))
	}
}

// addAnthropic adds the text of a text block or a text delta.
func (a *AnswerText) addAnthropic(b *fastjson.Value) {
	if b == nil {
		return
	}
	switch string(b.GetStringBytes("type")) {
	case "text", "text_delta":
		a.add(b.GetStringBytes("text"))
	}
}
