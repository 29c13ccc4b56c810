package ui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

func asciiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}

// fixedSnapshot is a deterministic snapshot: 95 seconds of a run whose load
// was walked up from 8 to 48 requests in flight at 60 s.
func fixedSnapshot() load.Snapshot {
	ms := time.Millisecond
	s := load.Snapshot{
		Seq: 380, Elapsed: 95*time.Second + 250*ms,
		Target:   load.Target{URL: "http://127.0.0.1:8000/v1", Model: "sim-llama-8b", API: "openai-chat", Sim: true},
		Knobs:    load.Knobs{Concurrency: 48, PromptTokens: 512, OutputTokens: 128},
		InFlight: 48, Window: 30 * time.Second, Covered: 29*time.Second + 250*ms,
		ReqPerSec: 13.4, OutTokPerSec: 1712, InTokPerSec: 6980, ErrPerSec: 0.2,
		Completed: 392, Failed: 6, ErrorRate: 6.0 / 398,
		TotalCompleted: 1204, TotalFailed: 9, TotalOutTokens: 154112,
		LastError: "5xx: HTTP 500: simulated internal error", LastErrorAt: 93 * time.Second,
		Errors: []load.ErrorCount{
			{Class: probe.HTTP5xx, Status: 500, Message: "HTTP 500: simulated internal error", Count: 6},
			{Class: probe.HTTP429, Status: 429, Message: "HTTP 429: simulated rate limit", Count: 3},
		},
		OldestInFlight: 3200 * ms,
		Streams:        load.Streams{Waiting: 6, Generating: 42, OldestWaiting: 410 * ms, OldestGenerating: 3200 * ms},
	}
	s.ByClass[probe.HTTP5xx], s.ByClass[probe.HTTP429] = 4, 2
	s.TotalByClass[probe.HTTP5xx], s.TotalByClass[probe.HTTP429] = 6, 3
	s.Latency[load.TTFT] = load.Dist{Count: 392, Mean: 610 * ms, P50: 412 * ms, P90: 1480 * ms, P95: 1610 * ms, P99: 1702 * ms, P999: 1745 * ms, Max: 1751 * ms}
	s.Latency[load.TPOT] = load.Dist{Count: 392, Mean: 19 * ms, P50: 18700 * time.Microsecond, P90: 19400 * time.Microsecond, P95: 19800 * time.Microsecond, P99: 20100 * time.Microsecond, Max: 21 * ms}
	s.Latency[load.ITL] = load.Dist{Count: 49784, Mean: 19 * ms, P50: 14900 * time.Microsecond, P90: 16300 * time.Microsecond, P95: 17 * ms, P99: 131 * ms, Max: 301 * ms}
	s.Latency[load.E2E] = load.Dist{Count: 392, Mean: 3 * time.Second, P50: 2810 * ms, P90: 3700 * ms, P95: 3880 * ms, P99: 3950 * ms, P999: 4002 * ms, Max: 4010 * ms}
	s.Latency[load.TTFB] = load.Dist{Count: 392, Mean: ms, P50: 900 * time.Microsecond, P90: 1200 * time.Microsecond, P95: 1300 * time.Microsecond, P99: 2 * ms, Max: 3 * ms}
	for sec := int64(0); sec < 95; sec++ {
		p := load.Point{Sec: sec, InFlight: 8, Completed: 6, OutTokens: 768, InTokens: 3100,
			TTFTP50: 160 * ms, TTFTP99: 175 * ms, E2EP50: 1280 * ms, E2EP95: 1300 * ms, E2EP99: 1310 * ms}
		if sec >= 60 {
			f := time.Duration(sec - 59)
			p.InFlight, p.Completed, p.OutTokens = 48, 13, 1700
			p.TTFTP50, p.TTFTP99 = 400*ms+f*ms, 1500*ms+f*5*ms
			p.E2EP50, p.E2EP95, p.E2EP99 = 2800*ms, 3800*ms+f*2*ms, 3900*ms+f*2*ms
		}
		if sec%31 == 0 {
			p.Failed = 2
		}
		s.Series = append(s.Series, p)
	}
	s.Phases = []load.Phase{
		{ID: 1, Knobs: load.Knobs{Concurrency: 8, PromptTokens: 512, OutputTokens: 128}, Start: 0, End: 40 * time.Second,
			Completed: 240, OutTokens: 30720, OutTokPerSec: 760, DeliveredPerSec: 760},
		{ID: 2, Knobs: load.Knobs{Concurrency: 32, PromptTokens: 512, OutputTokens: 128}, Start: 40 * time.Second, End: 60 * time.Second,
			Completed: 300, OutTokens: 38400, OutTokPerSec: 1690, DeliveredPerSec: 1690, Failed: 3},
		{ID: 3, Knobs: load.Knobs{Concurrency: 48, PromptTokens: 512, OutputTokens: 128}, Start: 60 * time.Second, Current: true,
			Completed: 420, OutTokens: 53760, OutTokPerSec: 1712, DeliveredPerSec: 1712, Failed: 6},
	}
	lat := func(ttft50, ttft99, e2e99 time.Duration) [load.NumMetrics]load.Dist {
		var l [load.NumMetrics]load.Dist
		l[load.TTFT] = load.Dist{Count: 1, P50: ttft50, P99: ttft99}
		l[load.E2E] = load.Dist{Count: 1, P99: e2e99}
		return l
	}
	s.Phases[0].Latency = lat(160*ms, 176*ms, 1310*ms)
	s.Phases[1].Latency = lat(230*ms, 390*ms, 2110*ms)
	s.Phases[2].Latency = lat(412*ms, 1702*ms, 3950*ms)
	return s
}

