package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
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
	target := load.Target{}
	rawURL := f.url
	var simDone chan error
	if rawURL == "" {
		if f.api == "" {
			f.api = string(probe.OpenAIChat)
		}
		p, err := sf.params("sim-")
		if err != nil {
			return err
		}
		srv, err := sim.New(p)
		if err != nil {
			return usageError{err}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("embedded sim: %w", err)
		}
		simCtx, stopSim := context.WithCancel(context.Background())
		simDone = make(chan error, 1)
		go func() { simDone <- srv.Serve(simCtx, ln, nil) }()
		defer func() { stopSim(); <-simDone }()
		rawURL = "http://" + ln.Addr().String() + "/v1"
		target.Sim = true
		if f.model == "" {
			f.model = p.Model
		}
	}
	client, kind, why, err := f.client(ctx, rawURL)
	if err != nil {
		return err
	}
	defer client.Close()
	if why != "" {
		fmt.Fprintf(stderr, "infertop: API %s (%s)\n", kind, why)
	}
	if f.fixedOutput && kind != probe.OpenAIChat && kind != probe.OpenAICompletions {
		fmt.Fprintf(stderr, "infertop: --fixed-output: %s has no way to force the output length; answers may stop early\n", kind)
	}
	target.URL, target.Model, target.API = probe.RedactURL(client.Config().URL), client.Config().Model, f.apiLabel(kind)

	eng, err := load.New(load.Config{
		Do: client.Do, Target: target, Tick: f.tick, Window: f.window, Seed: f.seed,
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
