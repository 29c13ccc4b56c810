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

// DefaultMaxInFlight is the open loop's cap on requests in flight when
// none is given, for a process allowed fdLimit open files: each request
// holds a connection, and a rate the server cannot follow would otherwise
// open them until the process runs out of descriptors (and memory: about
// 130 KiB a stream). A quarter of the descriptors stays for everything
// else; 4096 streams is far past what one endpoint serves at once.
func DefaultMaxInFlight(fdLimit uint64) int {
	const most, least, spare = 4096, 64, 256
	if fdLimit <= spare+least {
		return least
	}
	return int(min((fdLimit-spare)*3/4, most, uint64(MaxConcurrency)))
}

// MaxConcurrencyFor is the most requests in flight a process allowed
// openFiles open files can keep, each holding perRequest of them (0: one),
// with DefaultMaxInFlight's share kept for everything else, and never past
// MaxConcurrency; 0 files (not known) is no bound but MaxConcurrency.
func MaxConcurrencyFor(openFiles uint64, perRequest int) int {
	const least, spare = 32, 256
	if openFiles == 0 {
		return MaxConcurrency
	}
	per := uint64(max(perRequest, 1))
	if openFiles <= spare {
		return least
	}
	return int(min(max((openFiles-spare)*3/4/per, least), MaxConcurrency))
}

// maxConcurrency is the bound on the concurrency knob c's open-file limit
// sets.
func (c Config) maxConcurrency() int { return MaxConcurrencyFor(c.OpenFiles, c.FilesPerRequest) }