func newTestModel(t testing.TB, ctl load.Controller) Model {
	t.Helper()
	m, err := New(ctl, Options{Renderer: asciiRenderer()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newEngine is an engine that is never run: its knob methods work without
// any load, which is all the keys need.
func newEngine(t testing.TB) *load.Engine {
	t.Helper()
	e, err := load.New(load.Config{
		Do:    func(context.Context, probe.Request) probe.Result { return probe.Result{} },
		Knobs: load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// openSnapshot is fixedSnapshot in the open loop, with a backlog and the
// intended-time figures.
func openSnapshot() load.Snapshot {
	s := fixedSnapshot()
	ms := time.Millisecond
	s.Knobs.Mode, s.Knobs.Rate, s.Backlog = load.OpenLoop, 20, 7
	s.Latency[load.Queue] = load.Dist{Count: 392, Mean: 300 * ms, P50: 120 * ms, P90: 800 * ms, P95: 1100 * ms, P99: 1500 * ms, Max: 1900 * ms}
	s.Latency[load.TTFTIntended] = load.Dist{Count: 392, Mean: 900 * ms, P50: 530 * ms, P90: 2200 * ms, P95: 2700 * ms, P99: 3200 * ms, Max: 3600 * ms}
	s.Latency[load.E2EIntended] = load.Dist{Count: 392, Mean: 3300 * ms, P50: 2930 * ms, P90: 4500 * ms, P95: 4980 * ms, P99: 5450 * ms, Max: 5900 * ms}
	s.Phases[2].Knobs.Mode, s.Phases[2].Knobs.Rate = load.OpenLoop, 20
	for i := range s.Series { // each second's starred figures: the queue on top
		p := &s.Series[i]
		q := time.Duration(p.Sec) * 10 * ms
		p.TTFTIntendedP50, p.TTFTIntendedP99 = p.TTFTP50+q, p.TTFTP99+2*q
		p.E2EIntendedP50, p.E2EIntendedP95, p.E2EIntendedP99 = p.E2EP50+q, p.E2EP95+2*q, p.E2EP99+2*q
	}
	return s
}

// longErrorMessage is what a vLLM server answers a prompt past the
// context: longer than the errors panel has room for at 80 columns.
const longErrorMessage = `HTTP 400: {"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8872 in the messages, 128 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`

// longErrorSnapshot is fixedSnapshot whose most frequent error is long, with
// a few more distinct ones behind it.
func longErrorSnapshot() load.Snapshot {
	s := fixedSnapshot()
	s.TotalFailed = 40
	s.Errors = []load.ErrorCount{
		{Class: probe.HTTP4xx, Status: 400, Message: longErrorMessage, Count: 31},
		{Class: probe.HTTP5xx, Status: 500, Message: "HTTP 500: simulated internal error", Count: 6},
		{Class: probe.HTTP429, Status: 429, Message: "HTTP 429: simulated rate limit", Count: 2},
		{Class: probe.Connection, Message: "read tcp 127.0.0.1:51234->127.0.0.1:8000: connection reset by peer", Count: 1},
	}
	return s
}

// noErrorSnapshot is fixedSnapshot without a failure.
func noErrorSnapshot() load.Snapshot {
	s := fixedSnapshot()
	s.Failed, s.ErrorRate, s.TotalFailed, s.LastError, s.Errors = 0, 0, 0, "", nil
	s.ByClass, s.TotalByClass = [probe.NumClasses]int64{}, [probe.NumClasses]int64{}
	return s
}

// hungSnapshot is fixedSnapshot with a request in flight for far longer
// than the window's p99 E2E (3.95 s) and workers backing off.
func hungSnapshot() load.Snapshot {
	s := fixedSnapshot()
	s.OldestInFlight, s.BackingOff, s.InFlight = 42*time.Second+300*time.Millisecond, 3, 45
	return s
}

// fastSnapshot is openSnapshot at rates a big deployment reaches: every
// rate past 1000/s, and a phase with millions of requests.
func fastSnapshot() load.Snapshot {
	s := openSnapshot()
	s.Knobs.Rate, s.ReqPerSec, s.OutTokPerSec, s.InTokPerSec = 12500, 12480, 1.25e6, 5.1e6
	s.Phases[0].Knobs.Mode, s.Phases[0].Knobs.Rate = load.OpenLoop, 1234.5
	s.Phases[1].Knobs.Mode, s.Phases[1].Knobs.Rate = load.OpenLoop, 999.7
	s.Phases[2].Knobs.Rate = 12500
	s.Phases[0].DeliveredPerSec, s.Phases[1].DeliveredPerSec, s.Phases[2].DeliveredPerSec = 158000, 127900, 1.25e6
	s.Phases[2].Completed = 12345678
	return s
}

func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		size [2]int
		snap load.Snapshot
		keys string // pressed after the snapshot
		// server, if set, is the telemetry the dashboard's figures join.
		server *telemetry.View
	}{
		{"80x24", [2]int{80, 24}, fixedSnapshot(), "", nil},
		{"120x40", [2]int{120, 40}, fixedSnapshot(), "", nil},
		{"160x48", [2]int{160, 48}, fixedSnapshot(), "", nil},
		{"240x70", [2]int{240, 70}, fixedSnapshot(), "", nil},
		{"open-80x24", [2]int{80, 24}, openSnapshot(), "", nil},
		{"help-120x30", [2]int{120, 30}, fixedSnapshot(), "?", nil}, // the help screen, from the key table
		{"help-80x24", [2]int{80, 24}, fixedSnapshot(), "?", nil},
		{"long-error-80x24", [2]int{80, 24}, longErrorSnapshot(), "", nil},    // the top error wrapped, cut, pointing at e
		{"errors-80x24", [2]int{80, 24}, longErrorSnapshot(), "e", nil},       // every error, wrapped in full
		{"errors-none-80x24", [2]int{80, 24}, noErrorSnapshot(), "e", nil},    // the screen with nothing to list
		{"hung-80x24", [2]int{80, 24}, hungSnapshot(), "", nil},               // oldest in flight flagged, workers backing off
		{"fast-80x24", [2]int{80, 24}, fastSnapshot(), "", nil},               // rates past 1000/s in every column
		{"server-120x40", [2]int{120, 40}, fixedSnapshot(), "", serverView()}, // the server's lines wrapped, item by item
		{"server-80x24", [2]int{80, 24}, fixedSnapshot(), "", serverView()},
		{"split-120x40", [2]int{120, 40}, splitSnapshot(), "", serverView()}, // where TTFT went, under the server's line
		{"split-only-160x48", [2]int{160, 48}, splitSnapshot(), "", nil},     // its line alone: no server metrics read
	} {
		size := c.size
		t.Run(c.name, func(t *testing.T) {
			m := newTestModel(t, nil)
			if c.server != nil {
				var err error
				m, err = New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, c.server) }})
				if err != nil {
					t.Fatal(err)
				}
			}
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
			tm.Send(SnapshotMsg(c.snap))
			if c.keys != "" {
				tm.Send(runes(c.keys))
			}
			tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
			fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
			view := fm.View()
			golden.RequireEqual(t, []byte(view))
			lines := strings.Split(view, "\n")
			if len(lines) != size[1] {
				t.Errorf("%d lines, want %d", len(lines), size[1])
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w != size[0] {
					t.Errorf("line %d is %d cells wide, want %d: %q", i, w, size[0], l)
				}
			}
		})
	}
}

