package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	xterm "github.com/charmbracelet/x/term"
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

// terminalGuard restores the terminal and prints a panic from any goroutine
// of the dashboard, then ends the process with status 2 (as Go's own panic).
type terminalGuard struct {
	mu   sync.Mutex
	prog *tea.Program
	ran  chan struct{} // closed once Run has returned or unwound
}

// guardTerminal installs the crash handler for the dashboard on term.
func guardTerminal(term *os.File, stderr io.Writer) *terminalGuard {
	g := &terminalGuard{ran: make(chan struct{})}
	state, _ := xterm.GetState(os.Stdin.Fd())
	crash.Handle(func(v any, stack []byte) {
		g.mu.Lock()
		p := g.prog
		g.mu.Unlock()
		if p != nil {
			p.Kill() // bubbletea restores the terminal as Run returns
			select {
			case <-g.ran:
			case <-time.After(2 * time.Second):
			}
		}
		// Again by hand, for a panic in the event loop itself, which
		// unwinds Run without its cleanup: bracketed paste and mouse off,
		// the cursor shown, the main screen back, the tty's modes restored.
		term.WriteString("\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?25h\x1b[?1049l")
		if state != nil {
			xterm.Restore(os.Stdin.Fd(), state)
		}
		fmt.Fprintf(stderr, "infertop: panic: %v\n\n%s\nThe terminal was restored. This is a bug in infertop: please report it with the lines above.\n", v, stack)
		os.Exit(2)
	})
	return g
}

// run runs the program; a panic in it goes to the handler.
func (g *terminalGuard) run(p *tea.Program) (err error) {
	g.mu.Lock()
	g.prog = p
	g.mu.Unlock()
	func() {
		defer crash.Recover()
		defer close(g.ran) // before Recover, which waits for it
		_, err = p.Run()
	}()
	if crash.Crashing() { // Run returned because the handler killed it
		select {}
	}
	return err
}
