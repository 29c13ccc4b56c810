package probe

import (
	"fmt"
	"unicode/utf8"
)

// Bounds on the work of one message. A hostile server can make one
// message cost far more than its bytes: the full JSON parser builds one
// value per element (about 450 bytes allocated for each "0," of
// `[0,0,...]`, so a 15 MB message took 4 GB), and a line that never ends
// holds its buffer for as long as it grows. So a stream's line is capped
// at a small multiple of what real servers send, a whole answer per API
// kind, and the values of one message per API kind, each sized from what
// real servers send (/work/shared/fixtures: llama.cpp's, Ollama's and
// vLLM's largest stream message is 1.6 KB; a non-streamed answer of 4,096
// tokens with logprobs is about 2.5 MB; an embeddings answer is megabytes
// of numbers).

// limits are one API kind's bounds on a message.
type limits struct {
	// whole is the most bytes of a non-streamed answer.
	whole int
	// values is the most JSON values (elements, members, the message
	// itself) one message may hold before the full parser reads it.
	values int
}

// The kinds' bounds, by the protocols' limits methods.
const (
	// OpenAI-style answers: a streamed chunk holds about 30 values, a
	// whole answer of 4,096 tokens with top-1 logprobs about 50,000.
	openaiWhole, openaiValues = 4 << 20, 1 << 16
	// Ollama: the last line of /api/generate carries "context", the
	// token ids of the prompt and the answer: 128k of them at a 128k
	// context.
	ollamaWhole, ollamaValues = 4 << 20, 1 << 18
	// TGI: a whole answer's details list every token (five values each).
	tgiWhole, tgiValues = 4 << 20, 1 << 16
	// Generic: any JSON API, embeddings among them (4,096 dimensions by a
	// batch of 256 is a million numbers in about 16 MiB).
	genericWhole, genericValues = 16 << 20, 1 << 20
	// The Responses API: its response.completed event (and a whole
	// answer) carries the whole output again, with its usage: an OpenAI
	// answer's size.
	responsesWhole, responsesValues = 4 << 20, 1 << 16
	// Anthropic's Messages: small events; a whole answer is content
	// blocks of text, as an OpenAI one.
	anthropicWhole, anthropicValues = 4 << 20, 1 << 16
	// Embeddings: 4,096 dimensions by a batch of 256 inputs is a million
	// numbers, about 16 MiB as JSON; a little over, for the base64 form.
	embedWhole, embedValues = 24 << 20, 1<<20 + 1<<16
)

func (o *openaiProto) limits() limits  { return limits{whole: openaiWhole, values: openaiValues} }
func (o *ollamaProto) limits() limits  { return limits{whole: ollamaWhole, values: ollamaValues} }
func (t *tgiProto) limits() limits     { return limits{whole: tgiWhole, values: tgiValues} }
func (g *genericProto) limits() limits { return limits{whole: genericWhole, values: genericValues} }
func (o *responsesProto) limits() limits {
	return limits{whole: responsesWhole, values: responsesValues}
}
func (a *anthropicProto) limits() limits {
	return limits{whole: anthropicWhole, values: anthropicValues}
}
func (e *embedProto) limits() limits { return limits{whole: embedWhole, values: embedValues} }

// maxIDBytes bounds a response's id as kept (Result.ID, the requests
// log): real ids are 30 to 70 bytes ("chatcmpl-" and a UUID), and an 8 MB
// one made a 159 MB log of 19 requests.
const maxIDBytes = 128

// capID cuts id to maxIDBytes, at the start of a character.
func capID(id []byte) []byte {
	if len(id) <= maxIDBytes {
		return id
	}
	cut := maxIDBytes
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut]
}

// checkValues returns an error when data, one message, holds more than
// limit JSON values. It counts, outside strings, the commas and the
// opening brackets and braces: every value but a container's first
// follows a comma, and a first follows its container's opening, so their
// count plus one bounds the values the full parser would build. A message
// of no more bytes than limit cannot pass it and is not scanned.
func checkValues(data []byte, limit int) error {
	if len(data) <= limit {
		return nil
	}
	n, inString := 1, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',', '[', '{':
			if n++; n > limit {
				return fmt.Errorf("malformed message: more than %d JSON values in one message (the cap on one message's values)", limit)
			}
		}
	}
	return nil
}

// wholeTooLarge is the error for a non-streamed answer past limit bytes.
func wholeTooLarge(limit int) error {
	return fmt.Errorf("answer larger than %s (the cap on one whole answer)", byteSize(limit))
}

// byteSize writes n bytes in MiB or KiB when it is a whole number of them.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
