package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// synthGroups feeds secs seconds of one load into g: perSec requests a
// second, each answered by one of names at random (a balancer), with
// log-normal latencies and a factor per group and second (each backend its
// own batch); the latencies of the group named slow are scaled by factor.
func synthGroups(g *Groups, rng *rand.Rand, t0 time.Time, from, secs, perSec int, names []string, slow string, factor float64) {
	for sec := from; sec < from+secs; sec++ {
		batch := map[string]float64{}
		for _, n := range names {
			batch[n] = math.Exp(0.1 * rng.NormFloat64())
		}
		for range perSec {
			name := names[rng.IntN(len(names))]
			scale := 1.0
			if name == slow {
				scale = factor
			}
			v := 0.1 * batch[name] * math.Exp(0.15*rng.NormFloat64()) * scale
			ttft := time.Duration(v * float64(time.Second))
			res := probe.Result{HasTTFT: true, TTFT: ttft, E2E: 10 * ttft, OutputTokens: 128, Group: name}
			if rng.Float64() < 0.01 {
				res.Class = probe.HTTP5xx
			}
			now := t0.Add(time.Duration(sec)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
			g.Observe(load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, now)
		}
	}
}

func groupWorse(gr Grouping) bool {
	for _, c := range gr.Newer {
		if worse(c.Comparison) {
			return true
		}
	}
	return false
}

// TestGroupsFalsePositives: two groups of one load drawn from one
// distribution (60 s at 12 requests a second, about 6 a group) are
// called worse in at most 5 of 100 seeded runs.
func TestGroupsFalsePositives(t *testing.T) {
	if raceDetector {
		t.Skip("pure arithmetic: make test runs it without -race")
	}
	t0 := time.Now()
	final := 0
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 3))
		g := NewGroups(DefaultStats(), 0, 0, t0)
		synthGroups(g, rng, t0, 0, 60, 12, []string{"fp_a", "fp_b"}, "", 1)
		if gr := g.Compare(Options{Seed: seed, Resamples: 500}); groupWorse(gr) {
			final++
			t.Logf("seed %d: %s", seed, gr.Line())
		}
	}
	t.Logf("false positives: %d of 100", final)
	if final > 5 {
		t.Errorf("%d false positives of 100", final)
	}
}

// TestGroupsDetection: a group 20 % slower is called slower, by name.
func TestGroupsDetection(t *testing.T) {
	t0 := time.Now()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 4))
		g := NewGroups(DefaultStats(), 0, 0, t0)
		// The old group answers first: the baseline (a failure, so no
		// latency enters).
		g.Observe(load.Record{Result: probe.Result{Group: "fp_old", Class: probe.HTTP5xx}, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0)
		at := -1
		var gr Grouping
		for sec := 0; sec < 60 && at < 0; sec++ {
			synthGroups(g, rng, t0, sec, 1, 12, []string{"fp_old", "fp_new"}, "fp_new", 1.2)
			if sec >= MinSeconds {
				if gr = g.Compare(Options{Seed: seed, Resamples: 500}); groupWorse(gr) {
					at = sec
				}
			}
		}
		if at < 0 {
			t.Errorf("seed %d: not called in 60 s: %s", seed, gr.Line())
			continue
		}
		if want := "group 2 (fp_new) slower: "; !strings.HasPrefix(gr.Line(), want) {
			t.Errorf("seed %d: line %q, want it to start %q", seed, gr.Line(), want)
		}
		t.Logf("seed %d: called at %d s: %s", seed, at, gr.Line())
	}
}

