package probe

import (
	"bytes"
	"math"
	"time"

	"github.com/valyala/fastjson"
)

// ServerTimings is what a server said of its own handling of one
// request, where it says it: vLLM's per-request metrics object (asked
// for with include_metrics, see AskServerTimings; its speculative
// decoding's counts with the server's --per-request-spec-decode-metrics),
// llama.cpp's timings
// (sent unasked on its last message), and the cached prompt tokens of
// usage.prompt_tokens_details (vLLM, SGLang, TensorRT-LLM, OpenAI). Each
// figure has its own Has: a server gives some and not others.
type ServerTimings struct {
	// Queue is the wait before the engine took the request (vLLM's
	// queue_time_ms); TTFT the server's time to its first token
	// (time_to_first_token_ms), from its own arrival.
	Queue, TTFT       time.Duration
	HasQueue, HasTTFT bool
	// Prefill is the prompt's processing (llama.cpp's prompt_ms);
	// Generation the decode (vLLM's generation_time_ms, llama.cpp's
	// predicted_ms); MeanITL vLLM's mean_itl_ms.
	Prefill, Generation, MeanITL          time.Duration
	HasPrefill, HasGeneration, HasMeanITL bool
	// CachedTokens is how many prompt tokens the server's prefix cache
	// held (cached_tokens, or llama.cpp's cache_n).
	CachedTokens int
	HasCached    bool
	// SpecAccepted of SpecDrafted are the draft tokens the target model
	// accepted of those speculative decoding proposed for the request
	// (vLLM's metrics.speculative_decoding, --per-request-spec-decode-
	// metrics): summed over requests, their ratio is the acceptance rate.
	SpecAccepted, SpecDrafted int
	HasSpec                   bool
}

// Any reports whether the server gave any of its timings or its cached
// tokens.
func (s *ServerTimings) Any() bool {
	return s.HasQueue || s.HasTTFT || s.HasPrefill || s.HasGeneration || s.HasMeanITL || s.HasCached || s.HasSpec
}

// ServerPrefill is the server's prefill: its TTFT less its queue where it
// gives both (the queue then counted 0 where it gives none), else its
// own prompt time; ok false when it gives neither.
func (s *ServerTimings) ServerPrefill() (d time.Duration, ok bool) {
	switch {
	case s.HasTTFT:
		q := time.Duration(0)
		if s.HasQueue {
			q = s.Queue
		}
		return max(s.TTFT-q, 0), true
	case s.HasPrefill:
		return s.Prefill, true
	}
	return 0, false
}

// TTFTSplit is a request's client TTFT split by where it went: the
// connection (HTTP's blocked phase: the pool's wait and a new
// connection's DNS, connect and TLS), the server's queue and its prefill,
// and the rest (the request's way there, the first token's way back,
// HTTP and streaming). Gap is the client's TTFT less the server's (less
// its queue and prefill where it gives no TTFT).
type TTFTSplit struct {
	Connection, Queue, Prefill, Rest, Gap time.Duration
}

// SplitTTFT splits the request's TTFT; ok is false when there is no
// TTFT, or the server gave no prefill (nor a TTFT to take it from).
func (r *Result) SplitTTFT() (s TTFTSplit, ok bool) {
	if !r.HasTTFT {
		return s, false
	}
	sv := &r.Server
	prefill, ok := sv.ServerPrefill()
	if !ok {
		return s, false
	}
	if sv.HasQueue {
		s.Queue = sv.Queue
	}
	s.Connection, s.Prefill = r.Blocked, prefill
	s.Rest = r.TTFT - s.Connection - s.Queue - s.Prefill
	s.Gap = r.TTFT - s.Queue - s.Prefill
	if sv.HasTTFT {
		s.Gap = r.TTFT - sv.TTFT
	}
	return s, true
}

