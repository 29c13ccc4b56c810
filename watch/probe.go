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
	// Sent, Completed and Failed count the probe's requests: Sent since it
	// began, Completed and Failed over the window.
	Sent      int64 `json:"sent"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// TTFT's p50 and p99, E2E's p99, in seconds, over the window's
	// completed requests (zero with none).
	TTFTP50 float64 `json:"ttft_p50_s"`
	TTFTP99 float64 `json:"ttft_p99_s"`
	E2EP99  float64 `json:"e2e_p99_s"`
}

// ProbeLine is the probe's figures in a line for a person; "" for none.
func ProbeLine(p *Probe) string {
	if p == nil {
		return ""
	}
	head := fmt.Sprintf("probe (client side, %s at %g/s)", sanitize.Short(sanitize.Text(p.URL), 60), p.Rate)
	if p.Completed == 0 {
		return fmt.Sprintf("%s: %d sent, none back in the window (%d failed)", head, p.Sent, p.Failed)
	}
	ms := func(s float64) string {
		return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
	}
	return fmt.Sprintf("%s: %d ok, %d failed · TTFT p50 %s p99 %s · E2E p99 %s", head, p.Completed, p.Failed, ms(p.TTFTP50), ms(p.TTFTP99), ms(p.E2EP99))
}
