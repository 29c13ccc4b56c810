package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/infertop/infertop/watch"
)

// TestWatchView: the watch's dashboard draws the groups, their charts
// and the verdict within the terminal's width and height, and a
// terminal too small for it says so.
func TestWatchView(t *testing.T) {
	t.Parallel()
	snaps := make(chan watch.Snapshot, 1)
	var m tea.Model = NewWatch(snaps, nil).WithNotice("served over SSH on 127.0.0.1:2222")
	m, _ = m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	hi := 0.25
	for i := range 5 {
		s := watch.Snapshot{Source: "test fleet", Groups: []watch.Group{
			{Name: "stable", Role: "baseline", Servers: 3, Up: 3, ReqPerSec: float64(10 + i), TTFT: watch.Latency{P99: watch.Bound{Lo: 0.1, Hi: &hi, OK: true}}},
			{Name: "canary", Role: "canary", Servers: 1, Up: 1, ReqPerSec: 5},
		}, Verdict: watch.Verdict{State: watch.Regressed, Line: "canary regressed against stable: ttft_p99<+10%"}}
		m, _ = m.Update(watchMsg(s))
	}
	v := m.View()
	for _, want := range []string{"stable", "canary", "req/s", "TTFT p99≤", "(100ms, 250ms]", "verdict: canary regressed", "served over SSH on 127.0.0.1:2222"} {
		if !strings.Contains(v, want) {
			t.Errorf("the view lacks %q:\n%s", want, v)
		}
	}
	lines := strings.Split(v, "\n")
	if len(lines) > 30 {
		t.Errorf("%d lines in a terminal of 30", len(lines))
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 100 {
			t.Errorf("a line of %d columns in a terminal of 100: %q", w, l)
		}
	}
	m, _ = m.Update(tea.WindowSizeMsg{Width: 15, Height: 4})
	if v := m.View(); !strings.Contains(v, "too small") {
		t.Errorf("a tiny terminal: %q", v)
	}
}

// TestWatchWrapsSentences: in a narrow terminal the probe's line and the
// verdict wrap (their ends, a failure's reason or the call, still read)
// while the tables' rows are cut at the width.
func TestWatchWrapsSentences(t *testing.T) {
	t.Parallel()
	snaps := make(chan watch.Snapshot, 1)
	var m tea.Model = NewWatch(snaps, nil)
	m, _ = m.Update(tea.WindowSizeMsg{Width: 60, Height: 30})
	s := watch.Snapshot{Source: "test fleet", Groups: []watch.Group{{Name: "stable", Servers: 1, Up: 1}},
		Probe:   &watch.Probe{URL: "http://127.0.0.1:8000/v1", Rate: 1, Sent: 3, Failed: 3, LastError: "connection refused by the Service"},
		Verdict: watch.Verdict{State: watch.Regressed, Line: "canary regressed against stable: ttft_p99<+10% breached by a wide margin"}}
	m, _ = m.Update(watchMsg(s))
	v := ansi.Strip(m.View())
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{"connection refused by the Service", "breached by a wide margin"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the view lacks %q:\n%s", want, v)
		}
	}
	for _, l := range strings.Split(v, "\n") {
		if w := ansi.StringWidth(l); w > 60 {
			t.Errorf("a line of %d columns in a terminal of 60: %q", w, l)
		}
	}
}