// TestGroupsBounded: a server with a new value every request names
// probe.MaxGroups groups (also when asked for more: the exporter's
// series name no more), the rest are "other"; requests without a group
// are counted apart; the baseline is the first seen and stays across a
// reset.
func TestGroupsBounded(t *testing.T) {
	t0 := time.Now()
	g := NewGroups(DefaultStats(), 64, 2*probe.MaxGroups, t0)
	rec := func(name string, ok bool, sec int) {
		r := probe.Result{HasTTFT: true, TTFT: time.Millisecond, E2E: 2 * time.Millisecond, Group: name}
		if !ok {
			r.Class = probe.HTTP5xx
		}
		g.Observe(load.Record{Result: r, Phase: 1}, t0.Add(time.Duration(sec)*time.Second))
	}
	for i := range 10000 {
		rec(fmt.Sprintf("fp_%d", i), true, i/100)
	}
	rec("", false, 1)
	rec("", true, 1)
	gr := g.Compare(Options{Resamples: 50})
	if gr.Baseline.Name != "fp_0" || gr.Baseline.Index != 1 || len(gr.Newer) != probe.MaxGroups {
		t.Fatalf("baseline %+v, %d newer", gr.Baseline, len(gr.Newer))
	}
	last := gr.Newer[len(gr.Newer)-1]
	if last.Group.Name != OtherGroup || last.Group.Index != 0 || last.Group.Requests != 10000-probe.MaxGroups {
		t.Errorf("other: %+v", last.Group)
	}
	if gr.Ungrouped != 2 || gr.UngroupedFailed != 1 {
		t.Errorf("ungrouped %d (%d failed)", gr.Ungrouped, gr.UngroupedFailed)
	}
	if len(g.sides) != probe.MaxGroups+1 || len(g.names) != probe.MaxGroups {
		t.Errorf("%d slots, %d names", len(g.sides), len(g.names))
	}
	g.Reset(t0.Add(time.Hour))
	rec("fp_3", true, 3600)
	if gr := g.Compare(Options{Resamples: 50}); gr.Baseline.Name != "fp_0" || gr.Newer[2].Group.Name != "fp_3" {
		t.Errorf("after a reset: %+v %+v", gr.Baseline, gr.Newer[2].Group)
	}
}

// TestGroupsSharedSeconds: only the seconds both groups had requests in
// are compared: a new group from second 30 of 60 is judged over 30.
func TestGroupsSharedSeconds(t *testing.T) {
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(1, 5))
	g := NewGroups(DefaultStats(), 0, 0, t0)
	synthGroups(g, rng, t0, 0, 30, 12, []string{"old"}, "", 1)
	synthGroups(g, rng, t0, 30, 30, 12, []string{"old", "new"}, "", 1)
	gr := g.Compare(Options{Resamples: 200})
	if len(gr.Newer) != 1 {
		t.Fatalf("%d newer groups", len(gr.Newer))
	}
	for _, r := range gr.Newer[0].Results {
		if r.Seconds != 30 {
			t.Errorf("%s over %d s, want 30", r.Stat.Name, r.Seconds)
		}
	}
}

