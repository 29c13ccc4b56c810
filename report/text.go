package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
)

// WriteText writes the human summary: the manifest, a table per phase and
// for the whole run, then the SLO verdicts.
func (r *Report) WriteText(w io.Writer) error {
	m := r.Manifest
	var b strings.Builder
	fmt.Fprintf(&b, "infertop %s · %s · %s · %s\n", m.Version, sanitize.Text(m.URL), m.API, sanitize.Text(m.Model))
	fmt.Fprintf(&b, "started %s, ended %s (%s) · seed %d · %s/%s, %d CPUs\n",
		m.Start.Format(time.RFC3339), m.End.Format(time.RFC3339), m.End.Sub(m.Start).Round(time.Millisecond), m.Seed, m.OS, m.Arch, m.CPUs)
	if !m.Stream {
		b.WriteString("not streamed: TTFT, TPOT and ITL are not observable\n")
	}
	if m.Settings["cache-bust"] == "true" { // the cache figures read differently: say so where they are read
		b.WriteString("cache busted: every prompt opened with a marker of its own (--cache-bust), no prefix shared\n")
	}
	if c := r.Final.Calibration; c != "" { // the server's words may be in it
		b.WriteString(sanitize.Text(c) + "\n")
	}
	if r.Capacity != nil { // the answer first: a matrix's phases run to hundreds of lines
		writeCapacity(&b, r.Capacity)
	}
	for _, p := range r.Final.Phases {
		if p.Scheduled() == 0 {
			continue
		}
		level := fmt.Sprintf("concurrency %d", p.Knobs.Concurrency)
		if p.Knobs.Mode == load.OpenLoop {
			level = fmt.Sprintf("open loop %.4g req/s", p.Knobs.Rate)
		}
		warm := ""
		if p.Warmup {
			warm = " (warm-up, not in the run's figures)"
		}
		prompt := promptTitle(p, r.Final)
		// A phase ends when the next begins; its requests may finish later
		// (they belong to the phase they started in), and its rates are
		// over that span: say both rather than show phases overlapping.
		span := fmt.Sprintf("from %s for %s", p.Start.Round(time.Millisecond), p.Duration.Round(time.Millisecond))
		if p.End > 0 && p.Start+p.Duration > p.End {
			span = fmt.Sprintf("from %s to %s, its last request done at %s", p.Start.Round(time.Millisecond), p.End.Round(time.Millisecond),
				(p.Start + p.Duration).Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "\nPhase %d: %s, %s, output %d tokens · %s%s\n", p.ID, level, prompt, p.Knobs.OutputTokens, span, warm)
		writeFigures(&b, p)
		if r.Energy != nil {
			writeEnergy(&b, r.Energy.Source, r.Energy.Phases[p.ID])
		}
	}
	since := ""
	if at := r.Final.Since; at > 0 { // the figures start there, the clock at the start
		since = " since the reset at " + at.Round(time.Millisecond).String()
	}
	fmt.Fprintf(&b, "\nWhole run%s · %s\n", since, r.Final.Run.Duration.Round(time.Millisecond))
	writeCounts(&b, r.Final)
	writeFigures(&b, r.Final.Run)
	writeServerSide(&b, r.Final.Run, m.Settings["server-timings"] == "true", m.Stream, r.ServerPerf)
	writeCacheResets(&b, r.Final.CacheResets)
	writeSteady(&b, r.Final.Steady)
	if r.Energy != nil {
		writeEnergy(&b, r.Energy.Source, r.Energy.Run)
	}
	writeTurns(&b, r.Final.Sessions)
	if r.Merged != nil && r.Merged.Result.Agents != nil {
		writeAgents(&b, r.Merged.Result.Agents)
	}
	if len(r.Verdicts) > 0 {
		b.WriteString("\nSLOs:\n")
		for _, v := range r.Verdicts {
			fmt.Fprintf(&b, "  %s\n", v)
		}
		if Held(r.Verdicts) {
			b.WriteString("every SLO held\n")
		} else {
			b.WriteString("an SLO was breached\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCounts says where every request went (sent = completed + failed +
// incomplete), what the open loop scheduled, and the most frequent errors.
func writeCounts(b *strings.Builder, s load.Snapshot) {
	run := s.Run
	fmt.Fprintf(b, "  sent %d = %d completed + %d failed + %d incomplete", run.Sent(), run.Completed, run.Failed, run.Incomplete)
	if run.Pending > 0 {
		fmt.Fprintf(b, " + %d still in flight", run.Pending)
	}
	b.WriteString("\n")
	if a := s.Arrivals(); s.Scheduled > 0 {
		// Every arrival: sent, waiting or dropped; a walk's closed-loop
		// stages sent the rest of the sent above. The rate is over the
		// time requests were being sent: the drain sends none.
		fmt.Fprintf(b, "  open loop: %d arrivals scheduled = %d sent", a.Scheduled, a.Sent)
		if a.Waiting > 0 {
			fmt.Fprintf(b, " + %d waiting in the backlog", a.Waiting)
		}
		fmt.Fprintf(b, " + %d dropped (%.1f req/s sent over %s)\n", a.Dropped, run.SentPerSec, run.Sending.Round(time.Millisecond))
	}
	if run.Dropped > 0 {
		fmt.Fprintf(b, "  %d arrivals were still waiting for a free slot (--max-in-flight) when the run ended or the loop closed, and were never sent: dropped, late, counted as failed in error_rate, not in the percentiles below\n", run.Dropped)
	}
	if s.Trace.On { // how far behind the trace the client fell, if it did
		fmt.Fprintf(b, "  %s\n", s.Trace.Summary())
	}
	if run.Incomplete > 0 {
		fmt.Fprintf(b, "  %d requests were still in flight after the drain and were cancelled: incomplete, counted as failed in error_rate, not in the percentiles below\n", run.Incomplete)
	}
	if run.Retried > 0 {
		fmt.Fprintf(b, "  %d attempts were sent again (on a new connection: the server closed a reused one, or refused it unprocessed); not failures\n", run.Retried)
	}
	if len(s.Errors) > 0 {
		b.WriteString("  most frequent errors:\n")
		for i, e := range s.Errors {
			if i == maxErrorLines {
				fmt.Fprintf(b, "    … %d more distinct errors (all of them in the JSON)\n", len(s.Errors)-i)
				break
			}
			fmt.Fprintf(b, "    %d × %s\n", e.Count, e.Line())
		}
	}
}

// maxErrorLines is how many distinct errors the text summary lists.
const maxErrorLines = 5

func writeFigures(b *strings.Builder, p load.Phase) {
	fmt.Fprintf(b, "  requests %d ok, %d failed", p.Completed, p.Failed)
	if p.Dropped > 0 {
		fmt.Fprintf(b, ", %d dropped unsent", p.Dropped)
	}
	if p.Waiting > 0 {
		fmt.Fprintf(b, ", %d waiting unsent", p.Waiting)
	}
	var classes []string
	for _, c := range probe.FailureClasses() {
		if n := p.ByClass[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	if len(classes) > 0 {
		fmt.Fprintf(b, " (%s)", strings.Join(classes, ", "))
	}
	embeds := p.Inputs > 0
	if embeds { // no output: inputs embedded instead
		fmt.Fprintf(b, " · %.1f req/s · %.1f inputs/s · %.1f tok/s in · goodput %.1f req/s\n",
			p.ReqPerSec, inputsPerSec(p), p.InTokPerSec, p.GoodPerSec)
	} else {
		fmt.Fprintf(b, " · %.1f req/s · %.1f tok/s out · %.1f tok/s in · goodput %.1f req/s\n",
			p.ReqPerSec, p.OutTokPerSec, p.InTokPerSec, p.GoodPerSec)
	}
	if rate, ok := p.InvalidRate(); ok {
		fmt.Fprintf(b, "  answers judged: %d valid, %d invalid (%.2f%% invalid: no JSON, a schema missed, no tool call or its arguments wrong)\n", p.Valid, p.Invalid, 100*rate)
	}
	if p.Unstreamed > 0 {
		fmt.Fprintf(b, "  %d of the %d answers came whole though streamed was asked (the server ignored \"stream\": true): no TTFT, TPOT or ITL of them\n", p.Unstreamed, p.Completed)
	}
	if p.EstimatedOutput > 0 {
		fmt.Fprintf(b, "  %d of the %d output counts estimated, a token a message (the server reported no usage)\n", p.EstimatedOutput, p.Completed)
	}
	if p.ReasoningTokens > 0 {
		fmt.Fprintf(b, "  reasoning %d of %d output tokens (%.0f%%), answer %d; TTFT is the first token of either, TTFO the answer's first\n",
			p.ReasoningTokens, p.OutTokens, 100*float64(p.ReasoningTokens)/float64(max(p.OutTokens, 1)), p.OutTokens-p.ReasoningTokens)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \tcount\tmean\tstd\tp50\tp90\tp95\tp99\tp99.9\tmax\t")
	if p.Knobs.Mode == load.ClosedLoop && p.ID > 0 && p.Latency[load.E2E].Count > 0 {
		defer fmt.Fprintln(b, "  (closed loop: service times)")
	}
	metrics := []load.Metric{load.TTFT, load.TPOT, load.ITL, load.E2E, load.TTFB}
	switch {
	case embeds: // nothing streams: TTFT, TPOT and ITL would be empty rows
		metrics = []load.Metric{load.E2E, load.TTFB}
	case p.ReasoningTokens > 0: // TTFO differs from TTFT only after reasoning
		metrics = []load.Metric{load.TTFT, load.TTFO, load.TPOT, load.ITL, load.E2E, load.TTFB}
	}
	if p.Latency[load.Queue].Count > 0 { // open loop: from the intended send time too
		metrics = append(metrics, load.Queue, load.TTFTIntended, load.E2EIntended)
	}
	for _, m := range metrics {
		d := p.Latency[m]
		if d.Count == 0 {
			fmt.Fprintf(tw, "  %s\t0\t—\t—\t—\t—\t—\t—\t—\t—\t\n", m)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m, d.Count,
			fms(d.Mean), fms(d.Std), fms(d.P50), fms(d.P90), fms(d.P95), fms(d.P99), fms(d.P999), fms(d.Max))
	}
	tw.Flush()
}

// promptTitle is a phase's prompt as its title says it: the knob, or,
// with a shared prefix, what went out (the mean the server counted, or
// the prefix and a marker when it is the longer: "prompt 256" said of
// 1,008 tokens a request was untrue) and the prefix beside it.
func promptTitle(p load.Phase, s load.Snapshot) string {
	switch {
	case s.Dataset > 0:
		return fmt.Sprintf("prompts from the dataset (%d)", s.Dataset)
	case s.PrefixTokens <= 0:
		return fmt.Sprintf("prompt %d", p.Knobs.PromptTokens)
	}
	sent := fmt.Sprintf("prompt %d", max(p.Knobs.PromptTokens, s.PrefixTokens+1))
	if p.Completed > 0 {
		sent = fmt.Sprintf("prompt ≈%d as the server counted", (p.InTokens+p.Completed/2)/p.Completed)
	}
	return fmt.Sprintf("%s (asked %d; every prompt starts with the %d-token shared prefix)", sent, p.Knobs.PromptTokens, s.PrefixTokens)
}

// inputsPerSec is the phase's inputs embedded per second.
func inputsPerSec(p load.Phase) float64 {
	if p.Completed == 0 {
		return 0
	}
	return p.ReqPerSec * float64(p.Inputs) / float64(p.Completed)
}

func fms(d time.Duration) string { return fmt.Sprintf("%.2fms", ms(d)) }

func writeEnergy(b *strings.Builder, source string, f EnergyFigures) {
	if !f.OK {
		return
	}
	if f.JoulesPerToken == 0 { // no output tokens (embeddings): no per-token figure
		fmt.Fprintf(b, "  GPU energy %.0f J · %.0f W average (%s, %s)\n", f.Joules, f.AvgWatts, source, f.From)
		return
	}
	fmt.Fprintf(b, "  GPU energy %.0f J · %.0f W average · %.4f J per output token · %.2f tokens per J (%s, %s)\n",
		f.Joules, f.AvgWatts, f.JoulesPerToken, f.TokensPerJoule, source, f.From)
}
