package ui

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// fakeFinder records the searches asked for and the causes they were
// stopped with; it has no news of its own (the tests send it).
type fakeFinder struct {
	mu     sync.Mutex
	found  [][]slo.Objective
	causes []error
}

func (f *fakeFinder) Find(objs []slo.Objective) (int, func(error), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.found = append(f.found, objs)
	return len(f.found), func(cause error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.causes = append(f.causes, cause)
	}, nil
}

func (f *fakeFinder) Next() (SearchMsg, bool) { return SearchMsg{}, false }

func mustObjectives(t *testing.T, exprs ...string) []slo.Objective {
	t.Helper()
	objs, err := slo.ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// searchSteps are a search's steps for ttft_p99<=500ms whose knee is 32:
// the walk up to 64, which broke, then the bisection down to 33; upTo
// keeps the first n.
func searchSteps(n int) []capacity.Step {
	ms := time.Millisecond
	var steps []capacity.Step
	for i, c := range []int{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 34, 33} {
		good := min(float64(c), 32) * 0.9
		ttft := 120*ms + time.Duration(c)*11*ms
		if c > 32 {
			ttft = 520*ms + time.Duration(c-32)*40*ms
		}
		held := c <= 32
		steps = append(steps, capacity.Step{N: i + 1, Load: float64(c), Knobs: load.Knobs{Concurrency: c, PromptTokens: 512, OutputTokens: 128},
			GoodPerSec: good, ReqPerSec: min(float64(c), 34), ReqKnown: true, PerRequestKnown: true, Held: held,
			TTFT: load.Dist{Count: 60, P99: ttft}, E2E: load.Dist{Count: 60, P99: 1200*ms + time.Duration(c)*40*ms}})
	}
	return steps[:n]
}

// inProgress is the news of a search at step 8, holding 48 after 64 broke.
func inProgress() SearchMsg {
	return SearchMsg{ID: 1, Steps: searchSteps(7), Progress: &capacity.Progress{Step: 8, Over: capacity.Concurrency, Load: 48,
		State: capacity.StateHolding, Need: 12 * time.Second, Left: 50 * time.Second, Requests: 37, NeedRequests: 50, Good: 32, Bad: 64}}
}

// finished is the same search's end: 32 held, 33 broke.
func finished() SearchMsg {
	steps := searchSteps(12)
	return SearchMsg{ID: 1, Steps: steps[7:], End: &SearchEnd{Result: capacity.Result{Over: capacity.Concurrency, Found: true,
		MaxLoad: 32, Bad: 33, Knee: 5, Steps: steps}}}
}

func TestCapacityGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		size [2]int
		news []SearchMsg
	}{
		{"capacity-80x24", [2]int{80, 24}, []SearchMsg{inProgress()}},
		{"capacity-160x48", [2]int{160, 48}, []SearchMsg{inProgress()}},
		{"capacity-found-80x24", [2]int{80, 24}, []SearchMsg{inProgress(), finished()}},
		{"capacity-found-160x48", [2]int{160, 48}, []SearchMsg{inProgress(), finished()}},
	} {
		size := c.size
		t.Run(c.name, func(t *testing.T) {
			m, err := New(nil, Options{Renderer: asciiRenderer(), Finder: &fakeFinder{}})
			if err != nil {
				t.Fatal(err)
			}
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
			tm.Send(SnapshotMsg(fixedSnapshot()))
			tm.Send(findMsg{mustObjectives(t, "ttft_p99<=500ms")})
			for _, n := range c.news {
				tm.Send(n)
			}
			tm.Send(runes("q"))
			view := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model).View()
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

// TestCapacityViewSays: the header says what the search does while it
// runs, the panel how it ended once it did.
func TestCapacityViewSays(t *testing.T) {
	f := &fakeFinder{}
	m, _ := New(nil, Options{Renderer: asciiRenderer(), Finder: f})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 120, Height: 40}, SnapshotMsg(fixedSnapshot()),
		findMsg{mustObjectives(t, "ttft_p99<=500ms")}, inProgress())
	header := strings.Join(strings.Split(m.View(), "\n")[:3], "\n")
	if !strings.Contains(header, "step 8: concurrency 48, holding 12s more") {
		t.Errorf("the header does not say what the search does:\n%s", header)
	}
	m = press[tea.Msg](m, finished())
	if v := m.View(); !strings.Contains(v, "found: concurrency 32 (ttft_p99<=500ms held; 33 broke)") || strings.Contains(v, "step 8:") {
		t.Errorf("the end is not shown:\n%s", v)
	}
	// News of an older search changes nothing.
	before := m.View()
	m = press[tea.Msg](m, SearchMsg{ID: 0, Progress: &capacity.Progress{Step: 99}})
	if m.View() != before {
		t.Error("an older search's news changed the view")
	}
}

