package load

import (
	"fmt"
	"time"
)

// FormatDuration is a latency or an elapsed time as every text infertop
// prints reads it (the dashboard, the headless progress line): three
// significant figures in the largest unit that keeps them, "—" for none
// (zero or less), never time.Duration's 16.7526s beside a 158.1ms.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/1e6)
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < 100*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%.0fs", d.Seconds())
}
