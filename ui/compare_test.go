package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/themes"
)

// canarySnapshot is fixedSnapshot as a slower canary answered it: TTFT
// 38 % slower at the tail, E2E 12 %, fewer errors.
func canarySnapshot() load.Snapshot {
	s := fixedSnapshot()
	s.Target = load.Target{URL: "http://127.0.0.1:9000/v1", Model: "sim-llama-8b", API: "openai-chat"}
	scale := func(d load.Dist, f float64) load.Dist {
		for _, v := range []*time.Duration{&d.Mean, &d.P50, &d.P90, &d.P95, &d.P99, &d.P999, &d.Max} {
			*v = time.Duration(float64(*v) * f)
		}
		return d
	}
	s.Latency[load.TTFT] = scale(s.Latency[load.TTFT], 1.38)
	s.Latency[load.E2E] = scale(s.Latency[load.E2E], 1.12)
	s.Latency[load.TPOT] = scale(s.Latency[load.TPOT], 1.02)
	s.Latency[load.ITL] = scale(s.Latency[load.ITL], 0.97)
	s.Latency[load.E2E].Count, s.Latency[load.TTFT].Count = 380, 380
	s.OutTokPerSec, s.ReqPerSec, s.Failed, s.ErrorRate = 1530, 12.1, 2, 2.0/382
	s.InFlight, s.OldestInFlight = 47, 4100*time.Millisecond
	s.Series = append([]load.Point(nil), s.Series...)
	for i := range s.Series {
		p := &s.Series[i]
		p.TTFTP99, p.E2EP99 = p.TTFTP99*138/100, p.E2EP99*112/100
		p.OutTokens, p.Failed = p.OutTokens*9/10, 0
	}
	return s
}

// fixedComparison is a comparison of the default statistics: TTFT's tail
// worse with confidence, the rest undecided or too thin.
func fixedComparison() compare.Comparison {
	c := compare.Comparison{Confidence: 0.99, Family: 0.95, Resamples: 1000}
	for _, st := range compare.DefaultStats() {
		r := compare.Result{Stat: st, NBaseline: 392, NCanary: 380, Seconds: 95, Verdict: compare.NoDifference}
		switch st.Name {
		case "ttft_p50":
			r.Baseline, r.Canary, r.Delta, r.Lo, r.Hi = 412, 569, 0.38, -0.02, 0.71
		case "ttft_p99":
			r.Baseline, r.Canary, r.Delta, r.Lo, r.Hi, r.Verdict = 1702, 2349, 0.38, 0.21, 0.55, compare.Worse
		case "tpot_p50":
			r.Baseline, r.Canary, r.Delta, r.Lo, r.Hi = 18.7, 19.1, 0.02, -0.01, 0.05
		case "e2el_p99":
			r.Baseline, r.Canary, r.Delta, r.Verdict = 3950, 4424, 0.12, compare.NotEnough
			r.NBaseline, r.NCanary = 150, 140
		case "error_rate":
			r.Baseline, r.Canary, r.Delta, r.Lo, r.Hi = 0.015, 0.005, -0.01, -0.025, 0.004
		}
		c.Results = append(c.Results, r)
	}
	return c
}

// thinComparison is a comparison made before either side had enough
// requests: nothing judged.
func thinComparison() compare.Comparison {
	c := fixedComparison()
	for i := range c.Results {
		c.Results[i].Verdict, c.Results[i].NBaseline, c.Results[i].NCanary, c.Results[i].Seconds = compare.NotEnough, 48, 47, 1
	}
	return c
}

// newCompareModel is a comparison's dashboard over no pair, its
// comparison fixed (ok false: none yet).
func newCompareModel(t testing.TB, c compare.Comparison, ok bool) Model {
	t.Helper()
	m, err := New(nil, Options{Renderer: asciiRenderer(), Compare: func() (compare.Comparison, bool) { return c, ok }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkSize fails the test unless view is h lines of w cells each.
func checkSize(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := lipgloss.Width(l); lw != w {
			t.Errorf("line %d is %d cells wide, want %d: %q", i, lw, w, l)
		}
	}
}

// TestCompareGolden: the comparison's dashboard from fixed snapshots of
// both sides and a fixed comparison, at the smallest size and a large one.
func TestCompareGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			tm := teatest.NewTestModel(t, newCompareModel(t, fixedComparison(), true), teatest.WithInitialTermSize(size[0], size[1]))
			tm.Send(CanarySnapshotMsg(canarySnapshot()))
			tm.Send(SnapshotMsg(fixedSnapshot()))
			tm.Send(runes("q"))
			view := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model).View()
			golden.RequireEqual(t, []byte(view))
			checkSize(t, view, size[0], size[1])
		})
	}
}

