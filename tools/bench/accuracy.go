package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

func accuracy(out *bytes.Buffer, d time.Duration) error {
	fmt.Fprintf(out, "## 3. Accuracy\n\nThe default sim (32 slots), prompt 256, output 32; the sim's own record of the same requests against infertop's.\n\n")
	fmt.Fprintf(out, "| load | metric | server p50 | infertop p50 | server p99 | infertop p99 |\n|---|---|---:|---:|---:|---:|\n")
	for _, c := range []int{8, 64} {
		p, _ := sim.Preset("default")
		srv, url, stop, err := startSim(p)
		if err != nil {
			return err
		}
		s, err := accuracyRun(url, p.Model, c, d)
		records := srv.Records()
		stop()
		if err != nil {
			return err
		}
		var ttft, e2e []time.Duration
		for _, r := range records {
			if !r.Cancelled && r.Status == 200 {
				ttft, e2e = append(ttft, r.TTFT()), append(e2e, r.E2E())
			}
		}
		slices.Sort(ttft)
		slices.Sort(e2e)
		// The value at rank round(q·n), as HdrHistogram takes a quantile:
		// with a few hundred requests the next rank up can be a whole
		// batch later (at saturation requests finish in waves).
		pct := func(x []time.Duration, q float64) time.Duration {
			if len(x) == 0 {
				return 0
			}
			return x[min(len(x), max(1, int(q*float64(len(x))+0.5)))-1]
		}
		label := fmt.Sprintf("concurrency %d (%s), %d requests", c, map[bool]string{true: "under the slots", false: "saturating"}[c <= p.Slots], len(e2e))
		for _, m := range []struct {
			name string
			srv  []time.Duration
			d    load.Dist
		}{{"TTFT", ttft, s.Run.Latency[load.TTFT]}, {"E2E", e2e, s.Run.Latency[load.E2E]}} {
			r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
			fmt.Fprintf(out, "| %s | %s | %v | %v | %v | %v |\n", label, m.name, r(pct(m.srv, 0.5)), r(m.d.P50), r(pct(m.srv, 0.99)), r(m.d.P99))
		}
	}
	out.WriteString("\n")
	return nil
}

// accuracyRun loads the sim for d, then pauses and waits for the last
// request, so both sides have the same requests.
func accuracyRun(url, model string, c int, d time.Duration) (load.Snapshot, error) {
	client, err := probe.New(probe.Config{URL: url + "/v1/chat/completions", Model: model, MaxConns: 256})
	if err != nil {
		return load.Snapshot{}, err
	}
	defer client.Close()
	eng, err := load.New(load.Config{Do: client.Do, Knobs: load.Knobs{Concurrency: c, PromptTokens: 256, OutputTokens: 32}})
	if err != nil {
		return load.Snapshot{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(d)
	eng.SetPaused(true)
	for eng.InFlight() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond) // a snapshot after the last one
	return eng.Latest(), nil
}
