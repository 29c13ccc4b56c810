package ui

import (
	"math"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

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
