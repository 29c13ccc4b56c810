package load

// Limits of the knobs.
const (
	MaxConcurrency  = 10000
	MaxPromptTokens = 32768
	MaxOutputTokens = 32768
)

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
}

// clamp brings every knob inside its limits.
func (k Knobs) clamp() Knobs {
	k.Concurrency = min(max(k.Concurrency, 1), MaxConcurrency)
	k.PromptTokens = min(max(k.PromptTokens, 1), MaxPromptTokens)
	k.OutputTokens = min(max(k.OutputTokens, 1), MaxOutputTokens)
	return k
}

// samePhase reports whether a and b belong to one phase.
func (k Knobs) samePhase(o Knobs) bool {
	return k.Concurrency == o.Concurrency && k.PromptTokens == o.PromptTokens && k.OutputTokens == o.OutputTokens
}
