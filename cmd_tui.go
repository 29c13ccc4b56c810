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

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/ui"
)

const tuiSynopsis = `Usage: infertop [flags]          the live dashboard
       infertop sim [flags]      the simulated endpoint alone (infertop sim --help)

Puts closed-loop load on an OpenAI-compatible endpoint (streamed
/v1/chat/completions) and shows latency percentiles, TTFT, throughput, errors,
in-flight requests and a table of phases, live. Without --url it starts an
embedded simulated endpoint and watches that. Keys change the load while it
runs; press ? in the dashboard for all of them.`

func runTUI(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("infertop", tuiSynopsis, stdout)
	var f loadFlags
	f.add(fs)
	sf := addSimFlags(fs, "sim-")
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.version {
		fmt.Fprintf(stdout, "infertop %s\n", versionString())
		return nil
	}
	if err := f.validate(); err != nil {
		return err
	}
	if k := probe.Kind(f.api); f.url == "" && (k == probe.Ollama || k == probe.TGI) {
		return usagef("the embedded sim speaks openai-chat, openai-completions and generic, not %s: pass --url", f.api)
	}
	term, ok := stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := f.setup(ctx, sf, stderr)
	if err != nil {
		return err
	}
	defer st.stop()

	eng, err := load.New(load.Config{
		Do: st.client.Do, Target: st.target, Tick: f.tick, Window: f.window, Seed: f.seed,
		Knobs: load.Knobs{Concurrency: f.concurrency, PromptTokens: f.prompt, OutputTokens: f.output},
	})
	if err != nil {
		return usageError{err}
	}
	engDone := make(chan error, 1)
	go func() { engDone <- eng.Run(ctx) }()
	// Stopping the engine cancels what is in flight at once.
	defer func() { cancel(); <-engDone }()

	r := lipgloss.NewRenderer(term)
	if os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	snaps, unsubscribe := eng.Subscribe()
	defer unsubscribe()
	model, err := ui.New(eng, ui.Options{Renderer: r, Theme: f.theme, Snapshots: snaps})
	if err != nil {
		return usageError{err}
	}
	if _, err := tea.NewProgram(model, tea.WithAltScreen(), tea.WithOutput(term)).Run(); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}
