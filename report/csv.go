package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// WriteCSV writes one row per phase with requests, then one for the whole
// run (phase "run"); for a capacity run, one row per step instead.
func (r *Report) WriteCSV(w io.Writer) error {
	if r.Capacity != nil { // a capacity run's table is its curve
		return writeCapacityCSV(w, r.Capacity)
	}
	cw := csv.NewWriter(w)
	head := []string{"phase", "mode", "rate", "concurrency", "prompt_tokens", "output_tokens", "start_s", "duration_s", "sent", "completed", "failed", "incomplete", "backlog", "dropped", "retried", "good",
		"total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "input_throughput"}
	for _, m := range vllmMetric {
		for _, stat := range []string{"mean", "std", "p50", "p90", "p95", "p99", "p99.9", "max"} {
			head = append(head, stat+"_"+m.key+"_ms")
		}
	}
	for _, c := range probe.FailureClasses() {
		head = append(head, "errors_"+c.String())
	}
	head = append(head, "gpu_avg_power_w", "gpu_energy_j", "gpu_energy_per_output_token_j")
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	row := func(id string, p load.Phase) []string {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
		i := func(v int64) string { return strconv.FormatInt(v, 10) }
		out := []string{id, p.Knobs.Mode.String(), f(p.Knobs.Rate), strconv.Itoa(p.Knobs.Concurrency), strconv.Itoa(p.Knobs.PromptTokens), strconv.Itoa(p.Knobs.OutputTokens),
			f(p.Start.Seconds()), f(p.Duration.Seconds()), i(p.Sent()), i(p.Completed), i(p.Failed), i(p.Incomplete), i(p.Waiting), i(p.Dropped), i(p.Retried), i(p.Good), i(p.InTokens), i(p.OutTokens),
			f(p.ReqPerSec), f(p.GoodPerSec), f(p.OutTokPerSec), f(p.InTokPerSec)}
		for _, m := range vllmMetric {
			d := p.Latency[m.m]
			for _, v := range []float64{ms(d.Mean), ms(d.Std), ms(d.P50), ms(d.P90), ms(d.P95), ms(d.P99), ms(d.P999), ms(d.Max)} {
				out = append(out, f(v))
			}
		}
		for _, c := range probe.FailureClasses() {
			out = append(out, i(p.ByClass[c]))
		}
		e := EnergyFigures{}
		if r.Energy != nil {
			e = r.Energy.Run
			if p.ID != 0 {
				e = r.Energy.Phases[p.ID]
			}
		}
		if e.OK {
			return append(out, f(e.AvgWatts), f(e.Joules), strconv.FormatFloat(e.JoulesPerToken, 'f', 6, 64))
		}
		return append(out, "", "", "")
	}
	for _, p := range r.Final.Phases {
		if p.Scheduled() > 0 {
			if err := cw.Write(row(strconv.Itoa(p.ID), p)); err != nil {
				return fmt.Errorf("write CSV: %w", err)
			}
		}
	}
	// The run's setting is the engine's: the one it started at since the
	// start or the last reset (the manifest's is the start's only); a
	// snapshot of no phase falls back on the manifest.
	run := r.Final.Run
	if run.Knobs == (load.Knobs{}) {
		run.Knobs = load.Knobs{Concurrency: r.Manifest.Knobs.Concurrency, PromptTokens: r.Manifest.Knobs.PromptTokens, OutputTokens: r.Manifest.Knobs.OutputTokens,
			Rate: r.Manifest.Knobs.Rate}
		if r.Manifest.Knobs.Mode == load.OpenLoop.String() {
			run.Knobs.Mode = load.OpenLoop
		}
	}
	out := row("run", run)
	if mixedLoops(r.Final.Phases) { // a walk through both loops: the run is neither
		out[1] = "mixed"
	}
	if err := cw.Write(out); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	cw.Flush()
	return cw.Error()
}

// mixedLoops reports whether the phases with requests (the warm-up left
// out) ran both the closed and the open loop.
func mixedLoops(phases []load.Phase) bool {
	var open, closed bool
	for _, p := range phases {
		if p.Warmup || p.Scheduled() == 0 {
			continue
		}
		open = open || p.Knobs.Mode == load.OpenLoop
		closed = closed || p.Knobs.Mode == load.ClosedLoop
	}
	return open && closed
}
