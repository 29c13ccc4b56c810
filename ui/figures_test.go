package ui

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/telemetry"
)

// TestHeaderPromptWithPrefix: --prompt-tokens 100 --prefix-tokens 1000
// sends about 1,130 tokens a request; the header says what goes out, not
// the knob (on main: "prompt 100 tok").
func TestHeaderPromptWithPrefix(t *testing.T) {
	s := fixedSnapshot()
	s.Knobs.PromptTokens, s.PrefixTokens = 100, 1000
	s.Phases[2].InTokens = s.Phases[2].Completed * 1130
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 30}, SnapshotMsg(s))
	if h := strings.Join(strings.SplitN(m.View(), "\n", 3)[:2], "\n"); !strings.Contains(h, "prompt ≈1130 tok (1000 shared)") {
		t.Fatalf("header:\n%s", h)
	}
	s.Phases[2].Completed = 0 // nothing back yet: the prefix and the marker
	m = press[tea.Msg](m, SnapshotMsg(s))
	if h := strings.Join(strings.SplitN(m.View(), "\n", 3)[:2], "\n"); !strings.Contains(h, "prompt 1001 tok (1000 shared)") {
		t.Fatalf("header:\n%s", h)
	}
}

// TestServerQuantilesAsBuckets: vLLM's TTFT buckets put the server's p99
// between 2.5 s and 5 s while the client's largest TTFT was 2.83 s; the
// panel shows the bucket's bound, never the interpolated 4.97 s (on main:
// "server TTFT p50 ≈1.20s p99 ≈4.97s").
func TestServerQuantilesAsBuckets(t *testing.T) {
	view := *serverView()
	sv := *view.Server
	sv.TTFTP50, sv.TTFTP99 = 1.2, 4.97
	sv.TTFTBuckets = [2]telemetry.Bucket{{Lo: 1, Hi: 2.5}, {Lo: 2.5, Hi: 5}}
	sv.ITLP50, sv.ITLP99 = 0.0151, 0.2
	sv.ITLBuckets = [2]telemetry.Bucket{{Lo: 0.015, Hi: 0.016}, {Lo: 0.16, Hi: math.Inf(1)}}
	view.Server = &sv
	m, _ := New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(fixedSnapshot()))
	v := m.View()
	for _, want := range []string{"server TTFT p50 ≤ 2.50s p99 ≤ 5.00s", "ITL p50 ≈15.1ms p99 > 160ms"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "4.97") {
		t.Errorf("the interpolated p99 is shown:\n%s", v)
	}
}

// TestPhaseTableAllFailed: a phase whose every request failed shows its
// error rate apart from its tokens per second (on main "0100.0%").
func TestPhaseTableAllFailed(t *testing.T) {
	s := fixedSnapshot()
	s.Phases[2].Completed, s.Phases[2].Failed, s.Phases[2].OutTokPerSec, s.Phases[2].DeliveredPerSec = 0, 40, 0, 0
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(s))
	v := m.View()
	if strings.Contains(v, "0100.0%") || !strings.Contains(v, "  100%   0:35") {
		t.Fatalf("the phase table:\n%s", v)
	}
}

// TestFindPromptFits: at 80x24 the f key's input shows its whole example
// and its keys (on main the example was cut to "t", the keys to "esc c…").
func TestFindPromptFits(t *testing.T) {
	m, _ := New(newEngine(t), Options{Renderer: asciiRenderer(), Finder: &fakeFinder{}})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(fixedSnapshot()), runes("f"))
	lines := strings.Split(m.View(), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"ttft_p99<=500ms, error_rate<1%", "enter", "esc"} {
		if !strings.Contains(last, want) {
			t.Errorf("the footer lacks %q: %q", want, last)
		}
	}
	if strings.Contains(last, "…") {
		t.Errorf("the footer is cut: %q", last)
	}
}

