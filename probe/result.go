package probe

import "time"

// ErrorClass says why a request failed; OK for a request that succeeded.
type ErrorClass int

// The error classes of DESIGN.md. Canceled is a request that infertop itself
// abandoned (on quit or reset); it is never counted as an endpoint error.
// ClientSide is a request this process could not send for want of its own
// resources (no file descriptor left: "too many open files"): a failure,
// counted, but the client's, never the endpoint's connection error.
// HTTP3xx, a redirect (never followed), and ClientSide come last so the older
// classes keep their values.
const (
	OK ErrorClass = iota
	HTTP4xx
	HTTP429
	HTTP5xx
	Timeout
	Connection
	StreamCut
	Malformed
	Canceled
	HTTP3xx
	ClientSide
	// NumClasses is the number of classes, for arrays indexed by class.
	NumClasses
)

var classNames = [NumClasses]string{"ok", "4xx", "429", "5xx", "timeout", "connection", "stream_cut", "malformed", "canceled", "3xx", "client"}

// String is the short, stable name of the class, as reports and the UI show it.
func (c ErrorClass) String() string {
	if c < 0 || c >= NumClasses {
		return "unknown"
	}
	return classNames[c]
}

// FailureClasses lists the classes a failed request is counted under, in
// display order: the endpoint's, then the client's own (ClientSide).
func FailureClasses() []ErrorClass {
	return []ErrorClass{HTTP3xx, HTTP4xx, HTTP429, HTTP5xx, Timeout, Connection, StreamCut, Malformed, ClientSide}
}

// Result is one request, measured. Durations are offsets from Start, taken
// from the monotonic clock.
type Result struct {
	// Start is taken just before the request is written, so connection setup
	// and pool waits fall inside TTFT and E2E.
	Start time.Time
	// TTFB is the time to the response headers (zero if none arrived).
	TTFB time.Duration
	// TTFT is the time to the first output-bearing message; HasTTFT is false
	// when no output was seen or the response was not streamed.
	TTFT    time.Duration
	HasTTFT bool
	// The time of every timed message (the ITLs) is not here: Do tells
	// them to the request's Live as they arrive.
	// E2E is the time to the last output-bearing message (not the usage chunk,
	// not [DONE]); for a failed request, the time it failed.
	E2E time.Duration
	// Token counts: from the server's usage where reported, else counted
	// (OutputEstimated true) or unknown (InputTokens 0, InputEstimated true).
	InputTokens     int
	OutputTokens    int
	OutputEstimated bool
	InputEstimated  bool
	// UsageIgnored is true when the server's count could not be true and
	// was set aside (the count then is as if the server gave none, and
	// estimated): negative, not an integer, too large for an int, output
	// past OutputCap(max_tokens), or input past twice the prompt's bytes
	// plus 64 Ki (see finishTokens). One absurd count (10^18 tokens) would
	// otherwise make every rate and sum it enters absurd too.
	UsageIgnored bool
	// Messages is the number of output-bearing messages.
	Messages int
	// Status is the HTTP status (0 if no response arrived).
	Status int
	// Class is OK for success; Err is a short, redacted description otherwise.
	Class ErrorClass
	Err   string
	// ID is the response id the server gave, if any.
	ID string
	// Trace is the trace context the request was sent with (its
	// traceparent and x-request-id); zero when the user's own headers
	// took their place.
	Trace TraceContext
	// Connection phases (zero on a reused connection) from httptrace.
	DNS, Connect, TLS time.Duration
	ConnReused        bool
	// Blocked is the time to the connection in hand (GotConn), Sending
	// from then to the request written (WroteRequest): with TTFB and E2E
	// they make the HTTP phases (see HTTPPhases).
	Blocked, Sending time.Duration
	// RetryAfter is the wait a 429 or 503 asked for.
	RetryAfter time.Duration
	// Proto is the HTTP version used ("HTTP/1.1", "HTTP/2.0").
	Proto string
	// Retried is true when the first attempt was lost on a reused
	// connection before any byte of an answer (the server had closed it),
	// or refused unprocessed (an HTTP/2 GOAWAY or REFUSED_STREAM), and
	// the request was sent again, once, on a new connection. The times still
	// run from the first attempt's Start; the connection phases and
	// ConnReused are the second attempt's. The request succeeded or failed
	// by the second attempt alone.
	Retried bool
	// Written counts the attempts the transport wrote, this client's
	// retry's included (httptrace's WroteRequest): over HTTP/2 the
	// transport may send a request again by itself (a GOAWAY before its
	// stream was answered), and each time the server receives it, so the
	// extra ones are counted as retries too (Retries).
	Written int
	// Output is the answer judged against the structured output or tools
	// asked for (BodyOptions.Output); Judged is false when none was, or
	// the request failed.
	Output OutputResult
	// Model is the request's own model (Request.Model), empty when it
	// asked for the client's (Config.Model).
	Model string
	// Group is the backend that answered, as Config.SplitBy reads it: the
	// header's value, or the field's in the first message that carries it
	// (empty: none seen, or no SplitBy). At most MaxGroupBytes, and raw:
	// whoever prints it sanitises it.
	Group string
	// Reasoning, for models that think before they answer (see
	// noteOutput): TTFR is the time to the first reasoning message
	// (HasTTFR), TTFO the time to the first message of the answer
	// (HasTTFO; AIPerf's time to first output). TTFT stays the first
	// of either, as vLLM defines it. A stream with no reasoning has
	// TTFO equal to TTFT.
	TTFR, TTFO       time.Duration
	HasTTFR, HasTTFO bool
	// ReasoningMessages is how many of Messages carried reasoning alone.
	// ReasoningTokens is the part of OutputTokens spent reasoning: the
	// server's count where its usage splits it, else ReasoningEstimated
	// and OutputTokens shared by the messages of each kind.
	ReasoningMessages  int
	ReasoningTokens    int
	ReasoningEstimated bool
	// Inputs is how many inputs an embeddings request sent, each answered
	// with its vector (0 for the generating kinds).
	Inputs int
	// Server is what the server said of its own handling of the
	// request (its queue, TTFT, prefill, generation, cached tokens),
	// where it said it.
	Server ServerTimings
	// Unstreamed is true when a streamed answer was asked for and the
	// server sent a whole one (it ignored "stream"): no TTFT, TPOT or ITL
	// could be seen.
	Unstreamed bool
}

// AnswerTokens is the output tokens of the answer: OutputTokens less
// ReasoningTokens.
func (r *Result) AnswerTokens() int { return max(r.OutputTokens-r.ReasoningTokens, 0) }

// OK reports whether the request succeeded.
func (r *Result) OK() bool { return r.Class == OK }

// TPOT is (E2E − TTFT) / (output_tokens − 1); ok is false when it is not
// defined (fewer than two output tokens, or no TTFT).
func (r *Result) TPOT() (tpot time.Duration, ok bool) {
	if !r.HasTTFT || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2E - r.TTFT) / time.Duration(r.OutputTokens-1), true
}

// TokensPerMessage is the output tokens per output-bearing message: above 1
// when the server batches several tokens into one message (or holds back
// part of a character), so ITL is per message, not per token.
func (r *Result) TokensPerMessage() float64 {
	if r.Messages == 0 {
		return 0
	}
	return float64(r.OutputTokens) / float64(r.Messages)
}

// Retries is how many times the request was sent again: every attempt
// written past the first, and at least one when this client retried it.
func (r Result) Retries() int64 {
	n := int64(max(r.Written-1, 0))
	if r.Retried {
		n = max(n, 1)
	}
	return n
}
