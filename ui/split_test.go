package ui

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/telemetry"
	"github.com/infertop/infertop/themes"
)

// figures are a group's own statistics in DefaultStats' order: TTFT p50
// and p99, TPOT p50, E2E p99 (ms) and the error rate.
func figures(n int, vals ...float64) []compare.Figure {
	var out []compare.Figure
	for i, st := range compare.DefaultStats() {
		out = append(out, compare.Figure{Stat: st, Value: vals[i], N: n})
	}
	return out
}

// fixedGrouping is a split by the header X-Backend: the old pods the
// baseline, the new ones 38 % slower at TTFT p99 with confidence (the
// comparison fixedComparison has), a third group faster at TTFT p50, and
// the rest as other groups, too few to judge; 12 requests without the
// header.
func fixedGrouping() compare.Grouping {
	base := compare.Group{Name: "old", Index: 1, Requests: 1204, Figures: figures(392, 412, 1702, 18.7, 3950, 0.015)}
	gr := compare.Grouping{By: "header:X-Backend", Baseline: base, Ungrouped: 12, UngroupedFailed: 3}
	newer := compare.Group{Name: "new", Index: 2, Requests: 1187, Figures: figures(380, 569, 2349, 19.1, 4424, 0.005)}
	c := fixedComparison()
	c.Sides = [2]string{base.Label(), newer.Label()}
	gr.Newer = append(gr.Newer, compare.GroupComparison{Group: newer, Comparison: c})
	third := compare.Group{Name: "fp_3c9a\x1b]0;pwned\x07", Index: 3, Requests: 640, Figures: figures(201, 330, 1650, 18.2, 3810, 0.01)}
	c3 := fixedComparison()
	c3.Sides = [2]string{base.Label(), third.Label()}
	for i := range c3.Results {
		r := &c3.Results[i]
		r.Verdict, r.NCanary = compare.NoDifference, 201
		switch r.Stat.Name {
		case "ttft_p50":
			r.Canary, r.Delta, r.Lo, r.Hi, r.Verdict = 330, -0.2, -0.31, -0.09, compare.Better
		case "ttft_p99":
			r.Canary, r.Delta, r.Lo, r.Hi = 1650, -0.03, -0.1, 0.04
		case "e2el_p99":
			r.Verdict = compare.NotEnough
		}
	}
	gr.Newer = append(gr.Newer, compare.GroupComparison{Group: third, Comparison: c3})
	other := compare.Group{Name: compare.OtherGroup, Requests: 9, Figures: figures(9, 400, 520, 18.1, 3100, 0)}
	co := thinComparison()
	co.Sides = [2]string{base.Label(), other.Label()}
	gr.Newer = append(gr.Newer, compare.GroupComparison{Group: other, Comparison: co})
	return gr
}

// twoGroups is fixedGrouping with the new pods alone beside the old.
func twoGroups() compare.Grouping {
	g := fixedGrouping()
	g.Newer, g.Ungrouped, g.UngroupedFailed = g.Newer[:1], 0, 0
	return g
}

// waitingGrouping is a split whose named baseline has not answered yet:
// the new pods have, and nothing is compared.
func waitingGrouping() compare.Grouping {
	g := twoGroups()
	g.Named = true
	g.Baseline.Requests, g.Baseline.Figures = 0, figures(0, 0, 0, 0, 0, 0)
	c := &g.Newer[0].Comparison
	*c = thinComparison()
	c.Sides = [2]string{g.Baseline.Label(), g.Newer[0].Group.Label()}
	for i := range c.Results {
		c.Results[i].NBaseline, c.Results[i].Baseline = 0, 0
	}
	return g
}

// newSplitModel is a split's dashboard over no split, its comparison
// fixed (ok false: none yet); server, if set, the telemetry its figures
// join.
func newSplitModel(t testing.TB, g compare.Grouping, ok bool, server *telemetry.View) Model {
	t.Helper()
	o := Options{Renderer: asciiRenderer(), Groups: func() (compare.Grouping, bool) { return g, ok }}
	if server != nil {
		o.Figures = func(s load.Snapshot) telemetry.Figures { return telemetry.Join(s, server) }
	}
	m, err := New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSplitGolden: a split's dashboard from a fixed snapshot and a fixed
// comparison of four groups and the rest, at the smallest size and two
// larger ones.
func TestSplitGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			tm := teatest.NewTestModel(t, newSplitModel(t, fixedGrouping(), true, nil), teatest.WithInitialTermSize(size[0], size[1]))
			tm.Send(SnapshotMsg(fixedSnapshot()))
			tm.Send(runes("q"))
			view := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model).View()
			golden.RequireEqual(t, []byte(view))
			checkSize(t, view, size[0], size[1])
		})
	}
}