func press[M tea.Msg](m Model, msgs ...M) Model {
	for _, k := range msgs {
		next, _ := m.Update(k)
		m = next.(Model)
	}
	return m
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

func TestKeysTurnKnobs(t *testing.T) {
	e := newEngine(t)
	m := newTestModel(t, e)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(load.Snapshot{Knobs: e.Knobs(), Window: 30 * time.Second}))
	tests := []struct {
		keys []tea.KeyMsg
		want load.Knobs
	}{
		{[]tea.KeyMsg{{Type: tea.KeyUp}, runes("k")}, load.Knobs{Concurrency: 10, PromptTokens: 256, OutputTokens: 128}},
		{[]tea.KeyMsg{{Type: tea.KeyDown}, runes("j")}, load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128}},
		{[]tea.KeyMsg{{Type: tea.KeyPgUp}, runes("K")}, load.Knobs{Concurrency: 32, PromptTokens: 256, OutputTokens: 128}},
		{[]tea.KeyMsg{{Type: tea.KeyPgDown}}, load.Knobs{Concurrency: 16, PromptTokens: 256, OutputTokens: 128}},
		{[]tea.KeyMsg{runes("J"), runes("J"), runes("J"), runes("J"), runes("J")}, load.Knobs{Concurrency: 1, PromptTokens: 256, OutputTokens: 128}},
		{[]tea.KeyMsg{{Type: tea.KeyRight}, runes("l")}, load.Knobs{Concurrency: 1, PromptTokens: 1024, OutputTokens: 128}},
		{[]tea.KeyMsg{{Type: tea.KeyLeft}}, load.Knobs{Concurrency: 1, PromptTokens: 512, OutputTokens: 128}},
		{[]tea.KeyMsg{runes("]")}, load.Knobs{Concurrency: 1, PromptTokens: 512, OutputTokens: 256}},
		{[]tea.KeyMsg{runes("["), runes("[")}, load.Knobs{Concurrency: 1, PromptTokens: 512, OutputTokens: 64}},
		{[]tea.KeyMsg{{Type: tea.KeySpace}}, load.Knobs{Concurrency: 1, PromptTokens: 512, OutputTokens: 64, Paused: true}},
		{[]tea.KeyMsg{{Type: tea.KeySpace}}, load.Knobs{Concurrency: 1, PromptTokens: 512, OutputTokens: 64}},
	}
	for _, tt := range tests {
		m = press(m, tt.keys...)
		if got := e.Knobs(); got != tt.want {
			t.Fatalf("after %v: knobs %+v, want %+v", tt.keys, got, tt.want)
		}
	}
	// Keys typed together arrive as one message; each counts.
	m = press(m, runes("KK"))
	if got := e.Knobs().Concurrency; got != 4 {
		t.Fatalf("concurrency %d after KK from 1", got)
	}
	m = press(m, runes("JJ"))
	// Prompt length stops at its limits.
	for range 20 {
		m = press(m, runes("l"))
	}
	if got := e.Knobs().PromptTokens; got != load.MaxPromptTokens {
		t.Fatalf("prompt %d after doubling past the limit", got)
	}
	if !strings.Contains(m.View(), "prompt 32768 tok") {
		t.Fatalf("header does not show the new prompt length:\n%s", m.View())
	}

	// Window cycles 30s → 1m → 5m → 10s.
	for _, want := range []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Second} {
		m = press(m, runes("w"))
		if got := e.Window(); got != want {
			t.Fatalf("window %v, want %v", got, want)
		}
	}
	// Theme and chart cycle; help opens and closes.
	m = press(m, runes("t"))
	if m.ThemeName() != "light" {
		t.Fatalf("theme %q after t", m.ThemeName())
	}
	m = press(m, runes("c"))
	if !strings.Contains(m.View(), "TTFT over time") {
		t.Fatal("c did not switch the chart to TTFT")
	}
	m = press(m, runes("?"))
	if !strings.Contains(m.View(), "concurrency ×2") {
		t.Fatal("? did not open the help")
	}
	m = press(m, runes("?"))
	if strings.Contains(m.View(), "Press ? or Esc") {
		t.Fatal("? did not close the help")
	}
	// The open loop: o opens it (at 1 req/s when nothing was measured), +
	// and - move the rate, o closes it again.
	m = press(m, runes("+"))
	if !strings.Contains(m.View(), "press o to open it") || e.Knobs().Mode != load.ClosedLoop {
		t.Fatal("+ in the closed loop")
	}
	m = press(m, runes("o"))
	if k := e.Knobs(); k.Mode != load.OpenLoop || k.Rate != 1 {
		t.Fatalf("after o: %+v", k)
	}
	m = press(m, runes("+"), runes("+"))
	if k := e.Knobs(); k.Rate != 1.56 {
		t.Fatalf("rate %v after ++", k.Rate)
	}
	m = press(m, runes("-"))
	if k := e.Knobs(); k.Rate != 1.25 || !strings.Contains(m.View(), "open loop 1.25 req/s") {
		t.Fatalf("rate %v after -\n%s", k.Rate, m.View())
	}
	m = press(m, runes("o"))
	if k := e.Knobs(); k.Mode != load.ClosedLoop {
		t.Fatalf("after the second o: %+v", k)
	}
	if _, cmd := m.Update(runes("q")); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("q does not quit")
	}
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyCtrlC}); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("ctrl+c does not quit")
	}
}

func TestTinyTerminal(t *testing.T) {
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 50, Height: 10}, SnapshotMsg(fixedSnapshot()))
	if v := m.View(); !strings.Contains(v, "terminal too small: 50x10") {
		t.Fatalf("view at 50x10:\n%s", v)
	}
	m = press(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	if v := m.View(); !strings.Contains(v, "Latency") {
		t.Fatalf("view after growing:\n%s", v)
	}
}

func TestEngineStopShows(t *testing.T) {
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(fixedSnapshot()))
	next, _ := m.Update(engineDoneMsg{})
	if v := next.(Model).View(); !strings.Contains(v, "stopped") {
		t.Fatalf("no stopped state:\n%s", v)
	}
}

