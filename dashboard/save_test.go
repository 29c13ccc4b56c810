package dashboard

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/ui"
)

// TestSaveWhileServerHangs: the s key waits on the server's description
// (its /v1/models hangs) in a command, so the dashboard still answers a
// knob key at once (before the save is over: the key does not wait on
// it), and the save ends when its time is up.
func TestSaveWhileServerHangs(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	backend := simtest.Start(t, p)
	target, _ := url.Parse(backend.Origin)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // streams cut at the end of the test
	hang := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/models") {
			select {
			case <-req.Context().Done():
			case <-hang:
			}
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	defer front.Close()
	defer close(hang)
	r, err := runner.Start(context.Background(), runner.Config{URL: front.URL + "/v1", API: probe.OpenAIChat,
		Probe: probe.Config{Model: p.Model}, Telemetry: runner.Telemetry{ServerMetrics: runner.ServerMetricsOff},
		Load: load.Config{Knobs: load.Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	// The save gives up on the hung server in 2 s.
	m, err := ui.New(r.Engine(), ViewOptions(session.NewSingle(r), Options{Theme: "dark", ReportDir: t.TempDir(), SaveTimeout: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	var model tea.Model = m
	model, _ = model.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	model, _ = model.Update(ui.SnapshotMsg(r.Engine().Latest()))
	model, save := model.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'s'}})
	if save == nil {
		t.Fatal("s gave no command")
	}
	saved := make(chan tea.Msg, 1)
	go func() { saved <- save() }()
	model, _ = model.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'k'}})
	select {
	case <-saved:
		t.Fatal("the key was answered only once the save was over")
	default:
	}
	if c := r.Engine().Knobs().Concurrency; c != 3 {
		t.Fatalf("concurrency %d after k, want 3", c)
	}
	select {
	case msg := <-saved:
		model, _ = model.Update(msg)
		if v := model.View(); !strings.Contains(v, "saved ") {
			t.Fatalf("after the save:\n%s", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the save never ended")
	}
}