// TestCompareFits: at every size from the smallest, in both loops, before
// and after the first comparison and the canary's first snapshot, the
// view fills the terminal exactly, the verdict line under the header and
// the differences on screen.
func TestCompareFits(t *testing.T) {
	open := func() (load.Snapshot, load.Snapshot) {
		b, c := openSnapshot(), canarySnapshot()
		c.Knobs, c.Backlog = b.Knobs, 3
		c.Latency[load.TTFTIntended], c.Latency[load.E2EIntended] = b.Latency[load.TTFTIntended], b.Latency[load.E2EIntended]
		c.Latency[load.TTFTIntended].P99 = b.Latency[load.TTFTIntended].P99 * 2
		return b, c
	}
	closed := func() (load.Snapshot, load.Snapshot) { return fixedSnapshot(), canarySnapshot() }
	// A subtest a size and loop, in parallel: the 30 views are pure CPU
	// (3 s under -race one after another), and independent.
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {160, 48}, {240, 70}} {
		for name, snaps := range map[string]func() (load.Snapshot, load.Snapshot){"closed": closed, "open": open} {
			t.Run(fmt.Sprintf("%dx%d %s", size[0], size[1], name), func(t *testing.T) {
				t.Parallel()
				for _, v := range []struct {
					cmp  compare.Comparison
					ok   bool
					want string
				}{
					{fixedComparison(), false, "comparing"},
					{fixedComparison(), true, "canary slower: TTFT p99 +38%"},
					{thinComparison(), true, "no difference found yet (not enough data"}, // the longest line: two at 80 columns
				} {
					judged := v.ok
					b, c := snaps()
					m := newCompareModel(t, v.cmp, v.ok)
					m = press[tea.Msg](m, tea.WindowSizeMsg{Width: size[0], Height: size[1]}, SnapshotMsg(b), CanarySnapshotMsg(c))
					view := m.View()
					checkSize(t, view, size[0], size[1])
					lines := strings.Split(view, "\n")
					if !strings.HasPrefix(lines[2], v.want) {
						t.Errorf("%v %s judged %v: line 3 is %q, want the verdict %q", size, name, judged, lines[2], v.want)
					}
					for _, l := range lines[2:4] {
						if strings.HasSuffix(strings.TrimSpace(l), "…") {
							t.Errorf("%v %s: the verdict is cut: %q", size, name, l)
						}
					}
					for _, w := range []string{"Δ", "canary", "Latency", "Throughput", "Errors", "In flight"} {
						if !strings.Contains(view, w) {
							t.Errorf("%v %s judged %v: no %q on screen:\n%s", size, name, judged, w, view)
						}
					}
					// The tail's difference and both sides of it, always.
					if d := relDelta(float64(b.Latency[load.TTFT].P99), float64(c.Latency[load.TTFT].P99)); name == "closed" && !strings.Contains(view, d) {
						t.Errorf("%v: no TTFT p99 difference %s:\n%s", size, d, view)
					}
				}
			})
		}
	}
}

// TestCompareKeep: the table narrows by whole percentiles, the sides of
// p95 first, then p50's; the differences and p99's sides stay.
func TestCompareKeep(t *testing.T) {
	for _, c := range []struct {
		w    int
		want []bool
	}{{80, []bool{false, false, true}}, {100, []bool{true, false, true}}, {120, []bool{true, true, true}}, {200, []bool{true, true, true}}} {
		got := cmpKeep(c.w)
		if !slices.Equal(got, c.want) {
			t.Errorf("width %d: keep %v, want %v", c.w, got, c.want)
		}
		if room := c.w - cmpTableWidth(got) - 1; room < cmpChartMin && slices.Contains(got, true) {
			t.Errorf("width %d: the chart has %d cells", c.w, room)
		}
	}
}

// TestCompareColours: a difference takes the colour of the comparison's
// verdict on its statistic, and the verdict line the worst verdict's.
func TestCompareColours(t *testing.T) {
	m := newCompareModel(t, fixedComparison(), true)
	m = press[tea.Msg](m, SnapshotMsg(fixedSnapshot()), CanarySnapshotMsg(canarySnapshot()))
	for _, c := range []struct {
		met  load.Metric
		q    float64
		want themes.Paint
	}{{load.TTFT, 0.99, m.theme.Bad}, {load.TTFT, 0.5, m.theme.Text}, {load.ITL, 0.99, m.theme.Text}, {load.TTFTIntended, 0.99, m.theme.Bad}} {
		r, ok := m.result(c.met, c.q, false)
		if !samePaint(m.deltaStyle(r, ok), c.want) {
			t.Errorf("%s p%g: the difference's style is not the verdict's", c.met, c.q*100)
		}
	}
	if !samePaint(m.verdictStyle(), m.theme.Bad) {
		t.Error("a worse statistic does not make the verdict line bad")
	}
	better := fixedComparison()
	better.Results[1].Verdict = compare.Better
	m.cmp.res = better
	if !samePaint(m.verdictStyle(), m.theme.Good) {
		t.Error("a better statistic alone does not make the verdict line good")
	}
	m.cmp.res = thinComparison()
	if !samePaint(m.verdictStyle(), m.theme.Muted) {
		t.Error("nothing judged is not muted")
	}
}

// samePaint says two paints draw alike, of the same colour.
func samePaint(a, b themes.Paint) bool {
	return a.Render("x") == b.Render("x") && a.Style.GetForeground() == b.Style.GetForeground()
}