func TestUnknownTheme(t *testing.T) {
	if _, err := New(nil, Options{Renderer: asciiRenderer(), Theme: "nope"}); err == nil {
		t.Fatal("unknown theme accepted")
	}
}

// BenchmarkRender is one full redraw of every panel from a snapshot, the
// cost paid 4 times a second; View itself only returns the cache.
// secondsOfFrames returns perSecond frames of s, then perSecond of s a
// second later (its series moved on by a point), and so on for 8 seconds.
func secondsOfFrames(s load.Snapshot, perSecond int) []tea.Msg {
	var frames []tea.Msg
	for sec := range 8 {
		next := s
		next.Series = slices.Clone(s.Series)
		for i := range next.Series {
			next.Series[i] = s.Series[(i+sec)%len(s.Series)]
		}
		for range perSecond {
			frames = append(frames, SnapshotMsg(next))
		}
	}
	return frames
}

func BenchmarkRender(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {160, 48}, {240, 70}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			m := newTestModel(b, nil)
			m = press(m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			// Four frames a second, as at the default tick: the series (one
			// point a second) changes every fourth frame.
			frames := secondsOfFrames(fixedSnapshot(), 4)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				next, _ := m.Update(frames[i%len(frames)])
				m = next.(Model)
				i++
			}
		})
	}
}

func TestSLOBannerAndSave(t *testing.T) {
	objs, _ := slo.ParseAll([]string{"ttft_p99<=500ms", "e2el_p99<=10s"})
	var saved load.Snapshot
	m, err := New(newEngine(t), Options{Renderer: asciiRenderer(), Objectives: objs, Save: func(s load.Snapshot) (string, error) {
		saved = s
		return "infertop-x.json, infertop-x.csv", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 100, Height: 30}, SnapshotMsg(fixedSnapshot()))
	v := m.View()
	if !strings.Contains(v, "SLO BREACHED over the 30s window: ttft_p99<=500ms (1.70s)") || strings.Contains(v, "e2el_p99<=10s (") {
		t.Fatalf("banner:\n%s", v)
	}
	if n := len(strings.Split(v, "\n")); n != 30 {
		t.Fatalf("%d lines with the banner, want 30", n)
	}
	next, cmd := m.Update(runes("s"))
	if m = next.(Model); cmd == nil || !strings.Contains(m.View(), "saving…") {
		t.Fatalf("s started no save:\n%s", m.View())
	}
	m = press(m, cmd()) // the command's goroutine, here in the test's
	if saved.Seq != fixedSnapshot().Seq || !strings.Contains(m.View(), "saved infertop-x.json, infertop-x.csv") {
		t.Fatalf("save: seq %d\n%s", saved.Seq, m.View())
	}
	m = press(m, runes("w"))
	if strings.Contains(m.View(), "saved ") {
		t.Fatal("the notice outlived the next key")
	}
	plain := newTestModel(t, nil)
	plain = press[tea.Msg](plain, tea.WindowSizeMsg{Width: 80, Height: 24}, runes("s"))
	if !strings.Contains(plain.View(), "saving is not available") {
		t.Fatal("s without a saver")
	}
}

func TestLimitsInHeader(t *testing.T) {
	running := func(l load.Limits) load.Snapshot {
		s := fixedSnapshot()
		s.Limits = l
		return s
	}
	ending := running(load.Limits{Duration: time.Minute})
	ending.DoneWhy, ending.InFlight = load.EndDuration, 3
	done := ending
	done.Done, done.InFlight, done.Incomplete = true, 0, 2
	both := running(load.Limits{Duration: 2 * time.Minute, Requests: 5000})
	for _, c := range []struct {
		name string
		snap load.Snapshot
		want []string
	}{
		{"duration", running(load.Limits{Duration: 2 * time.Minute}), []string{"ends in 0:24", "● running"}},
		{"requests", running(load.Limits{Requests: 5000}), []string{"1213/5000 requests", "● running"}},
		{"both", both, []string{"ends in 0:24  1213/5000 requests"}},
		{"ending", ending, []string{"run 1:35  ending: 3 in flight"}},
		{"done", done, []string{"run 1:35  ■ done: duration reached · 2 incomplete"}},
	} {
		m := newTestModel(t, nil)
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 30}, SnapshotMsg(c.snap))
		first := strings.SplitN(m.View(), "\n", 2)[0]
		for _, want := range c.want {
			if !strings.Contains(first, want) {
				t.Errorf("%s: header %q lacks %q", c.name, first, want)
			}
		}
		if c.snap.Ending() && strings.Contains(first, "ends in") {
			t.Errorf("%s: a countdown in an ending run: %q", c.name, first)
		}
	}
}

// TestDoneClockStops: once the run is done the clock is the snapshot's,
// whatever the time and however often the screen is drawn again; and the
// engine stopping after that does not hide why the run ended. The second
// that passes is a synctest bubble's: the wall clock the model would read
// moves by it all the same.
func TestDoneClockStops(t *testing.T) { synctest.Test(t, testDoneClockStops) }

func testDoneClockStops(t *testing.T) {
	s := fixedSnapshot()
	s.Done, s.DoneWhy = true, load.EndRequests
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 30}, SnapshotMsg(s))
	before := strings.SplitN(m.View(), "\n", 2)[0]
	time.Sleep(1100 * time.Millisecond) // a wall clock would have moved a second on
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 30}, runes("c"), engineDoneMsg{})
	after := strings.SplitN(m.View(), "\n", 2)[0]
	if before != after || !strings.Contains(after, "run 1:35  ■ done: request limit reached") {
		t.Fatalf("the header moved after the end:\n%s\n%s", before, after)
	}
}

// blockingSaver is a Save that waits for the test to let it return.
type blockingSaver struct {
	started chan load.Snapshot
	release chan struct{}
}

func (b *blockingSaver) save(s load.Snapshot) (string, error) {
	b.started <- s
	<-b.release
	return "infertop-x.json", nil
}

