package sim

import "net/http"

// maxRequestID bounds the x-request-id the sim keeps and echoes: a
// header is the client's text, and a record is kept for a long time.
const maxRequestID = 128

// traceOf reads a request's W3C traceparent and x-request-id for its
// record, as a server that logs them (vLLM joins the traceparent to its
// request span): the trace id, when the traceparent is a valid one of
// version 00 (else empty), and the request id, when it is at most
// maxRequestID printable ASCII characters. The request id is echoed on
// the answer, as vLLM's --enable-request-id-headers does.
func traceOf(w http.ResponseWriter, r *http.Request) (traceID, requestID string) {
	if tp := r.Header.Get("Traceparent"); validTraceparent(tp) {
		traceID = tp[3:35]
	}
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= maxRequestID && printable(id) {
		requestID = id
		w.Header().Set("X-Request-Id", id)
	}
	return traceID, requestID
}

// validTraceparent checks the version-00 form
// 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, the ids not all
// zero, as W3C Trace Context asks.
func validTraceparent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	return lowerHex(s[3:35]) && lowerHex(s[36:52]) && lowerHex(s[53:]) &&
		s[3:35] != "00000000000000000000000000000000" && s[36:52] != "0000000000000000"
}

func lowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