// TestFindKeyAsks: without --find-max, f opens the footer's input; Esc
// closes it, a bad objective is said and kept, Enter starts the search.
func TestFindKeyAsks(t *testing.T) {
	f := &fakeFinder{}
	m, _ := New(newEngine(t), Options{Renderer: asciiRenderer(), Finder: f})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(fixedSnapshot()))
	m = press(m, runes("f"))
	if !strings.Contains(m.View(), "find the most load holding:") {
		t.Fatalf("f does not ask for an objective:\n%s", m.View())
	}
	m = press(m, runes("k"), tea.KeyMsg{Type: tea.KeyEsc})
	if v := m.View(); strings.Contains(v, "find the most load holding:") || !strings.Contains(v, "no search started") {
		t.Fatalf("Esc does not close the input:\n%s", v)
	}
	if len(f.found) != 0 {
		t.Fatalf("a search started: %v", f.found)
	}
	m = press(m, runes("f"), runes("ttft_p99<=fast"), tea.KeyMsg{Type: tea.KeyEnter})
	if v := m.View(); !strings.Contains(v, "find the most load holding:") || len(f.found) != 0 {
		t.Fatalf("a bad objective closed the input or started a search:\n%s", v)
	}
	m = press(m, tea.KeyMsg{Type: tea.KeyCtrlU}, runes("ttft_p99<=2s, error_rate<1%"), tea.KeyMsg{Type: tea.KeyEnter})
	if len(f.found) != 1 || len(f.found[0]) != 2 || f.found[0][0].Expr != "ttft_p99<=2s" {
		t.Fatalf("Enter started %v", f.found)
	}
	if !strings.Contains(m.View(), "capacity search: starting") {
		t.Fatalf("the header does not say the search started:\n%s", m.View())
	}
	// A second f while it runs starts nothing.
	m = press(m, runes("f"))
	if len(f.found) != 1 || !strings.Contains(m.View(), "a search is running") {
		t.Fatalf("f during a search: %v\n%s", f.found, m.View())
	}
	// A watcher's f is locked, as every key on the load.
	w, _ := New(nil, Options{Renderer: asciiRenderer(), Finder: f, ReadOnly: true})
	w = press[tea.Msg](w, tea.WindowSizeMsg{Width: 80, Height: 24}, runes("f"))
	if !strings.Contains(w.View(), "knobs are locked") || len(f.found) != 1 {
		t.Fatalf("a watcher's f:\n%s", w.View())
	}
}

// TestKnobHandsBack: a knob key during a search stops it with
// ErrTakenOver before the knob turns, and the footer says where the load is.
func TestKnobHandsBack(t *testing.T) {
	e := newEngine(t)
	f := &fakeFinder{}
	m, _ := New(e, Options{Renderer: asciiRenderer(), Finder: f, FindMax: mustObjectives(t, "ttft_p99<=500ms")})
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 80, Height: 24}, SnapshotMsg(load.Snapshot{Knobs: e.Knobs(), Window: 30 * time.Second}))
	m = press(m, runes("f")) // --find-max's objectives: no question
	if len(f.found) != 1 || f.found[0][0].Expr != "ttft_p99<=500ms" {
		t.Fatalf("f with --find-max started %v", f.found)
	}
	m = press(m, runes("w")) // not a knob: the search goes on
	if len(f.causes) != 0 {
		t.Fatalf("w stopped the search: %v", f.causes)
	}
	m = press(m, runes("k"))
	if len(f.causes) != 1 || !errors.Is(f.causes[0], capacity.ErrTakenOver) {
		t.Fatalf("k stopped the search with %v", f.causes)
	}
	if got := e.Knobs().Concurrency; got != 9 {
		t.Fatalf("concurrency %d after k", got)
	}
	if v := m.View(); !strings.Contains(v, "the search handed control back: concurrency 9") {
		t.Fatalf("the footer does not say so:\n%s", v)
	}
	// The search's own end, cut short, leaves the hand-back in the panel.
	m = press[tea.Msg](m, SearchMsg{ID: 1, End: &SearchEnd{Err: capacity.ErrTakenOver}})
	if v := m.View(); !strings.Contains(v, "handed back after 0 steps") {
		t.Fatalf("the panel lost the hand-back:\n%s", v)
	}
	_ = press(m, runes("k"))
	if len(f.causes) != 1 {
		t.Fatalf("a knob with no search stopped something: %v", f.causes)
	}
}