// TestSaveDoesNotBlock: a save that hangs (a slow scrape, a full disk)
// leaves the keys working: a knob turned meanwhile reaches the engine and
// the screen at once.
func TestSaveDoesNotBlock(t *testing.T) {
	e, err := load.New(load.Config{
		Do:    func(context.Context, probe.Request) probe.Result { return probe.Result{} },
		Knobs: load.Knobs{Mode: load.OpenLoop, Rate: 20, Concurrency: 8, PromptTokens: 256, OutputTokens: 128},
	})
	if err != nil {
		t.Fatal(err)
	}
	saver := &blockingSaver{started: make(chan load.Snapshot, 2), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(saver.release) }) }
	t.Cleanup(release) // a failed test leaves no save hanging
	m, err := New(e, Options{Renderer: asciiRenderer(), Save: saver.save})
	if err != nil {
		t.Fatal(err)
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	tm.Send(SnapshotMsg(load.Snapshot{Seq: 7, Knobs: e.Knobs(), Window: 30 * time.Second}))
	tm.Send(runes("s"))
	select {
	case s := <-saver.started:
		if s.Seq != 7 {
			t.Fatalf("saved snapshot %d, want the one shown (7)", s.Seq)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the save never started")
	}
	start := time.Now()
	tm.Send(runes("+"))
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		return e.Knobs().Rate == 25 && strings.Contains(string(out), "open loop 25 req/s") && strings.Contains(string(out), "saving…")
	}, teatest.WithDuration(100*time.Millisecond), teatest.WithCheckInterval(5*time.Millisecond))
	t.Logf("the knob reached the engine and the screen in %v, the save still blocked", time.Since(start))
	tm.Send(runes("s")) // one save at a time
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		return strings.Contains(string(out), "a save is already running")
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	release()
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		return strings.Contains(string(out), "saved infertop-x.json")
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	tm.Send(runes("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if len(saver.started) != 0 {
		t.Fatal("a second s started a second save while the first ran")
	}
	if fm.saving {
		t.Fatal("still saving after the save came back")
	}
}

// serverView is a vLLM server's telemetry and two GPUs'.
func serverView() *telemetry.View {
	return &telemetry.View{
		Server: &telemetry.ServerView{Kind: "vllm", Running: 32, Waiting: 5, KVUsage: 0.78, HasKV: true, GenPerSec: 1700, PromptTokPerSec: 7000,
			HasPreempt: true, Preemptions: 3, HasTTFT: true, TTFTP50: 0.4, TTFTP99: 1.7, HasITL: true, ITLP50: 0.015, ITLP99: 0.13},
		GPU: &telemetry.GPUView{Source: "DCGM", Count: 2, PowerW: 1400, AvgW: 1360, EnergyFrom: "energy counter", UtilPct: 93, TempC: 61,
			GPUs: []telemetry.GPU{{Index: "0", PowerW: 720, UtilPct: 95}, {Index: "1", PowerW: 680, UtilPct: 91}}},
	}
}

func TestServerPanel(t *testing.T) {
	view := *serverView()
	objs, _ := slo.ParseAll([]string{"energy_per_token<=0.5J"})
	m, _ := New(nil, Options{Renderer: asciiRenderer(), Objectives: objs, Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(fixedSnapshot()))
	v := m.View()
	// 1360 W at 1712 output tokens/s: 0.794 J per token, breaking the SLO.
	for _, want := range []string{"vLLM · running 32 · waiting 5 · KV 78.0%", "GPU ×2 (DCGM) · now 1.40 kW · avg 1.36 kW · 0.794 J/token", "GPU0 720 W 95% · GPU1 680 W 91%", "SLO BREACHED over the 30s window: energy_per_token<=0.5J (0.794 J/token)"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if n := len(strings.Split(v, "\n")); n != 48 {
		t.Fatalf("%d lines, want 48", n)
	}
	// A stale source says so, with its age.
	view.GPU.Stale, view.GPU.Age, view.GPU.Err = true, 12*time.Second, "scrape: HTTP 503"
	m = press[tea.Msg](m, SnapshotMsg(fixedSnapshot()))
	if !strings.Contains(m.View(), "stale 0:12: scrape: HTTP 503") {
		t.Fatalf("no stale notice:\n%s", m.View())
	}
}

// TestDrawingsFollowTheSeries: the cached sparklines and chart are drawn
// again when the series moves on, and not otherwise.
func TestDrawingsFollowTheSeries(t *testing.T) {
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 40})
	frames := secondsOfFrames(fixedSnapshot(), 1)
	view := func(msg tea.Msg) string {
		next, _ := m.Update(msg)
		m = next.(Model)
		return m.View()
	}
	a := view(frames[0])
	b := view(frames[1])
	if a == b {
		t.Fatal("the screen did not change when the series moved on a second")
	}
	if again := view(frames[0]); again != a {
		t.Fatalf("the same snapshot drew a different screen:\n%s\n---\n%s", a, again)
	}
	// Each cached part against a model that never drew anything before.
	fresh := newTestModel(t, nil)
	fresh = press[tea.Msg](fresh, tea.WindowSizeMsg{Width: 120, Height: 40}, frames[1])
	view(frames[1])
	if got := view(frames[1]); got != fresh.View() { // drawn from the caches
		t.Fatalf("a cached drawing differs from a fresh one:\n%s\n---\n%s", got, fresh.View())
	}
}