// TestSplitFits: at every size from the smallest, in both loops, with
// and without the server panel, before the first comparison, before any
// group, while a named baseline waits, with two groups and with five
// rows, the view fills the terminal exactly: the verdict line under the
// header, every group's row, the new group's TTFT p99 difference, and
// the load's own panels.
func TestSplitFits(t *testing.T) {
	none := compare.Grouping{By: "header:X-Backend", Ungrouped: 40}
	// A subtest a size and loop, in parallel: the 100 views are pure CPU
	// (9 s under -race one after another), and independent.
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {160, 48}, {240, 70}} {
		for _, snap := range []load.Snapshot{fixedSnapshot(), openSnapshot()} {
			t.Run(fmt.Sprintf("%dx%d %s", size[0], size[1], snap.Knobs.Mode), func(t *testing.T) {
				t.Parallel()
				for _, server := range []*telemetry.View{nil, serverView()} {
					for _, v := range []struct {
						name   string
						g      compare.Grouping
						ok     bool
						want   string   // line 3's start
						groups []string // on screen, a row each
					}{
						{"first", fixedGrouping(), false, "splitting by the backend: the first verdict comes within a second", nil},
						{"none", none, true, "no group seen yet (40 requests without the header X-Backend)", nil},
						{"waiting", waitingGrouping(), true, "waiting for the baseline group 1 (old)", []string{" 1 old (baseline) ", " 2 new "}},
						{"two", twoGroups(), true, "group 2 (new) slower: TTFT p99 +38%", []string{" 1 old (baseline) ", " 2 new "}},
						{"five", fixedGrouping(), true, "group 2 (new) slower: TTFT p99 +38%", []string{" 1 old (b", " 2 new ", ` 3 fp_3c9a\x1b]0`, "   other groups "}},
					} {
						m := newSplitModel(t, v.g, v.ok, server)
						m = press[tea.Msg](m, tea.WindowSizeMsg{Width: size[0], Height: size[1]}, SnapshotMsg(snap))
						view := m.View()
						what := fmt.Sprintf("%v %s server %v", size, v.name, server != nil)
						checkSize(t, view, size[0], size[1])
						lines := strings.Split(view, "\n")
						if !strings.HasPrefix(lines[2], v.want) {
							t.Errorf("%s: line 3 is %q, want the verdict %q", what, lines[2], v.want)
						}
						if strings.Contains(view, "\x1b") {
							t.Errorf("%s: an escape reached the screen", what)
						}
						for _, g := range v.groups {
							if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, g) }) {
								t.Errorf("%s: no row %q:\n%s", what, g, view)
							}
						}
						if v.name == "two" || v.name == "five" {
							if !strings.Contains(view, "+38%") {
								t.Errorf("%s: no TTFT p99 difference:\n%s", what, view)
							}
						}
						for _, w := range []string{"Groups", "Latency", "Throughput", "Errors", "In flight"} {
							if !strings.Contains(view, w) {
								t.Errorf("%s: no %q on screen:\n%s", what, w, view)
							}
						}
					}
				}
			})
		}
	}
}

// TestSplitKeep: the groups panel narrows by giving up the verdict's
// column, then the newer groups' figures (the error rate's first, TTFT
// p99's last); the differences always stay, and it fits.
func TestSplitKeep(t *testing.T) {
	for _, c := range []struct {
		w       int
		values  []bool // TTFT p50, TTFT p99, TPOT p50, E2E p99, errors
		verdict bool
	}{
		{80, []bool{false, true, false, false, false}, false},
		{100, []bool{true, true, false, true, false}, false},
		{120, []bool{true, true, true, true, true}, false},
		{160, []bool{true, true, true, true, true}, true},
	} {
		l := grpFit(c.w)
		if !slices.Equal(l.values, c.values) || l.verdict != c.verdict {
			t.Errorf("width %d: values %v verdict %v, want %v %v", c.w, l.values, l.verdict, c.values, c.verdict)
		}
		if l.width() > c.w || l.nameW < grpNameMin {
			t.Errorf("width %d: the table is %d wide, its names %d", c.w, l.width(), l.nameW)
		}
	}
}

// TestSplitColours: a newer group's difference takes the colour of its
// verdict on that statistic, the verdict line the worst of every group's
// (bad when one is worse, good when only better, muted else), and the
// group's verdict word its own worst.
func TestSplitColours(t *testing.T) {
	g := fixedGrouping()
	m := newSplitModel(t, g, true, nil)
	m = press[tea.Msg](m, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(fixedSnapshot()))
	if !samePaint(m.splitStyle(), m.theme.Bad) {
		t.Error("a worse group does not make the verdict line bad")
	}
	for _, c := range []struct {
		group int
		want  themes.Paint
		word  string
	}{{0, m.theme.Bad, "slower"}, {1, m.theme.Good, "faster"}, {2, m.theme.Muted, "too few yet"}} {
		if word, st := m.groupVerdict(&g.Newer[c.group].Comparison); word != c.word || !samePaint(st, c.want) {
			t.Errorf("group %d: verdict %q, want %q in its colour", c.group, word, c.word)
		}
	}
	m.split.res.Newer = g.Newer[1:] // the faster group, and the thin one
	if !samePaint(m.splitStyle(), m.theme.Good) {
		t.Error("a better group alone does not make the verdict line good")
	}
	m.split.res.Newer = g.Newer[2:]
	if !samePaint(m.splitStyle(), m.theme.Muted) {
		t.Error("nothing judged is not muted")
	}
	// In colour, the new group's TTFT p99 difference is the bad style's.
	lip := lipgloss.NewRenderer(io.Discard)
	lip.SetColorProfile(termenv.TrueColor)
	mc, err := New(nil, Options{Renderer: lip, Groups: func() (compare.Grouping, bool) { return g, true }})
	if err != nil {
		t.Fatal(err)
	}
	mc = press[tea.Msg](mc, tea.WindowSizeMsg{Width: 160, Height: 48}, SnapshotMsg(fixedSnapshot()))
	if bad := mc.theme.Bad.Render(padLeft("+38%", grpDeltaW)); !strings.Contains(mc.View(), bad) {
		t.Errorf("the new group's TTFT p99 difference is not drawn in the bad style")
	}
}

// TestSplitOrCompare: a dashboard is a comparison's or a split's, never
// both at once.
func TestSplitOrCompare(t *testing.T) {
	_, err := New(nil, Options{Renderer: asciiRenderer(), Compare: func() (compare.Comparison, bool) { return compare.Comparison{}, false },
		Groups: func() (compare.Grouping, bool) { return compare.Grouping{}, false }})
	if err == nil {
		t.Fatal("a dashboard took both a comparison and a split")
	}
}
