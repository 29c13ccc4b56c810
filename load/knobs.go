package load

// Limits of the knobs.
const (
	MaxConcurrency  = 10000
	MaxPromptTokens = 32768
	MaxOutputTokens = 32768
	MaxRate         = 100000
)

// Mode is how requests are started.
type Mode int

const (
	// ClosedLoop keeps Concurrency requests in flight: each worker sends its
	// next request when the last ends, so a slow server slows the client
	// (the figures are service times).
	ClosedLoop Mode = iota
	// OpenLoop starts requests at Rate per second whatever the server does;
	// latency is also counted from each request's intended send time, so
	// coordinated omission cannot hide the tail.
	OpenLoop
)

// String names the mode.
func (m Mode) String() string {
	if m == OpenLoop {
		return "open"
	}
	return "closed"
}

// Knobs are the live settings of the load. A change of Concurrency,
// PromptTokens or OutputTokens starts a new phase; pausing does not.
type Knobs struct {
	// Concurrency is the number of requests kept in flight (closed loop).
	Concurrency int
	// PromptTokens is the target prompt length in tokens.
	PromptTokens int
	// OutputTokens is max_tokens for every request.
	OutputTokens int
	// Paused stops new requests; those in flight finish.
	Paused bool
	// Mode is closed or open loop; Rate is the open loop's arrivals per
	// second.
	Mode Mode
	Rate float64
}

// clamp brings every knob inside its limits.
func (k Knobs) clamp() Knobs {
	k.Concurrency = min(max(k.Concurrency, 1), MaxConcurrency)
	k.PromptTokens = min(max(k.PromptTokens, 1), MaxPromptTokens)
	k.OutputTokens = min(max(k.OutputTokens, 1), MaxOutputTokens)
	k.Rate = min(max(k.Rate, 0), MaxRate)
	if k.Mode == OpenLoop && k.Rate < 0.01 {
		k.Rate = 0.01
	}
	return k
}

// samePhase reports whether a and b belong to one phase.
func (k Knobs) samePhase(o Knobs) bool {
	if k.Mode != o.Mode || k.Mode == OpenLoop && k.Rate != o.Rate {
		return false
	}
	return (k.Mode == OpenLoop || k.Concurrency == o.Concurrency) && k.PromptTokens == o.PromptTokens && k.OutputTokens == o.OutputTokens
}