// TestEndpointTextIsSanitised: every string an endpoint or an exporter
// sent (model name, errors, server kind and errors, GPU source, errors and
// labels) reaches the screen without a terminal escape or a bidi override.
// The renderer is the ASCII one, so the view holds no ESC of its own:
// any 0x1b would be the endpoint's.
func TestEndpointTextIsSanitised(t *testing.T) {
	const evil = "a\x1b]0;pwned\x07b\x1b[2Jc\x1b]52;c;aGk=\x07d\u202ee"
	s := fixedSnapshot()
	s.Target.Model = "model" + evil
	s.Target.URL = "http://h/" + evil
	s.LastError = "last" + evil
	s.Errors = []load.ErrorCount{
		{Class: probe.HTTP5xx, Status: 500, Message: "HTTP 500: " + evil, Count: 6},
		{Class: probe.Connection, Message: "conn" + evil, Count: 2},
		{Class: probe.HTTP4xx, Status: 400, Message: "bad" + evil, Count: 1},
	}
	views := []telemetry.View{
		{
			Server: &telemetry.ServerView{Kind: "k" + evil, Running: 1, Stale: true, Err: "srv" + evil},
			GPU: &telemetry.GPUView{Source: "src" + evil, Count: 2, EnergyFrom: "from" + evil, Stale: true, Err: "gpu" + evil,
				GPUs: []telemetry.GPU{{Index: "0" + evil}, {Index: "1" + evil}}},
		},
		{ // both sides unreadable: the error paths
			Server: &telemetry.ServerView{Err: "srv" + evil},
			GPU:    &telemetry.GPUView{Source: "src" + evil, Err: "gpu" + evil},
		},
	}
	check := func(what, v string) {
		t.Helper()
		if strings.ContainsRune(v, 0x1b) || strings.ContainsRune(v, '\u202e') || strings.ContainsRune(v, 0x07) {
			t.Errorf("%s holds a raw escape or override:\n%q", what, v)
		}
		if !strings.Contains(v, `\x1b]0;pwned\x07`) && !strings.Contains(v, `\x1b]0;pwned`) {
			t.Errorf("%s does not show the sanitised text (so the test checks nothing):\n%s", what, v)
		}
	}
	for i, view := range views {
		m, _ := New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(s))
		check(fmt.Sprintf("view %d, dashboard", i), m.View())
		// The panel unclipped: every field it draws, not only the first 160 cells.
		check(fmt.Sprintf("view %d, server panel", i), m.serverPanel(2000))
		check(fmt.Sprintf("view %d, the errors screen", i), press(m, runes("e")).View())
		// Each error message is on the errors screen, sanitised.
		if v := press(m, runes("e")).View(); !strings.Contains(v, `conna\x1b]0;pwned`) || !strings.Contains(v, `bada\x1b]0;pwned`) {
			t.Errorf("the errors screen lacks a sanitised message:\n%s", v)
		}
	}
	// A failed save may quote what a push gateway answered.
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 200, Height: 30}, SnapshotMsg(s), savedMsg{err: fmt.Errorf("push: %s", evil)})
	check("a failed save's notice", m.View())
}

// TestScreens: e opens the errors and closes them again, Esc closes either
// screen, ? and e go straight from one screen to the other, and a watcher
// may read the errors (the key is not one that acts on the load).
func TestScreens(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		m, _ := New(nil, Options{Renderer: asciiRenderer(), ReadOnly: readOnly})
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 100, Height: 30}, SnapshotMsg(longErrorSnapshot()))
		errorsOpen := func() bool { return strings.Contains(m.View(), "Press e or Esc to return") }
		helpOpen := func() bool { return strings.Contains(m.View(), "Press ? or Esc to return") }
		steps := []struct {
			key          tea.KeyMsg
			errors, help bool
		}{
			{runes("e"), true, false},
			{runes("e"), false, false},
			{runes("e"), true, false},
			{tea.KeyMsg{Type: tea.KeyEsc}, false, false},
			{runes("?"), false, true},
			{tea.KeyMsg{Type: tea.KeyEsc}, false, false}, // Esc closes the help too
			{runes("?"), false, true},
			{runes("e"), true, false}, // from the help straight to the errors
			{runes("?"), false, true}, // and back
			{runes("?"), false, false},
			{tea.KeyMsg{Type: tea.KeyEsc}, false, false}, // Esc on the dashboard does nothing
		}
		for i, st := range steps {
			m = press(m, st.key)
			if errorsOpen() != st.errors || helpOpen() != st.help {
				t.Fatalf("read-only %v, step %d (%v): errors %v help %v, want %v %v\n%s",
					readOnly, i, st.key, errorsOpen(), helpOpen(), st.errors, st.help, m.View())
			}
			if strings.Contains(m.View(), "knobs are locked") {
				t.Fatalf("read-only %v: %v is locked", readOnly, st.key)
			}
		}
	}
}

// TestErrorsScreenFits: more errors than the screen holds end in a note
// saying how many are left out, and one message longer than the screen
// is cut to it, not dropped.
func TestErrorsScreenFits(t *testing.T) {
	s := fixedSnapshot()
	s.Errors = nil
	for i := range 40 {
		s.Errors = append(s.Errors, load.ErrorCount{Class: probe.HTTP5xx, Status: 500, Message: fmt.Sprintf("HTTP 500: failure number %d", i), Count: int64(100 - i)})
	}
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(s), runes("e"))
	v := m.View()
	if !strings.Contains(v, "failure number 0") || !strings.Contains(v, "more not shown") || !strings.Contains(v, "Press e or Esc") {
		t.Fatalf("a long list:\n%s", v)
	}
	if n := len(strings.Split(v, "\n")); n != 24 {
		t.Fatalf("%d lines, want 24", n)
	}
	s.Errors = []load.ErrorCount{{Class: probe.HTTP4xx, Status: 400, Message: "HTTP 400: " + strings.Repeat("long body ", 300), Count: 1}}
	m = press[tea.Msg](m, SnapshotMsg(s))
	if v := m.View(); !strings.Contains(v, "HTTP 400: long body") || !strings.Contains(v, "…") || !strings.Contains(v, "Press e or Esc") {
		t.Fatalf("one message longer than the screen:\n%s", v)
	}
}

// TestOldestInFlight: the age of the oldest request shows while one is in
// flight, and is flagged past max(10 s, 10× the window's p99 E2E).
func TestOldestInFlight(t *testing.T) {
	for _, c := range []struct {
		oldest, p99 time.Duration
		want        string
		flagged     bool
	}{
		{0, 4 * time.Second, "oldest —", false},
		{3200 * time.Millisecond, 4 * time.Second, "oldest 3.20s", false},
		{39 * time.Second, 4 * time.Second, "oldest 39.0s", false}, // under 10× p99
		{41 * time.Second, 4 * time.Second, "oldest 41.0s", true},
		{9 * time.Second, 0, "oldest 9.00s", false}, // nothing measured yet: 10 s
		{11 * time.Second, 0, "oldest 11.0s", true},
		{11 * time.Second, 100 * time.Millisecond, "oldest 11.0s", true}, // a fast endpoint: still 10 s
	} {
		s := fixedSnapshot()
		s.OldestInFlight = c.oldest
		s.Latency[load.E2E].P99 = c.p99
		m := newTestModel(t, nil)
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(s))
		v := m.View()
		if !strings.Contains(v, c.want) || strings.Contains(v, "hung?") != c.flagged {
			t.Errorf("oldest %v, p99 %v: want %q flagged %v:\n%s", c.oldest, c.p99, c.want, c.flagged, v)
		}
	}
	// Waiting and generating apart, and a stalled stream flagged.
	s := fixedSnapshot()
	s.Streams.Stalled, s.Streams.LongestStall = 1, 5100*time.Millisecond
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(s))
	for _, want := range []string{"6 waiting · 42 generating", "oldest 410ms wait · 3.20s gen", "1 stalled · silent 5.10s"} {
		if v := m.View(); !strings.Contains(v, want) {
			t.Errorf("160x48 lacks %q:\n%s", want, v)
		}
	}
	// A drain that does not end says how old its oldest request is.
	s = fixedSnapshot()
	s.DoneWhy, s.InFlight, s.OldestInFlight = load.EndDuration, 2, 75*time.Second
	m = newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 30}, SnapshotMsg(s))
	if first := strings.SplitN(m.View(), "\n", 2)[0]; !strings.Contains(first, "ending: 2 in flight, oldest 75.0s") {
		t.Errorf("header while ending: %q", first)
	}
}

