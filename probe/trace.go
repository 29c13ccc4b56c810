package probe

import (
	"encoding/hex"
	"math/rand/v2"
	"net/http"
)

// TraceContext is a request's W3C trace context: the trace id its
// traceparent header carries, and the id of infertop's span in it (the
// parent a server's span joins). The trace id is the request's id too: it
// goes out as x-request-id, and the requests log writes it, so a trace in
// the server's backend and its log lines join infertop's request.
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
}

// NewTraceContext builds a trace context from three draws. W3C forbids
// an all-zero trace id or span id: a zero draw is made one.
func NewTraceContext(hi, lo, span uint64) TraceContext {
	if hi|lo == 0 {
		lo = 1
	}
	if span == 0 {
		span = 1
	}
	var t TraceContext
	putUint64(t.TraceID[:8], hi)
	putUint64(t.TraceID[8:], lo)
	putUint64(t.SpanID[:], span)
	return t
}

// randomTrace is a trace context for a request that came without one.
func randomTrace() TraceContext { return NewTraceContext(rand.Uint64(), rand.Uint64(), rand.Uint64()) }

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// IsZero reports whether t was never set.
func (t TraceContext) IsZero() bool { return t == TraceContext{} }

// ID is the trace id in lower-case hex (32 characters), the request's id
// (x-request-id); empty for the zero TraceContext.
func (t TraceContext) ID() string {
	if t.IsZero() {
		return ""
	}
	return hex.EncodeToString(t.TraceID[:])
}

// traceparentLen is the length of a version-00 traceparent:
// "00-" 32 hex "-" 16 hex "-01".
const traceparentLen = 3 + 32 + 1 + 16 + 3

// Traceparent is t as a W3C traceparent header value, version 00,
// sampled: the flag asks the server to record its span, since the point
// is to find the request in its traces.
func (t TraceContext) Traceparent() string {
	var b [traceparentLen]byte
	t.traceparent(b[:])
	return string(b[:])
}

func (t TraceContext) traceparent(b []byte) {
	copy(b, "00-")
	hex.Encode(b[3:35], t.TraceID[:])
	b[35] = '-'
	hex.Encode(b[36:52], t.SpanID[:])
	copy(b[52:], "-01")
}

// The request headers that carry a trace context.
const (
	HeaderTraceparent = "Traceparent"
	HeaderRequestID   = "X-Request-Id"
)

// traceHeader returns base with t's traceparent and x-request-id added;
// sent is false when the user configured either header, whose values
// then go as given (and t is not the request's). base is shared and read
// only: the result is a new map whose values share base's, and both new
// values are cut from one string, so a request pays a few allocations
// for its trace.
func traceHeader(base http.Header, t TraceContext) (h http.Header, sent bool) {
	_, tp := base[HeaderTraceparent]
	_, rid := base[HeaderRequestID]
	if tp || rid {
		return base, false
	}
	h = make(http.Header, len(base)+2)
	for k, v := range base {
		h[k] = v
	}
	var b [traceparentLen + 32]byte
	t.traceparent(b[:])
	copy(b[traceparentLen:], b[3:35]) // the trace id again, as the request id
	s := string(b[:])
	vals := []string{s[:traceparentLen], s[traceparentLen:]}
	h[HeaderTraceparent] = vals[0:1:1]
	h[HeaderRequestID] = vals[1:2:2]
	return h, true
}