// TestGroupingReport: the table names the groups, sanitised, and the JSON
// holds the baseline group and each newer one with the Pair's metrics.
func TestGroupingReport(t *testing.T) {
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(2, 6))
	regs, err := ParseRegressions([]string{"ttft_p50<+10%"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGroups(Stats(regs), 0, 0, t0)
	// fp_a first: the baseline.
	g.Observe(load.Record{Result: probe.Result{Group: "fp_a", Class: probe.HTTP5xx}, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0)
	synthGroups(g, rng, t0, 0, 30, 12, []string{"fp_a", "fp_\x1b]0;x\x07b"}, "fp_\x1b]0;x\x07b", 1.5)
	gr := g.Compare(Options{Regressions: regs, Resamples: 200})
	gr.By = "field:system_fingerprint"
	if !gr.Breached() {
		t.Fatalf("not breached: %s", gr.Line())
	}
	var b bytes.Buffer
	if err := gr.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if strings.Contains(text, "\x1b") {
		t.Errorf("an escape reached the table:\n%q", text)
	}
	for _, want := range []string{"Split by field:system_fingerprint", "baseline: group 1 (", "group 2 (fp_\\x1b]0;x\\ab)", "ttft_p50<+10%: breached", "regressed", "  worse\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	raw, err := json.Marshal(gr.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		SplitBy  string `json:"split_by"`
		Baseline struct {
			Group string `json:"group"`
		} `json:"baseline_group"`
		Groups []struct {
			Group     string       `json:"group"`
			Index     int          `json:"index"`
			Metrics   []ResultJSON `json:"metrics"`
			Regressed bool         `json:"regressed"`
		} `json:"groups"`
		Regressed bool `json:"regressed"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	if j.SplitBy != "field:system_fingerprint" || j.Baseline.Group == "" || len(j.Groups) != 1 || j.Groups[0].Index != 2 ||
		len(j.Groups[0].Metrics) != len(Stats(regs)) || !j.Groups[0].Regressed || !j.Regressed {
		t.Errorf("JSON %s", raw)
	}
}

// TestGroupsNamedBaseline: with the baseline named, the group of that
// name is the baseline (group 1) although another answered first, and
// keeps its slot from the start: its samples are compared with the
// newer group's (20 % slower) by name; before it answers, nothing is
// compared and the line says what it waits for.
func TestGroupsNamedBaseline(t *testing.T) {
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(7, 8))
	g := NewGroupsWithBaseline(DefaultStats(), 0, 0, t0, "fp_old")
	// The new group answers first.
	g.Observe(load.Record{Result: probe.Result{Group: "fp_new", HasTTFT: true, TTFT: time.Millisecond, E2E: 2 * time.Millisecond},
		Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0)
	gr := g.Compare(Options{Resamples: 50})
	if gr.Baseline.Name != "fp_old" || gr.Baseline.Index != 1 || gr.Baseline.Requests != 0 || !gr.Named ||
		len(gr.Newer) != 1 || gr.Newer[0].Group.Name != "fp_new" || gr.Newer[0].Group.Index != 2 || gr.Breached() {
		t.Fatalf("before the baseline answers: %+v", gr)
	}
	if want := "waiting for the baseline group 1 (fp_old): nothing to compare yet (requests: group 2 (fp_new) 1)"; gr.Line() != want {
		t.Errorf("line %q, want %q", gr.Line(), want)
	}
	var b bytes.Buffer
	if err := gr.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "baseline: group 1 (fp_old), 0 requests (named by --baseline-group)") ||
		strings.Contains(s, "Comparison ·") || !strings.Contains(s, "waiting for the baseline") {
		t.Errorf("table before the baseline answers:\n%s", s)
	}
	synthGroups(g, rng, t0, 0, 40, 12, []string{"fp_new", "fp_old"}, "fp_new", 1.2)
	gr = g.Compare(Options{Resamples: 500})
	if gr.Baseline.Name != "fp_old" || gr.Baseline.Requests == 0 || len(gr.Newer) != 1 || gr.Newer[0].Group.Name != "fp_new" {
		t.Fatalf("baseline %+v, newer %+v", gr.Baseline, gr.Newer)
	}
	if want := "group 2 (fp_new) slower: "; !strings.HasPrefix(gr.Line(), want) {
		t.Errorf("line %q, want it to start %q", gr.Line(), want)
	}
	if j := gr.JSON().BaselineGroup; j == nil || j.Group != "fp_old" || !j.Named {
		t.Errorf("JSON baseline_group %+v", j)
	}
	// The reservation counts among the named groups: three more named,
	// the rest other.
	for i := range 10 {
		g.Observe(load.Record{Result: probe.Result{Group: fmt.Sprintf("fp_%d", i)}, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0.Add(40*time.Second))
	}
	if len(g.names) != probe.MaxGroups || g.names[0] != "fp_old" || g.names[1] != "fp_new" {
		t.Errorf("names %q", g.names)
	}
}

// TestGroupsFigures: each group's own statistics over the samples it
// holds, in the split's order, N the samples behind each.
func TestGroupsFigures(t *testing.T) {
	t0 := time.Now()
	g := NewGroups(DefaultStats(), 0, 0, t0)
	for i := range 100 {
		for _, grp := range []struct {
			name string
			f    time.Duration
		}{{"a", 1}, {"b", 2}} {
			res := probe.Result{Group: grp.name, HasTTFT: true, TTFT: time.Duration(i+1) * time.Millisecond * grp.f,
				E2E: time.Duration(i+1) * 10 * time.Millisecond * grp.f, OutputTokens: 1}
			if grp.name == "b" && i%10 == 0 {
				res = probe.Result{Group: grp.name, Class: probe.HTTP5xx}
			}
			g.Observe(load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, t0.Add(time.Duration(i)*100*time.Millisecond))
		}
	}
	gr := g.Compare(Options{Resamples: 50})
	want := map[string][2]float64{ // group a's, group b's (90 of its 100 succeeded: 2…200 ms less 2, 22, …, 182)
		"ttft_p50": {50, 2 * 50}, "ttft_p99": {99, 2 * 100}, "e2el_p99": {990, 2 * 1000}, "error_rate": {0, 0.1},
	}
	for i, grp := range []Group{gr.Baseline, gr.Newer[0].Group} {
		if len(grp.Figures) != len(DefaultStats()) {
			t.Fatalf("%s: %d figures", grp.Name, len(grp.Figures))
		}
		for _, f := range grp.Figures {
			w, ok := want[f.Stat.Name]
			if !ok {
				continue
			}
			if math.Abs(f.Value-w[i]) > 1e-9 {
				t.Errorf("%s %s = %g, want %g", grp.Name, f.Stat.Name, f.Value, w[i])
			}
			if n := f.N; f.Stat.ErrorRate && n != 100 || !f.Stat.ErrorRate && n != 100-10*i {
				t.Errorf("%s %s: N %d", grp.Name, f.Stat.Name, n)
			}
		}
	}
}