func TestBackingOff(t *testing.T) {
	for n, want := range map[int]string{0: "", 1: "backing off: 1 worker after failures", 3: "backing off: 3 workers after failures"} {
		s := fixedSnapshot()
		s.BackingOff = n
		m := newTestModel(t, nil)
		m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(s))
		second := strings.Split(m.View(), "\n")[1]
		if want == "" && strings.Contains(second, "backing off") || !strings.Contains(second, want) {
			t.Errorf("%d backing off: header %q", n, second)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		f    float64
		num  string
		rate string // rateNum(f, 4)
	}{
		{0, "0", "0"},
		{1.25, "1.2", "1.25"},
		{1.5625, "1.6", "1.562"},
		{25, "25", "25"},
		{812.5, "812", "812.5"},
		{999.4, "999", "999.4"},
		{999.7, "1.0k", "1.0k"},
		{1234, "1.2k", "1.2k"},
		{9960, "10k", "10k"},
		{12345, "12k", "12k"},
		{999_600, "1.0M", "1.0M"},
		{1.2e6, "1.2M", "1.2M"},
		{12e6, "12M", "12M"},
		{3.4e9, "3.4G", "3.4G"},
		{0.005, "0.0", "0.005"},
	} {
		if got := num(c.f); got != c.num {
			t.Errorf("num(%v) = %q, want %q", c.f, got, c.num)
		}
		if got := rateNum(c.f, 4); got != c.rate {
			t.Errorf("rateNum(%v, 4) = %q, want %q", c.f, got, c.rate)
		}
		if strings.ContainsAny(num(c.f)+rateNum(c.f, 3), "e+") {
			t.Errorf("%v in scientific notation", c.f)
		}
	}
	if got := count(123456, 6); got != "123456" {
		t.Errorf("count(123456, 6) = %q", got)
	}
	if got := count(12345678, 6); got != "12M" {
		t.Errorf("count(12345678, 6) = %q", got)
	}
}

// TestFooterKeys: the footer always ends with ? help and q quit, the keys
// a newcomer needs first, each key whole, with a notice or without.
func TestFooterKeys(t *testing.T) {
	for _, w := range []int{80, 100, 120} {
		for _, readOnly := range []bool{false, true} {
			m, _ := New(nil, Options{Renderer: asciiRenderer(), ReadOnly: readOnly})
			m = press[tea.Msg](m, tea.WindowSizeMsg{Width: w, Height: 30}, SnapshotMsg(fixedSnapshot()))
			if readOnly {
				m = press(m, runes("+")) // a locked key: a notice over the keys
			}
			lines := strings.Split(m.View(), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, "? help") || !strings.Contains(last, "q quit") || strings.Contains(last, "…") {
				t.Errorf("%d columns, read-only %v: footer %q", w, readOnly, last)
			}
			if readOnly && !strings.Contains(m.View(), "knobs are locked") {
				t.Errorf("%d columns: the notice is gone:\n%s", w, m.View())
			}
			if len(lines) != 30 {
				t.Errorf("%d columns, read-only %v: %d lines", w, readOnly, len(lines))
			}
		}
	}
}

// TestTooSmall: the too-small message is wrapped, never cut.
func TestTooSmall(t *testing.T) {
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 40, Height: 10}, SnapshotMsg(fixedSnapshot()))
	lines := strings.Split(m.View(), "\n")
	var words []string
	for _, l := range lines {
		if w := lipgloss.Width(l); w != 40 {
			t.Errorf("line %q is %d cells wide", l, w)
		}
		words = append(words, strings.Fields(l)...)
	}
	if got := strings.Join(words, " "); got != "terminal too small: 40x10, infertop needs 80x24 q quits" {
		t.Errorf("too small: %q", got)
	}
	if len(lines) != 10 {
		t.Errorf("%d lines", len(lines))
	}
}

// TestLabelStep: the time axis is labelled at round steps, as close as
// the labels' width allows, and every label falls on a multiple.
func TestLabelStep(t *testing.T) {
	for _, c := range []struct {
		span   time.Duration
		gw, lw int
		want   int64
	}{
		{time.Minute, 25, 4, 15},     // 80 columns: 0:45 1:00 1:15
		{time.Minute, 65, 4, 10},     // 120 columns
		{time.Minute, 102, 4, 5},     // 160 columns
		{time.Minute, 600, 4, 1},     // one a second when there is room
		{time.Minute, 61, 4, 10},     // 6 cells for 5 s: under 4+2
		{5 * time.Minute, 65, 4, 30}, // the 5-minute window
		{5 * time.Minute, 25, 4, 120},
		{time.Hour, 65, 7, 600},
		{48 * time.Hour, 10, 8, 24 * 3600}, // the largest step
	} {
		if got := labelStep(c.span, c.gw, c.lw); got != c.want {
			t.Errorf("labelStep(%v, %d, %d) = %d, want %d", c.span, c.gw, c.lw, got, c.want)
		}
	}
	for _, start := range []time.Duration{0, 35 * time.Second, 97 * time.Second} {
		labels := timeLabels(start, time.Minute, 65)
		var got []string
		for _, l := range labels {
			if l == "" {
				continue
			}
			got = append(got, l)
			var mm, ss int
			if _, err := fmt.Sscanf(l, "%d:%d", &mm, &ss); err != nil || ss%10 != 0 {
				t.Errorf("start %v: label %q not at a multiple of 10 s", start, l)
			}
		}
		if len(got) < 5 {
			t.Errorf("start %v: labels %q", start, got)
		}
	}
}

