package probe

import "time"

// The client's defaults (Config's zero values mean these).
const (
	DefaultTimeout        = 5 * time.Minute
	DefaultConnectTimeout = 10 * time.Second
	// DefaultDrainWait bounds the wait for the end of a response after
	// its answer (the chunked encoding's last chunk, usually on its way).
	DefaultDrainWait = time.Second
)
