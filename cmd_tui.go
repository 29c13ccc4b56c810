package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/ui"
)

const tuiSynopsis = `Usage: infertop [flags]          the live dashboard
       infertop run [flags]      the same load, headless, with reports and SLO gates (infertop run --help)
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

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := f.setup(ctx, sf, stderr)
	if err != nil {
		return err
	}
	defer st.stop()

	xctx, stopExporter := context.WithCancel(context.Background())
	defer stopExporter()
	x, xDone, err := f.startExporter(xctx)
	if err != nil {
		return err
	}
	var observe func(load.Record)
	if x != nil {
		observe = x.Observe
		defer func() { stopExporter(); <-xDone }()
	}
	cfg := f.engineConfig(st, f.window)
	cfg.OnResult = observe
	eng, err := load.New(cfg)
	if err != nil {
		return usageError{err}
	}
	if x != nil { // the exporter follows the snapshots until the engine stops
		xs, _ := eng.Subscribe()
		go func() {
			for s := range xs {
				x.Update(s)
			}
		}()
	}
	engDone := make(chan error, 1)
	go func() { engDone <- eng.Run(ctx) }()
	if len(f.walk) > 0 {
		walked := make(chan error, 1)
		go func() { walked <- eng.Walk(ctx, f.walk) }()
		defer func() { cancel(); <-walked }()
	}
	if f.duration > 0 { // the time is up: the load pauses, the screen stays
		t := time.AfterFunc(f.duration, func() { eng.SetPaused(true) })
		defer t.Stop()
	}
	// Stopping the engine cancels what is in flight at once.
	defer func() { cancel(); <-engDone }()

	r := lipgloss.NewRenderer(term)
	if os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	snaps, unsubscribe := eng.Subscribe()
	defer unsubscribe()
	start := time.Now()
	save := func(s load.Snapshot) (string, error) {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		m := f.manifest(sctx, st)
		m.Start, m.End = start, start.Add(s.Elapsed)
		rep := &report.Report{Manifest: m, Final: s, Verdicts: report.Verdicts(f.objectives, s)}
		base := filepath.Join(*reportDir, "infertop-"+start.Format("20060102-150405"))
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			return "", err
		}
		if err := os.WriteFile(base+".txt", text.Bytes(), 0o644); err != nil {
			return "", fmt.Errorf("write report: %w", err)
		}
		if err := writeReports(rep, base+".json", base+".csv"); err != nil {
			return "", err
		}
		return base + ".{json,csv,txt}", nil
	}
	model, err := ui.New(eng, ui.Options{Renderer: r, Theme: f.theme, Snapshots: snaps, Objectives: f.objectives, Save: save,
		Duration: f.duration, Requests: f.requests})
	if err != nil {
		return usageError{err}
	}
	if _, err := tea.NewProgram(model, tea.WithAltScreen(), tea.WithOutput(term)).Run(); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}
