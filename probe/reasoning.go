package probe

import (
	"fmt"
	"math"
	"time"
)

// noteOutput times a message that carries output by its kind: the first
// reasoning message ends TTFR, the first answer message TTFO. A message
// of a protocol that cannot tell the kinds apart is answer.
func noteOutput(res *Result, info *chunkInfo, now time.Duration) {
	if info.reasoningOnly() {
		res.ReasoningMessages++
		if !res.HasTTFR {
			res.HasTTFR, res.TTFR = true, now
		}
		return
	}
	if !res.HasTTFO {
		res.HasTTFO, res.TTFO = true, now
	}
}

// mergeUsage folds a message's usage into what the stream gave so far: a
// count it gives replaces the earlier one, a count it leaves out (0)
// keeps it. Anthropic sends the input count in message_start and the
// output count in message_delta; the others send one usage, or a running
// one, whose last word stands.
func mergeUsage(old, u *usage) *usage {
	if old == nil {
		return u
	}
	m := *old
	if u.PromptTokens != 0 {
		m.PromptTokens = u.PromptTokens
	}
	if u.CompletionTokens != 0 {
		m.CompletionTokens = u.CompletionTokens
	}
	if u.ReasoningTokens != 0 {
		m.ReasoningTokens = u.ReasoningTokens
	}
	return &m
}

// finish sets a successful answer's counts: the embeddings kinds' inputs
// and input tokens, the others' tokens and their reasoning share.
func (c *Client) finish(res *Result, req Request, u *usage) {
	if e, ok := c.proto.(*embedProto); ok {
		c.finishEmbed(res, req, u, e.batch())
		return
	}
	c.finishTokens(res, req, u)
	finishReasoning(res, u)
}

// finishReasoning sets ReasoningTokens: the server's split where it gave
// one that fits in the output, else the output shared by messages (all of
// it when every message was reasoning), estimated.
func finishReasoning(res *Result, u *usage) {
	res.ReasoningTokens, res.ReasoningEstimated = 0, false
	if u != nil && u.ReasoningTokens > 0 && u.ReasoningTokens <= res.OutputTokens && !res.OutputEstimated {
		res.ReasoningTokens = u.ReasoningTokens
		return
	}
	if u != nil && u.ReasoningTokens != 0 {
		res.UsageIgnored = true // negative, no int, or more than the output
	}
	if res.ReasoningMessages == 0 || res.Messages == 0 {
		return
	}
	res.ReasoningEstimated = true
	if res.ReasoningMessages >= res.Messages {
		res.ReasoningTokens = res.OutputTokens
		return
	}
	res.ReasoningTokens = int(math.Round(float64(res.OutputTokens) * float64(res.ReasoningMessages) / float64(res.Messages)))
}

// finishEmbed checks an embeddings answer (a vector for every input) and
// sets its input tokens from the usage, believed up to twice the batch's
// bytes plus promptCapMargin. It has no output tokens, estimated or not.
func (c *Client) finishEmbed(res *Result, req Request, u *usage, batch int) {
	if res.Inputs != batch {
		res.Class, res.Err = Malformed, fmt.Sprintf("%d embeddings for %d inputs", res.Inputs, batch)
		return
	}
	res.Messages, res.OutputTokens, res.OutputEstimated = 0, 0, false
	in := 0
	if u != nil {
		in = u.PromptTokens
	}
	if in < 0 || in > batch*(2*promptBytes(req)+8)+promptCapMargin {
		in, res.UsageIgnored = 0, true
	}
	res.InputTokens, res.InputEstimated = in, in == 0
}