// AskServerTimings returns the body's extra fields with vLLM's
// include_metrics set, for the OpenAI kinds (vLLM's per-request metrics
// ride on its OpenAI answers; another API's server might refuse a field
// it does not know). A value the user set stays.
func AskServerTimings(kind Kind, extra map[string]any) map[string]any {
	if kind != OpenAIChat && kind != OpenAICompletions && kind != "" { // "": the default, openai-chat
		return extra
	}
	if extra == nil {
		extra = map[string]any{}
	}
	if _, ok := extra["include_metrics"]; !ok {
		extra["include_metrics"] = true
	}
	return extra
}

// mayCarryTimings reports whether a message may hold server timings:
// one of their keys is in it. Looked for only in the messages that carry
// no output (a stream's last few), so the output's fast path pays
// nothing.
func mayCarryTimings(data []byte) bool {
	return bytes.Contains(data, []byte(`"metrics"`)) || bytes.Contains(data, []byte(`"timings"`)) ||
		bytes.Contains(data, []byte(`"cached_tokens"`))
}

// maxServerTime bounds a time a server reports: past it (or negative, or
// no number) the figure is not believed, and left unknown.
const maxServerTime = time.Hour

// readServerTimings adds what data says of the server's timings to st,
// parsed with p (a reading state's, reused; a message past keepBytes
// gets a parser of its own, so that the pooled one keeps no large
// buffer). A message that is no JSON object, or a figure out of bounds,
// adds nothing: a server's timings never fail a request.
func readServerTimings(p *fastjson.Parser, data []byte, st *ServerTimings) {
	if p == nil || len(data) > keepBytes {
		p = new(fastjson.Parser)
	}
	v, err := p.ParseBytes(data)
	if err != nil || v.Type() != fastjson.TypeObject {
		return
	}
	ms := func(x *fastjson.Value, d *time.Duration, has *bool) {
		if x == nil || x.Type() != fastjson.TypeNumber {
			return
		}
		f := x.GetFloat64()
		if !(f >= 0) || f > float64(maxServerTime/time.Millisecond) {
			return
		}
		*d, *has = time.Duration(f*float64(time.Millisecond)), true
	}
	tokens := func(x *fastjson.Value) (int, bool) {
		if x == nil || x.Type() != fastjson.TypeNumber {
			return 0, false
		}
		if f := x.GetFloat64(); f >= 0 && f <= 1<<30 && f == math.Trunc(f) {
			return int(f), true
		}
		return 0, false
	}
	count := func(x *fastjson.Value) {
		if n, ok := tokens(x); ok {
			st.CachedTokens, st.HasCached = n, true
		}
	}
	if m := v.Get("metrics"); m != nil && m.Type() == fastjson.TypeObject {
		ms(m.Get("queue_time_ms"), &st.Queue, &st.HasQueue)
		ms(m.Get("time_to_first_token_ms"), &st.TTFT, &st.HasTTFT)
		ms(m.Get("generation_time_ms"), &st.Generation, &st.HasGeneration)
		ms(m.Get("mean_itl_ms"), &st.MeanITL, &st.HasMeanITL)
		if sd := m.Get("speculative_decoding"); sd != nil && sd.Type() == fastjson.TypeObject {
			acc, okA := tokens(sd.Get("num_accepted_draft_tokens"))
			drafted, okD := tokens(sd.Get("num_draft_tokens"))
			if okA && okD && acc <= drafted { // more accepted than drafted: not believed
				st.SpecAccepted, st.SpecDrafted, st.HasSpec = acc, drafted, true
			}
		}
	}
	if t := v.Get("timings"); t != nil && t.Type() == fastjson.TypeObject {
		ms(t.Get("prompt_ms"), &st.Prefill, &st.HasPrefill)
		ms(t.Get("predicted_ms"), &st.Generation, &st.HasGeneration)
		count(t.Get("cache_n"))
	}
	count(v.Get("usage", "prompt_tokens_details", "cached_tokens"))
}
