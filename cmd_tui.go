package main

import (
	"context"
	"fmt"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/ui"
)

const tuiSynopsis = `Usage: infertop [flags]          the live dashboard
       infertop run [flags]      the same load, headless, with reports and SLO gates (infertop run --help)
       infertop ssh [flags]      the dashboard served over SSH, one load for every session (infertop ssh --help)
       infertop sim [flags]      the simulated endpoint alone (infertop sim --help)

Puts closed-loop load on an inference endpoint (OpenAI chat or completions,
Ollama, TGI, or any JSON API) and shows latency percentiles, TTFT, throughput,
errors, in-flight requests and a table of phases, live. Without --url it starts an
embedded simulated endpoint and watches that. Keys change the load while it
runs; press ? in the dashboard for all of them.`

func runTUI(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("infertop", tuiSynopsis, stdout)
	var f loadFlags
	f.add(fs)
	reportDir := fs.String("report-dir", ".", "where the s key writes the reports (infertop-START.json, .csv, .txt)")
	sf := addSimFlags(fs, "sim-")
	if done, err := f.parseLoad(fs, args, stdout); done || err != nil {
		return err
	}
	term, ok := stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}

	guard := guardTerminal(term, stderr)
	defer crash.Handle(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, eng, sc, stopLive, err := f.live(ctx, sf, stderr)
	if err != nil {
		return err
	}
	defer stopLive()

	r := lipgloss.NewRenderer(term)
	if os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	snaps, unsubscribe := eng.Subscribe()
	defer unsubscribe()
	save := f.saver(ctx, st, sc, *reportDir)
	model, err := ui.New(eng, ui.Options{Renderer: r, Theme: f.theme, Snapshots: snaps, Objectives: f.objectives, Save: save, Telemetry: telemetryView(sc),
		Duration: f.duration, Requests: f.requests})
	if err != nil {
		return usageError{err}
	}
	// Panics are crash's, not bubbletea's: bubbletea would print a panic in
	// a command's goroutine into the alternate screen, where it is lost.
	p := tea.NewProgram(wrapModel(model), tea.WithAltScreen(), tea.WithOutput(term), tea.WithoutCatchPanics())
	if err := guard.run(p); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// wrapModel lets the tests put a model around the dashboard's (to make it
// panic); it is the identity otherwise.
var wrapModel = func(m tea.Model) tea.Model { return m }
