package watch

import (
	"fmt"
	"time"

	"github.com/infertop/infertop/sanitize"
)

// Probe is what the end-to-end probe saw (--probe-url): a trickle of real
// requests sent through the fleet's Service, timed by the client, beside
// the servers' own view of their traffic. The servers' histograms say
// how long they took; the probe says what a user got through the
// balancer, the network and the proxy, and that the Service answers at
// all. Its figures are over the watch's window; at a fifth of a request
// a second that is a dozen requests a minute, so its p99 is close to
// its slowest.
type Probe struct {
	// URL is the endpoint probed, without secrets; Rate the requests a
	// second asked for.
	URL  string  `json:"url"`
	Rate float64 `json:"rate_per_s"`
	// Since the probe began, each request once: Sent = Completed +
	// Failed + Incomplete, Incomplete those still in flight (or cut
	// when the watch ended: the summary's, read after the probe
	// stopped, are cut). A hung Service shows as in flight, then
	// failed at the probe's request timeout.
	Sent       int64 `json:"sent"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	Incomplete int64 `json:"incomplete"`
	// WindowCompleted are the completed requests over the watch's window
	// (at most the engine's longest, 5 min) that TTFT's p50 and p99 and
	// E2E's p99 are of, in seconds (zero with none).
	WindowCompleted int64   `json:"window_completed"`
	TTFTP50         float64 `json:"ttft_p50_s,omitempty"`
	TTFTP99         float64 `json:"ttft_p99_s,omitempty"`
	E2EP99          float64 `json:"e2e_p99_s,omitempty"`
	// LastError is why the newest failed request failed, as the client
	// saw it (redacted, short; the endpoint's words sanitised): a
	// Service down, a model unknown, a timeout. Empty with no failure.
	LastError string `json:"last_error,omitempty"`
}

// ProbeLine is the probe's figures in a line for a person; "" for none.
func ProbeLine(p *Probe) string {
	if p == nil {
		return ""
	}
	head := fmt.Sprintf("probe (client side, %s at %g/s): sent %d = %d ok + %d failed + %d incomplete", sanitize.Short(sanitize.Text(p.URL), 60), p.Rate,
		p.Sent, p.Completed, p.Failed, p.Incomplete)
	line := head + " · none back in the window"
	if p.WindowCompleted > 0 {
		line = fmt.Sprintf("%s · window: TTFT p50 %s p99 %s · E2E p99 %s of %d", head, seconds(p.TTFTP50), seconds(p.TTFTP99), seconds(p.E2EP99), p.WindowCompleted)
	}
	if p.LastError != "" {
		line += " · last failure: " + sanitize.Short(sanitize.Text(p.LastError), 120)
	}
	return line
}

// ProbeProgress is the probe in a progress line's few words; "" for none.
func ProbeProgress(p *Probe) string {
	if p == nil {
		return ""
	}
	s := fmt.Sprintf("probe %d ok %d failed %d in flight", p.Completed, p.Failed, p.Incomplete)
	if p.WindowCompleted > 0 {
		s += " TTFT p50 " + seconds(p.TTFTP50)
	}
	if p.LastError != "" {
		s += " (" + sanitize.Short(sanitize.Text(p.LastError), 100) + ")"
	}
	return s
}

// seconds is s seconds as a duration, to the tenth of a millisecond.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
}
