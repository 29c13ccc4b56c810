package probe

import "time"

// HTTPPhase names one of a request's HTTP phases, as k6 names and
// divides them (and AIPerf after it), from net/http/httptrace.
type HTTPPhase int

// The phases, in the order a request goes through them. Blocked is from
// the request's Start to the connection in hand: a wait for the pool
// and, on a new connection, its DNS, TCP and TLS (as k6's
// http_req_blocked is); Connecting and TLSHandshaking are the TCP connect
// and the TLS handshake alone (zero on a reused connection); Sending is
// from the connection to the request written; Waiting from then to the
// first byte of the answer (the server's time to its headers: a
// streaming server sends them before its first token, so the queue and
// the prefill fall in Receiving then); Receiving from the first byte to
// the end of the answer (E2E). Blocked + Sending + Waiting + Receiving is
// E2E.
const (
	Blocked HTTPPhase = iota
	Connecting
	TLSHandshaking
	Sending
	Waiting
	Receiving
	// NumHTTPPhases is the number of phases, for arrays indexed by phase.
	NumHTTPPhases
)

var httpPhaseNames = [NumHTTPPhases]string{"http_req_blocked", "http_req_connecting", "http_req_tls_handshaking",
	"http_req_sending", "http_req_waiting", "http_req_receiving"}

// String is k6's name of the phase (http_req_blocked, ...), the key the
// reports and the exporter use.
func (p HTTPPhase) String() string {
	if p < 0 || p >= NumHTTPPhases {
		return "unknown"
	}
	return httpPhaseNames[p]
}

// HTTPPhases returns the request's phases; ok is false when no answer
// came (no first byte: the phases after it are unknown).
func (r *Result) HTTPPhases() (p [NumHTTPPhases]time.Duration, ok bool) {
	if r.TTFB <= 0 {
		return p, false
	}
	p[Blocked], p[Connecting], p[TLSHandshaking] = r.Blocked, r.Connect, r.TLS
	p[Sending], p[Waiting] = r.Sending, r.TTFB-r.Blocked-r.Sending
	p[Receiving] = max(r.E2E-r.TTFB, 0)
	return p, true
}
