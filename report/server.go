package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/telemetry"
)

// writeServerSide says where the run's TTFT went, by the server's own
// timings, and how much of its prompts the server's prefix cache held;
// one line that the server offered no timings when --server-timings
// asked for them (asked is the flag's setting) and no answer had any.
func writeServerSide(b *strings.Builder, p load.Phase, asked, stream bool, perf *telemetry.PerfRun) {
	sp := p.TTFTSplit
	if n := sp[load.SplitGap].Count; n > 0 {
		pair := func(d load.Dist) string {
			return fmt.Sprintf("%s / %s", d.P50.Round(10*time.Microsecond), d.P99.Round(10*time.Microsecond))
		}
		fmt.Fprintf(b, "  where TTFT went (p50 / p99 of the %d requests with the server's timings): connection %s · server queue %s · server prefill %s · the rest %s; the client's TTFT less the server's %s\n",
			n, pair(sp[load.SplitConnection]), pair(sp[load.SplitQueue]), pair(sp[load.SplitPrefill]), pair(sp[load.SplitRest]), pair(sp[load.SplitGap]))
	} else if asked && p.Completed > 0 && p.ServerTimed == 0 && (perf == nil || !perf.Offered) {
		b.WriteString("  server timings: not offered by this server (--server-timings asked; no answer carried them, and no /perf_metrics)\n")
	}
	writeServerPerf(b, perf, stream)
	if n := p.ServerCounted; n > 0 {
		fmt.Fprintf(b, "  output tokens: the server's count for %d streamed requests; the client's own (a token a message) differed from it in %d (%.1f %%)\n",
			n, p.CountMismatch, 100*float64(p.CountMismatch)/float64(n))
	}
	if p.CachedOf > 0 {
		fmt.Fprintf(b, "  prefix cache: %d of %d prompt tokens held (%.1f %%), by the server's count\n",
			p.CachedTokens, p.CachedOf, 100*float64(p.CachedTokens)/float64(p.CachedOf))
	}
	if p.SpecDrafted > 0 {
		fmt.Fprintf(b, "  speculative decoding: %d of %d draft tokens accepted (%.1f %%), by the server's count\n",
			p.SpecAccepted, p.SpecDrafted, 100*float64(p.SpecAccepted)/float64(p.SpecDrafted))
	}
}

// writeServerPerf says the server's own per-request performance from
// its /perf_metrics (TensorRT-LLM), labelled as the server's and
// unjoined; nothing where it was not offered. stream is whether the
// answers were streamed: only a streamed answer's TTFT joins.
func writeServerPerf(b *strings.Builder, p *telemetry.PerfRun, stream bool) {
	if p == nil || !p.Offered {
		return
	}
	if p.Entries == 0 {
		fmt.Fprintf(b, "  %s: answered, no entry in the run (is perf_metrics_max_requests > 0 and return_perf_metrics set?)\n", telemetry.PerfSource)
		return
	}
	pair := func(d load.Dist) string {
		if d.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s", d.P50.Round(10*time.Microsecond), d.P99.Round(10*time.Microsecond))
	}
	fmt.Fprintf(b, "  the server's own timings (%s, %d requests it finished in the run, its distribution; p50 / p99): queue %s · prefill %s · TTFT %s · generation %s\n",
		telemetry.PerfSource, p.Entries, pair(p.Parts[telemetry.PerfQueue]), pair(p.Parts[telemetry.PerfPrefill]), pair(p.Parts[telemetry.PerfTTFT]), pair(p.Parts[telemetry.PerfGeneration]))
	if sp := p.Split; p.Joined > 0 {
		fmt.Fprintf(b, "    where TTFT went (p50 / p99 of the %d of our requests joined to their entries by the server's request number): connection %s · server queue %s · server prefill %s · the rest %s; the client's TTFT less the server's %s\n",
			p.Joined, pair(sp[load.SplitConnection]), pair(sp[load.SplitQueue]), pair(sp[load.SplitPrefill]), pair(sp[load.SplitRest]), pair(sp[load.SplitGap]))
	} else if !stream {
		b.WriteString("    not joined to our requests: a join splits a streamed answer's TTFT, and these were not streamed (--no-stream)\n")
	} else {
		b.WriteString("    not joined to our requests: the server names its answers by no request number of its own (older versions)\n")
	}
	if rate, ok := p.BlockHitRate(); ok {
		fmt.Fprintf(b, "    its prefix cache: %d of %d KV blocks reused (%.1f %%)\n", p.ReusedBlocks, p.ReusedBlocks+p.MissedBlocks, 100*rate)
	}
	if p.SpecDrafted > 0 {
		fmt.Fprintf(b, "    its speculative decoding: %d of %d draft tokens accepted (%.1f %%)\n", p.SpecAccepted, p.SpecDrafted, 100*float64(p.SpecAccepted)/float64(p.SpecDrafted))
	}
	if p.Refused+p.Lost+p.LostReads > 0 {
		fmt.Fprintf(b, "    %d entries refused (no figure in bounds), %d lost past a read's 4,096, and %d reads lost whole (past 8 MiB)\n", p.Refused, p.Lost, p.LostReads)
	}
}

// writeCacheResets says how often the server's prefix cache was emptied
// before a phase (--reset-prefix-cache), and the last refusal, in the
// server's words (sanitised): nothing when none was asked.
func writeCacheResets(b *strings.Builder, r load.CacheResets) {
	if r.Done+r.Failed == 0 {
		return
	}
	fmt.Fprintf(b, "  prefix cache reset before %d of the phases after the start (--reset-prefix-cache)", r.Done)
	if r.Failed > 0 {
		fmt.Fprintf(b, "; %d refused, the last: %s", r.Failed, sanitize.Text(r.Last))
	}
	b.WriteString("\n")
}

// writeSteady says the closed loop's steady-state window beside the whole
// run's figures: its span, rates and TTFT and E2E percentiles, or that
// the load was never steady; nothing where none was sought.
func writeSteady(b *strings.Builder, s load.SteadyState) {
	if s.Target == 0 {
		return
	}
	at := fmt.Sprintf("%.0f %% of %d in flight", 100*load.SteadyShare, s.Target)
	if !s.Reached {
		fmt.Fprintf(b, "  steady state: never reached (%s)\n", at)
		return
	}
	pair := func(d load.Dist) string {
		return fmt.Sprintf("%s / %s", d.P50.Round(10*time.Microsecond), d.P99.Round(10*time.Microsecond))
	}
	fmt.Fprintf(b, "  steady state (%s) from %s to %s: %d requests, %.2f req/s, %.1f output tok/s; TTFT p50 / p99 %s · E2E %s\n",
		at, s.Start.Round(time.Millisecond), s.End.Round(time.Millisecond), s.Completed, s.ReqPerSec, s.OutTokPerSec,
		pair(s.Latency[load.TTFT]), pair(s.Latency[load.E2E]))
}
