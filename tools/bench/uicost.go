package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/tools/endurance"
	"github.com/infertop/infertop/ui"
)

func uiCost(out *bytes.Buffer, d time.Duration) error {
	fmt.Fprintf(out, "## 4. The UI's cost\n\nOne full redraw of every panel from a busy snapshot (the engine's own, after two seconds of load on the fast sim), without colour and in 256 colours (as in tmux); the dashboard redraws on each snapshot, four a second by default, and on keys.\n\n| size | per frame | per frame, 256 colours |\n|---|---:|---:|\n")
	p, _ := sim.Preset("fast")
	_, url, stop, err := startSim(p)
	if err != nil {
		return err
	}
	snap, err := engineRun(probe.Config{URL: url + "/v1/chat/completions", Model: p.Model},
		load.Knobs{Concurrency: 16, PromptTokens: 64, OutputTokens: 64}, load.Length{}, 2*time.Second, false)
	stop()
	if err != nil {
		return err
	}
	for _, size := range [][2]int{{80, 24}, {160, 48}, {240, 70}} {
		var per [2]time.Duration
		for i, r := range []*lipgloss.Renderer{plain(), colours()} {
			m, err := ui.New(nil, ui.Options{Renderer: r})
			if err != nil {
				return err
			}
			var model tea.Model = m
			model, _ = model.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			const n = 50
			t0 := time.Now()
			for range n {
				model, _ = model.Update(ui.SnapshotMsg(snap))
				model.View()
			}
			per[i] = (time.Since(t0) / n).Round(10 * time.Microsecond)
		}
		fmt.Fprintf(out, "| %dx%d | %v | %v |\n", size[0], size[1], per[0], per[1])
	}
	bin, cleanup, err := buildInfertop()
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(out, "\nThe dashboard process itself, in tmux at 160x48, for %s at concurrency 32, beside `infertop run` with the same flags in a terminal of its own, the two at the same time, each against a sim of its own: whatever else the machine does then weighs on both alike (one after the other, the difference moved by a point or two from run to run on a shared machine). The CPU of each from its own exporter's `process_cpu_seconds_total` (the /proc ticks, user and system, the engine and client included), %d rounds, the median difference kept:\n\n| endpoint | round | req/s | headless, %% of one core | dashboard, %% of one core | the dashboard's own |\n|---|---:|---:|---:|---:|---:|\n", d, rounds)
	for _, preset := range []string{"default", "fast"} {
		var own []float64
		for round := range rounds {
			var cpu, reqs [2]float64
			var errs [2]error
			var wg sync.WaitGroup
			for i, headless := range []bool{true, false} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := endurance.Run(context.Background(), endurance.Config{
						Infertop: []string{bin}, Env: []string{"TERM=xterm-256color"}, Duration: d, Width: 160, Height: 48,
						SimArgs: []string{"--preset", preset}, LoadArgs: []string{"-c", "32"}, Measure: true, Headless: headless,
					})
					if err != nil {
						errs[i] = err
						return
					}
					// From the third reading: the start-up (the build's first
					// page faults, the sim's warm-up) is no part of either's cost.
					first, last := res.Samples[min(2, len(res.Samples)-1)], res.Samples[len(res.Samples)-1]
					secs := (last.At - first.At).Seconds()
					cpu[i], reqs[i] = 100*(last.CPU-first.CPU)/secs, (last.Requests()-first.Requests())/secs
				}()
			}
			wg.Wait()
			if err := errors.Join(errs[:]...); err != nil {
				return err
			}
			own = append(own, cpu[1]-cpu[0])
			fmt.Fprintf(out, "| `infertop sim --preset %s` | %d | %.0f | %.1f | %.1f | %+.1f |\n", preset, round+1, (reqs[0]+reqs[1])/2, cpu[0], cpu[1], cpu[1]-cpu[0])
		}
		slices.Sort(own)
		fmt.Fprintf(out, "| | **median** | | | | **%+.1f** |\n", own[len(own)/2])
	}
	out.WriteString("\nThe engine's streaming rate with a dashboard rendering and without is in section 2.\n\n")
	return nil
}
