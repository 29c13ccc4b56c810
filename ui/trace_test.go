package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/telemetry"
)

// traceSnapshot is fixedSnapshot during a replay, 42 s into a trace of
// ten minutes at 1.5×.
func traceSnapshot() load.Snapshot {
	s := fixedSnapshot()
	s.Knobs.Mode, s.Knobs.Rate, s.Knobs.Speed, s.Knobs.PromptTokens = load.OpenLoop, 3, 1.5, 1024
	s.Trace = load.TraceStatus{On: true, Name: "mooncake.jsonl", Format: load.TraceMooncake, Speed: 1.5, Position: 42 * time.Second,
		Span: 10 * time.Minute, Total: 1000, Sent: 70, Prompt: 512, Output: 128}
	return s
}

func TestTraceHeader(t *testing.T) {
	behind := traceSnapshot()
	behind.Trace.Behind, behind.Trace.Pass = 2100*time.Millisecond, 2
	for _, c := range []struct {
		name string
		snap load.Snapshot
		want []string
	}{
		{"replay", traceSnapshot(), []string{"trace, 1.5× speed, at 0:42 of 10:00", "prompt trace's ×2", "output trace's"}},
		{"behind", behind, []string{"trace, 1.5× speed, at 0:42 of 10:00, pass 3 behind 2.10s"}},
	} {
		m := newTestModel(t, nil)
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 140, Height: 30}, SnapshotMsg(c.snap))
		head := strings.Join(strings.SplitN(m.View(), "\n", 3)[:2], "\n")
		for _, want := range c.want {
			if !strings.Contains(head, want) {
				t.Errorf("%s: header %q lacks %q", c.name, head, want)
			}
		}
		if strings.Contains(head, "req/s") {
			t.Errorf("%s: a replay's header shows the open loop's rate: %q", c.name, head)
		}
	}
}

// During a replay the rate keys move the trace's speed by the rate's
// steps, o is refused with a reason, and r resets the figures only.
func TestTraceKeys(t *testing.T) {
	tr := &load.Trace{Name: "t.jsonl", Format: load.TraceJSONL, Span: 10 * time.Second,
		Entries: []load.TraceEntry{{Input: 100, Output: 10}, {At: 5 * time.Second, Input: 300, Output: 30}}}
	e, err := load.New(load.Config{Do: func(context.Context, probe.Request) probe.Result { return probe.Result{} }, Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	m := newTestModel(t, e)
	s := fixedSnapshot()
	s.Knobs, s.Trace = e.Knobs(), load.TraceStatus{On: true, Speed: 1, Span: tr.Span, Prompt: 200, Output: 20}
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 140, Height: 30}, SnapshotMsg(s))
	m = press(m, runes("+"), runes("+"))
	if k := e.Knobs(); k.Speed != 1.56 || k.Mode != load.OpenLoop {
		t.Errorf("+ twice: %+v, want the speed at 1.56", k)
	}
	m = press(m, runes("-"))
	if k := e.Knobs(); k.Speed != 1.25 {
		t.Errorf("then -: speed %v, want 1.25", k.Speed)
	}
	m = press(m, runes("l"))
	if k := e.Knobs(); k.PromptTokens != 400 {
		t.Errorf("prompt ×2: the knob at %d, want 400 (twice the trace's mean)", k.PromptTokens)
	}
	m = press(m, runes("o"))
	if k := e.Knobs(); k.Mode != load.OpenLoop || !strings.Contains(m.View(), "o does not apply to a trace") {
		t.Errorf("o during a replay: mode %v, view lacks the reason", k.Mode)
	}
}

// A sessions load shows its turns in a table of their own.
func TestTurnsTable(t *testing.T) {
	s := fixedSnapshot()
	ms := time.Millisecond
	s.Sessions = load.SessionFigures{On: true, TurnsPerSess: 3, Completed: 7, SessionTime: load.Dist{Count: 7, P50: 2400 * ms}}
	for i, ttft := range []time.Duration{340, 120, 110} {
		s.Sessions.Turns = append(s.Sessions.Turns, load.TurnFigures{Turn: i + 1, Completed: 8, PromptTokens: float64(350 * (i + 1)),
			TTFT: load.Dist{Count: 8, P50: ttft * ms, P99: ttft * 2 * ms}, E2E: load.Dist{Count: 8, P50: 600 * ms, P99: 700 * ms}})
	}
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 48}, SnapshotMsg(s))
	v := m.View()
	for _, want := range []string{"Turns", "7 sessions of 3 turns done, session p50 2.40s", "turn", "1050"} {
		if !strings.Contains(v, want) {
			t.Errorf("the dashboard lacks %q:\n%s", want, v)
		}
	}
	if !strings.Contains(v, "Phases") {
		t.Errorf("the phases' table gave way to the turns':\n%s", v)
	}
	if strings.Contains(v, "cache") {
		t.Errorf("no server said what its cache held, and the table has the column:\n%s", v)
	}
	// The server's cached tokens: each turn's hit rate in a column.
	for i, c := range [][2]int64{{0, 940}, {903, 1934}, {1871, 2908}} {
		s.Sessions.Turns[i].CachedTokens, s.Sessions.Turns[i].CachedOf = c[0], c[1]
	}
	m = press[tea.Msg](m, SnapshotMsg(s))
	v = m.View()
	for _, want := range []string{"cache", "0.0%", "46.7%", "64.3%"} {
		if !strings.Contains(v, want) {
			t.Errorf("the turns' table lacks %q:\n%s", want, v)
		}
	}
}

// The server panel shows the prefix cache's hit rate beside the KV use.
func TestServerPanelPrefixCache(t *testing.T) {
	view := *serverView()
	view.Server.PrefixHitRate, view.Server.HasPrefix = 0.75, true
	m, _ := New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(fixedSnapshot()))
	if v := m.View(); !strings.Contains(v, "KV 78.0% · prefix cache hits 75.0%") {
		t.Errorf("the server panel lacks the prefix cache's hits:\n%s", v)
	}
}
