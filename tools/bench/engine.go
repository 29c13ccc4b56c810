package main

import (
	"context"
	"fmt"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/ui"
)

// engineRun runs infertop's engine against url for d and returns its
// snapshot at d (its own Elapsed says when it was taken, shutdown not
// included). With watch, a 160x48 dashboard renders every snapshot
// meanwhile, as the real one does. out spreads the output lengths.
func engineRun(cfg probe.Config, k load.Knobs, out load.Length, d time.Duration, watch bool) (load.Snapshot, error) {
	client, err := probe.New(cfg)
	if err != nil {
		return load.Snapshot{}, fmt.Errorf("client: %w", err)
	}
	defer client.Close()
	eng, err := load.New(load.Config{Do: client.Do, Knobs: k, OutputLength: out})
	if err != nil {
		return load.Snapshot{}, fmt.Errorf("engine: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	rendered := make(chan struct{})
	if watch {
		snaps, unsubscribe := eng.Subscribe()
		defer unsubscribe()
		m, err := ui.New(eng, ui.Options{Renderer: plain()})
		if err != nil {
			cancel()
			return load.Snapshot{}, err
		}
		next, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		go func() { // ends when the engine closes the subscription
			defer close(rendered)
			for s := range snaps {
				next, _ = next.Update(ui.SnapshotMsg(s))
				next.View()
			}
		}()
	} else {
		close(rendered)
	}
	time.Sleep(d)
	s := eng.Latest()
	cancel()
	<-done
	<-rendered
	return s, nil
}

// colours renders in 256 colours on a dark background, into nothing: what
// the dashboard draws in tmux.
func colours() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI256)
	r.SetHasDarkBackground(true)
	return r
}

// plain renders without colour, into nothing.
func plain() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}
