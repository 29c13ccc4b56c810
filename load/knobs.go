package load

// Limits of the knobs. MinRate is the open loop's slowest: one request
// every 100 s already leaves a window with nothing in it.
const (
	MaxConcurrency  = 10000
	MaxPromptTokens = 32768
	MaxOutputTokens = 32768
	MaxRate         = 100000
	MinRate         = 0.01
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
// PromptTokens, OutputTokens, Mode or Rate starts a new phase, and so do a
// pause and a resume: a pause ends its phase (its time is in no rate), and
// the burst of requests at the resume is the next phase's.
type Knobs struct {
	// Concurrency is the number of requests kept in flight (closed loop),
	// 1..MaxConcurrency; in the open loop it may be 0, and a later closed
	// loop then starts at 1.
	Concurrency int
	// PromptTokens is the target prompt length in tokens, 1..MaxPromptTokens.
	PromptTokens int
	// OutputTokens is max_tokens for every request, 1..MaxOutputTokens.
	OutputTokens int
	// Paused stops new requests; those in flight finish.
	Paused bool
	// Mode is closed or open loop; Rate is the open loop's arrivals per
	// second, MinRate..MaxRate (0 in the closed loop: kept for the open
	// loop a key may switch to).
	Mode Mode
	Rate float64
	// Speed is a trace replay's speed, MinSpeed..MaxSpeed (1: the trace's
	// own time; 0 when no trace is replayed). During a replay Rate is the
	// trace's mean rate at this speed, and the lengths scale the trace's.
	Speed float64
}

// clamp brings every knob inside its limits: a key held past a limit
// stops there. A configuration is checked instead (Config.Validate), so
// this changes only what the keys and a driver of the knobs ask for.
func (k Knobs) clamp() Knobs {
	k.Concurrency = min(max(k.Concurrency, 1), MaxConcurrency)
	k.PromptTokens = min(max(k.PromptTokens, 1), MaxPromptTokens)
	k.OutputTokens = min(max(k.OutputTokens, 1), MaxOutputTokens)
	k.Rate = min(max(k.Rate, 0), MaxRate)
	if k.Mode == OpenLoop && k.Rate < MinRate {
		k.Rate = MinRate
	}
	return k
}

// samePhase reports whether a and b belong to one phase.
func (k Knobs) samePhase(o Knobs) bool {
	if k.Paused != o.Paused || k.Mode != o.Mode || k.Mode == OpenLoop && k.Rate != o.Rate || k.Speed != o.Speed {
		return false
	}
	return (k.Mode == OpenLoop || k.Concurrency == o.Concurrency) && k.PromptTokens == o.PromptTokens && k.OutputTokens == o.OutputTokens
}
