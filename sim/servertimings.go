package sim

import (
	"bytes"
	"strconv"
	"time"
)

// doneEvent ends an OpenAI stream.
const doneEvent = "data: [DONE]\n\n"

// withMetrics puts the request's per-request metrics chunk before the
// stream's [DONE], as a server asked for them (include_metrics, vLLM's
// --enable-per-request-metrics) sends them: its queue, its TTFT, its
// generation time and mean ITL in milliseconds, from the record's own
// times, so that what a client reads is the record. now is when the
// last tokens go out; n the tokens generated. With usage asked, the
// chunk's usage gives the cached prompt tokens too
// (prompt_tokens_details.cached_tokens). The chat and completions
// kinds only; b is returned as it was for the others.
func (g *generation) withMetrics(b []byte, enc *chunkEncoder, now time.Time, n int) []byte {
	if (g.kind != kindChat && g.kind != kindCompletions) || !bytes.HasSuffix(b, []byte(doneEvent)) {
		return b
	}
	b = b[:len(b)-len(doneEvent)]
	first := g.rec.FirstToken
	if first.IsZero() { // the first tokens go out with the end
		first = now
	}
	arrived := g.rec.Arrived
	queue := time.Duration(max(g.q.queued.Load(), 0))
	gen := now.Sub(first)
	b = append(b, "data: {"...)
	b = append(b, enc.idModel...)
	b = append(b, `,"choices":[],"metrics":{"queue_time_ms":`...)
	b = appendMS(b, queue)
	b = append(b, `,"time_to_first_token_ms":`...)
	b = appendMS(b, first.Sub(arrived))
	b = append(b, `,"generation_time_ms":`...)
	b = appendMS(b, gen)
	b = append(b, `,"mean_itl_ms":`...)
	b = appendMS(b, gen/time.Duration(max(n-1, 1)))
	if sd := g.s.p.SpecDecode; sd.Draft > 0 {
		c := sd.counts(g.s.p.Seed, g.id, n)
		g.rec.SpecAccepted, g.rec.SpecDrafted = c.accepted, c.drafted
		g.s.metrics.specAccepted.Add(int64(c.accepted))
		g.s.metrics.specDrafted.Add(int64(c.drafted))
		b = append(b, `,"speculative_decoding":{"num_spec_steps":`...)
		b = strconv.AppendInt(b, int64(c.steps), 10)
		b = append(b, `,"num_accepted_draft_tokens":`...)
		b = strconv.AppendInt(b, int64(c.accepted), 10)
		b = append(b, `,"num_draft_tokens":`...)
		b = strconv.AppendInt(b, int64(c.drafted), 10)
		b = append(b, `,"num_spec_tokens":`...)
		b = strconv.AppendInt(b, int64(sd.Draft), 10)
		b = append(b, '}')
	}
	b = append(b, '}')
	if g.usage {
		b = append(b, `,"usage":`...)
		b = appendUsage(b, g.q.prompt, n, min(g.reasoning, n))
		b = b[:len(b)-1] // its closing brace: the details go inside
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(g.rec.CachedTokens), 10)
		b = append(b, "}}"...)
	}
	b = append(b, "}\n\n"...)
	return append(b, doneEvent...)
}

// appendMS appends d in milliseconds to the microsecond.
func appendMS(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 3, 64)
}
