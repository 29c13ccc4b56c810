package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/telemetry"
)

// splitSnapshot is fixedSnapshot with the window's TTFT split, as
// --server-timings gives it.
func splitSnapshot() load.Snapshot {
	s := fixedSnapshot()
	us := time.Microsecond
	d := func(p50, p99 time.Duration) load.Dist { return load.Dist{Count: 388, P50: p50, P99: p99} }
	s.TTFTSplit[load.SplitConnection] = d(40*us, 2100*us)
	s.TTFTSplit[load.SplitQueue] = d(180*time.Millisecond, 1210*time.Millisecond)
	s.TTFTSplit[load.SplitPrefill] = d(211*time.Millisecond, 402*time.Millisecond)
	s.TTFTSplit[load.SplitRest] = d(900*us, 3100*us)
	s.TTFTSplit[load.SplitGap] = d(950*us, 4800*us)
	return s
}

// TestWhereTTFTWent: the window's split is a line of the server panel,
// each part's p50 and p99, wrapped item by item within the width; there
// is none when no request in the window was timed by its server, and
// then no panel without server metrics.
func TestWhereTTFTWent(t *testing.T) {
	for _, w := range []int{60, 80, 120, 160, 240} {
		m := press[tea.Msg](newTestModel(t, nil), SnapshotMsg(splitSnapshot()))
		panel := m.serverPanel(w)
		for _, want := range []string{"where TTFT went p50 / p99 of 388 timed", "connection 40µs / 2.10ms", "queue 180ms / 1.21s", "prefill 211ms / 402ms", "rest 900µs / 3.10ms", "gap 950µs / 4.80ms"} {
			if !strings.Contains(strings.ReplaceAll(panel, "\n", " "), want) {
				t.Errorf("%d cells: no %q in\n%s", w, want, panel)
			}
		}
		for _, l := range strings.Split(panel, "\n") {
			if lipgloss.Width(l) > w {
				t.Errorf("%d cells: a line of %d: %q", w, lipgloss.Width(l), l)
			}
		}
	}
	m := press[tea.Msg](newTestModel(t, nil), SnapshotMsg(fixedSnapshot()))
	if p := m.serverPanel(120); p != "" {
		t.Errorf("no split and no server metrics, a panel:\n%s", p)
	}
}

// TestServerPerfLine: the server's /perf_metrics (TensorRT-LLM) over the
// window is a line of the server panel, labelled the server's own and
// unjoined, within the width; the panel shows it with no other server
// figure.
func TestServerPerfLine(t *testing.T) {
	view := telemetry.View{Perf: &telemetry.PerfView{Entries: 212,
		PerfCounts: telemetry.PerfCounts{ReusedBlocks: 3, MissedBlocks: 1, SpecAccepted: 1, SpecDrafted: 2}}}
	view.Perf.Parts[telemetry.PerfQueue] = telemetry.PerfSpan{N: 212, P50: 6 * time.Millisecond, P99: 41 * time.Millisecond}
	view.Perf.Parts[telemetry.PerfTTFT] = telemetry.PerfSpan{N: 212, P50: 48 * time.Millisecond, P99: 120 * time.Millisecond}
	for _, w := range []int{60, 120, 240} {
		m, _ := New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
		m = press[tea.Msg](m, SnapshotMsg(fixedSnapshot()))
		panel := strings.ReplaceAll(m.serverPanel(w), "\n", " ")
		for _, want := range []string{"server's own (/perf_metrics, unjoined) p50 / p99 of 212", "queue 6.00ms / 41.0ms", "TTFT 48.0ms / 120ms", "KV blocks reused 75", "drafts accepted 50"} {
			if !strings.Contains(panel, want) {
				t.Errorf("%d cells: no %q in\n%s", w, want, panel)
			}
		}
		if strings.Contains(panel, "prefill") || strings.Contains(panel, "where TTFT went") {
			t.Errorf("%d cells: a span the server gave none of, or a split of none joined:\n%s", w, panel)
		}
		for _, l := range strings.Split(m.serverPanel(w), "\n") {
			if lipgloss.Width(l) > w {
				t.Errorf("%d cells: a line of %d: %q", w, lipgloss.Width(l), l)
			}
		}
	}
}

// TestServerPerfJoinedLine: where some entries joined infertop's
// requests, the panel says where their TTFT went, and drops "unjoined".
func TestServerPerfJoinedLine(t *testing.T) {
	view := telemetry.View{Perf: &telemetry.PerfView{Entries: 30, Joined: 28}}
	for i := range load.NumSplitParts {
		view.Perf.Split[i] = telemetry.PerfSpan{N: 28, P50: time.Duration(i+1) * time.Millisecond, P99: 9 * time.Millisecond}
	}
	m, _ := New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
	m = press[tea.Msg](m, SnapshotMsg(fixedSnapshot()))
	panel := strings.ReplaceAll(m.serverPanel(160), "\n", " ")
	for _, want := range []string{"where TTFT went p50 / p99 of 28 joined by the server's ids", "connection 1.00ms / 9.00ms", "gap 5.00ms / 9.00ms", "server's own (/perf_metrics) p50 / p99 of 30"} {
		if !strings.Contains(panel, want) {
			t.Errorf("no %q in\n%s", want, panel)
		}
	}
	if strings.Contains(panel, "unjoined") {
		t.Errorf("joined, yet said unjoined:\n%s", panel)
	}
}
