package load

import "time"

// The engine's defaults, named so that the command line shows the same
// values the engine falls back to.
const (
	DefaultConcurrency  = 8
	DefaultPromptTokens = 256
	DefaultOutputTokens = 128
	DefaultTick         = 250 * time.Millisecond
	DefaultWindow       = 30 * time.Second
)