// TestFooterKeysThatAct: the open loop's footer offers the rate's keys,
// not the concurrency's (which move nothing there), and a watcher's none
// of the keys on the load, which are locked to it (on main both footers
// began "↑/k concurrency +1 · ↓/j concurrency −1").
func TestFooterKeysThatAct(t *testing.T) {
	footer := func(m Model) string {
		lines := strings.Split(m.View(), "\n")
		return lines[len(lines)-1]
	}
	m := newTestModel(t, newEngine(t))
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 40}, SnapshotMsg(openSnapshot()))
	if f := footer(m); strings.Contains(f, "↑/k") || strings.Contains(f, "↓/j") || !strings.Contains(f, "+ rate ×1.25") {
		t.Errorf("open loop: %q", f)
	}
	m = press[tea.Msg](m, SnapshotMsg(fixedSnapshot()))
	if f := footer(m); !strings.Contains(f, "↑/k concurrency +1") || strings.Contains(f, "rate") {
		t.Errorf("closed loop: %q", f)
	}
	w, _ := New(nil, Options{Renderer: asciiRenderer(), ReadOnly: true})
	w = press[tea.Msg](w, tea.WindowSizeMsg{Width: 120, Height: 40}, SnapshotMsg(fixedSnapshot()))
	if f := footer(w); strings.Contains(f, "concurrency") || strings.Contains(f, "pause") || !strings.Contains(f, "? help") {
		t.Errorf("watcher: %q", f)
	}
}

// TestSaveFailureInALine: a save that failed on several files says so in
// one line, without the literal "\n" the sanitiser made of the newlines
// that join the files' errors (on main: "save failed: write a.json: ...\nwrite
// a.csv: ...").
func TestSaveFailureInALine(t *testing.T) {
	save := func(load.Snapshot) (string, error) {
		return "", errors.Join(errors.New("write /r/a.json: permission denied"), errors.New("write /r/a.csv: permission denied"))
	}
	m, _ := New(newEngine(t), Options{Renderer: asciiRenderer(), Save: save})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 40}, SnapshotMsg(fixedSnapshot()))
	next, cmd := m.Update(runes("s"))
	m = press(next.(Model), cmd())
	if v := m.View(); !strings.Contains(v, "save failed: write /r/a.json: permission denied; write /r/a.csv: permission denied") || strings.Contains(v, `\n`) {
		t.Fatalf("the flash:\n%s", v)
	}
}

// TestLightThemePaintsItsBackground: the light theme lays its white under
// every cell, after every style's reset too, so its dark text is readable
// on a dark terminal; the dark theme keeps the terminal's (on main the
// light theme painted no background at all).
func TestLightThemePaintsItsBackground(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	bg := "\x1b[48;2;255;255;255m"
	for _, theme := range []string{"light", "dark"} {
		m, err := New(nil, Options{Renderer: r, Theme: theme})
		if err != nil {
			t.Fatal(err)
		}
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 100, Height: 30}, SnapshotMsg(fixedSnapshot()))
		v := m.View()
		if theme == "dark" {
			if strings.Contains(v, bg) {
				t.Error("the dark theme painted a background")
			}
			continue
		}
		for i, l := range strings.Split(v, "\n") {
			if !strings.HasPrefix(l, bg) {
				t.Fatalf("line %d starts without the background: %q", i, l)
			}
			if n := strings.Count(l, "\x1b[0m"); strings.Count(l, "\x1b[0m"+bg) != n-1 {
				t.Fatalf("line %d: a reset not followed by the background: %q", i, l)
			}
		}
	}
}

// TestWatcherHelpSaysLocked: a watcher's help screen says which keys are
// a controller's (on main it listed the knobs as if they were its own).
func TestWatcherHelpSaysLocked(t *testing.T) {
	w, _ := New(nil, Options{Renderer: asciiRenderer(), ReadOnly: true})
	w = press[tea.Msg](w, tea.WindowSizeMsg{Width: 120, Height: 40}, SnapshotMsg(fixedSnapshot()), runes("?"))
	if v := w.View(); !strings.Contains(v, "This session watches: the keys on the load") {
		t.Fatalf("the watcher's help:\n%s", v)
	}
	m := newTestModel(t, newEngine(t))
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 40}, SnapshotMsg(fixedSnapshot()), runes("?"))
	if strings.Contains(m.View(), "This session watches") {
		t.Fatal("a controller's help says it watches")
	}
}
