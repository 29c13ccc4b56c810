package probe

import "time"

// The client's defaults (Config's zero values mean these).
const (
	DefaultTimeout        = 5 * time.Minute
	DefaultConnectTimeout = 10 * time.Second
)