// TestCountsAfterReset: the window's counts are whole numbers however few
// ("7 requests", never "7.0 requests" as after an r).
func TestCountsAfterReset(t *testing.T) {
	s := fixedSnapshot()
	s.Latency[load.E2E].Count, s.Latency[load.ITL].Count = 7, 889
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(s))
	if v := m.View(); !strings.Contains(v, "7 requests · 889 token gaps") || strings.Contains(v, "7.0 requests") {
		t.Fatalf("counts after a reset:\n%s", v)
	}
}

// TestFlow: parts are never cut across lines, and the least needed are
// dropped whole when the lines run out.
func TestFlow(t *testing.T) {
	parts := []part{{"alpha", 0}, {"beta", 2}, {"gamma", 1}, {"delta", 0}}
	for _, c := range []struct {
		w, n int
		want []string
	}{
		{40, 1, []string{"alpha · beta · gamma · delta"}},
		{20, 2, []string{"alpha · beta · gamma", "delta"}},
		{20, 1, []string{"alpha · delta"}}, // beta (2), then gamma (1), dropped
		{22, 1, []string{"alpha · gamma · delta"}},
		{10, 1, []string{"alpha…"}}, // nothing left to drop: cut, and says so
	} {
		if got := flowParts(parts, " · ", c.w, c.n); !slices.Equal(got, c.want) {
			t.Errorf("w %d n %d: %q, want %q", c.w, c.n, got, c.want)
		}
	}
}

// TestNotice: a notice given at the start (an SSH session's unknown
// theme) shows in the footer until the first key.
func TestNotice(t *testing.T) {
	m, err := New(nil, Options{Renderer: asciiRenderer(), Notice: `unknown theme "pink"; using dark`})
	if err != nil {
		t.Fatal(err)
	}
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 100, Height: 30}, SnapshotMsg(fixedSnapshot()))
	if !strings.Contains(m.View(), `unknown theme "pink"; using dark`) {
		t.Fatalf("the notice is not shown:\n%s", m.View())
	}
	m = press[tea.Msg](m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'c'}})
	if strings.Contains(m.View(), "unknown theme") {
		t.Fatal("the notice outlived a key")
	}
}

// TestKnobAtLimit: a key that cannot move a knob past its limit says so.
func TestKnobAtLimit(t *testing.T) {
	eng := &fakeLimited{k: load.Knobs{Concurrency: load.MaxConcurrency, PromptTokens: 256, OutputTokens: 128}}
	m, _ := New(eng, Options{Renderer: asciiRenderer()})
	s := fixedSnapshot()
	s.Knobs = eng.k
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 100, Height: 30}, SnapshotMsg(s), tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'K'}})
	if !strings.Contains(m.View(), "concurrency is at its limit (10000)") {
		t.Fatalf("no word of the limit:\n%s", m.View())
	}
}

// fakeLimited is a controller that clamps as the engine does.
type fakeLimited struct{ k load.Knobs }

func (f *fakeLimited) Update(fn func(*load.Knobs)) load.Knobs {
	fn(&f.k)
	f.k.Concurrency = min(f.k.Concurrency, load.MaxConcurrency)
	return f.k
}
func (f *fakeLimited) SetWindow(time.Duration) {}
func (f *fakeLimited) Reset()                  {}

// TestOpenLoopShowsIntended: in the open loop the TTFT panel and the
// charts show TTFT* and E2E*, from the intended send time, and an
// objective on ttft marks the TTFT* row it judges, not the service time's.
func TestOpenLoopShowsIntended(t *testing.T) {
	objs, _ := slo.ParseAll([]string{"ttft_p99<=3s"})
	m, err := New(nil, Options{Renderer: asciiRenderer(), Objectives: objs})
	if err != nil {
		t.Fatal(err)
	}
	next, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	next, _ = next.Update(SnapshotMsg(openSnapshot()))
	m = next.(Model)
	view := m.View()
	for _, want := range []string{"─ TTFT* ─", "E2E* over time", "TTFT* over time", "from the intended send"} {
		if !strings.Contains(view, want) {
			t.Errorf("the open loop's dashboard lacks %q:\n%s", want, view)
		}
	}
	if _, ok := m.sloStyle(load.TTFTIntended, "p99"); !ok || len(m.verdicts) != 1 || m.verdicts[0].Held {
		t.Error("ttft_p99<=3s does not mark TTFT* p99 (3.2s) breached")
	}
	if _, ok := m.sloStyle(load.TTFT, "p99"); ok {
		t.Error("ttft_p99<=3s marks the service time's row, which it does not judge")
	}
}

// TestPhasesKeptAt80x24: at 80x24 a server panel that wraps to five
// lines gives way rather than crowd out the Phases table the README
// sends a newcomer to (after K three times it hid it): the table keeps
// its title, its head and two rows, the server panel its first lines.
func TestPhasesKeptAt80x24(t *testing.T) {
	view := *serverView()
	m, _ := New(nil, Options{Renderer: asciiRenderer(), Figures: func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, &view) }})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(fixedSnapshot()))
	v := m.View()
	checkSize(t, v, 80, 24)
	if !strings.Contains(v, "─ Phases") || !strings.Contains(v, "\n  2 ") || !strings.Contains(v, "\n  3 ") {
		t.Fatalf("no Phases table (its title and two rows) at 80x24:\n%s", v)
	}
	if !strings.Contains(v, "vLLM · running 32") {
		t.Fatalf("no server line at all:\n%s", v)
	}
}

// TestOpenPhaseRowStarred: an open loop's phase row shows TTFT* and E2E*
// (marked *), and its errors count its dropped arrivals as error_rate
// does.
func TestOpenPhaseRowStarred(t *testing.T) {
	s := openSnapshot()
	ph := &s.Phases[2]
	ph.Latency[load.TTFTIntended] = load.Dist{Count: 420, P50: 530 * time.Millisecond, P99: 3200 * time.Millisecond}
	ph.Latency[load.E2EIntended] = load.Dist{Count: 420, P99: 5450 * time.Millisecond}
	ph.Failed, ph.Dropped = 0, 420 // half of what it was to send, never sent
	m := newTestModel(t, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 40}, SnapshotMsg(s))
	for _, l := range strings.Split(m.View(), "\n") {
		if f := strings.Fields(l); len(f) > 8 && f[0] == "3" {
			if f[5] != "530ms*" || f[6] != "3.20s*" || f[7] != "5.45s*" || f[9] != "50.0%" {
				t.Fatalf("phase 3's row: %q", l)
			}
			return
		}
	}
	t.Fatalf("no row for phase 3:\n%s", m.View())
}
