package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/tools/tmuxterm"
)

// TestCompareDashboardInTmux runs `infertop --compare` as a person would,
// in a terminal of 80x24: the embedded sim as the baseline, a second sim
// started here as the canary. The screen shows the canary and a verdict
// line; K doubles the concurrency on both sides (each engine's own knobs,
// read off the screen); s saves both sides' reports and the comparison;
// q quits and the comparison table follows.
func TestCompareDashboardInTmux(t *testing.T) {
	t.Parallel()
	self := selfForTmux(t)
	// Both sims the fast preset with a 5 ms step: at no model cost the two
	// loads at concurrency 16 took every core, and the s key's save of
	// four reports 3.5-5 s beside them.
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	p.StepBase = 5 * time.Millisecond
	canary := simtest.Start(t, p)
	dir := t.TempDir()
	term := tmuxterm.New(t, fmt.Sprintf("infertop-compare-%d", os.Getpid()), 80, 24,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms --sim-preset fast --sim-step-base 5ms --server-metrics off --compare %s --report-dir %q; echo EXITED $?; sleep 30",
			self, canary.URL, dir))
	// The verdict line is the header's third line: what the comparison
	// says, from its first computation on.
	verdict := regexp.MustCompile(`(?m)^(canary (slower|faster|failing)|no difference found yet)`)
	s := term.Wait("a verdict line", term.Screen, verdict.MatchString)
	for _, want := range []string{"infertop", "concurrency 8", "Latency", "base", "canary", "Δ", "In flight"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	term.Keys("K")
	// Both engines report their own knobs: the header and the in-flight
	// panel's base row are the baseline's, its canary row the canary's.
	sides := func(s string) bool {
		return strings.Contains(s, "concurrency 16") &&
			regexp.MustCompile(`(?m)base +\d+ of 16`).MatchString(s) && regexp.MustCompile(`(?m)canary +\d+ of 16`).MatchString(s)
	}
	term.Wait("concurrency 16 on both sides", term.Screen, sides)
	term.Keys("s")
	term.Wait("the save", term.Screen, func(s string) bool { return strings.Contains(s, ".compare.txt") })
	for _, pattern := range []string{"infertop-*[0-9].json", "infertop-*.canary.json", "infertop-*.canary.html", "infertop-*.compare.txt"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) != 1 {
			t.Errorf("%s: saved %q", pattern, m)
		}
	}
	// A search would drive the baseline's knobs alone: none in a pair.
	term.Keys("f")
	term.Wait("the search refused", term.Screen, func(s string) bool { return strings.Contains(s, "capacity search is not available") })
	term.Keys("q")
	s = term.Wait("a clean exit", term.Screen, func(s string) bool { return strings.Contains(s, "EXITED 0") })
	if !strings.Contains(s, "canary slower") && !strings.Contains(s, "no difference found") && !strings.Contains(s, "canary faster") {
		t.Errorf("no comparison printed at the end:\n%s", s)
	}
}

// TestSplitDashboardInTmux runs `infertop --split-by` as a person would,
// in a terminal of 80x24, against one URL alternating two backends by
// X-Backend, the new one three times as slow (rollingServer): the verdict line
// names the new group, the groups panel has a row for each (the old one
// the baseline, which answered first), s saves the report with the
// groups' comparison, and q prints the groups' tables. The bootstrap
// judges (--verdict bootstrap): the dashboard's flow is under test, not
// the sequences' power, which on a busy machine left the new group
// undecided for a minute (TestRunSplit's fail-fast case has them).
func TestSplitDashboardInTmux(t *testing.T) {
	t.Parallel()
	self := selfForTmux(t)
	srv := rollingServer(t, 3)
	dir := t.TempDir()
	term := tmuxterm.New(t, fmt.Sprintf("infertop-split-%d", os.Getpid()), 80, 24,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms --url %s/v1 --api openai-chat --model m --server-metrics off -c 8 --prompt-tokens 8 --output-tokens 4 --split-by header:X-Backend --compare-min-seconds 3 --verdict bootstrap --report-dir %q; echo EXITED $?; sleep 30",
			self, srv.URL, dir))
	rows := func(s string) bool {
		return regexp.MustCompile(`(?m)^ 1 old \(base`).MatchString(s) && regexp.MustCompile(`(?m)^ 2 new +\d+ `).MatchString(s)
	}
	// The verdict line is the header's third line; once judged, the new
	// group is slower.
	verdict := regexp.MustCompile(`(?m)^group 2 \(new\) slower: `)
	s := term.Wait("the groups and a verdict", term.Screen, func(s string) bool { return rows(s) && verdict.MatchString(s) })
	for _, want := range []string{"Groups · by header X-Backend", "Latency", "In flight", "TTFT p99"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	term.Keys("s")
	term.Wait("the save", term.Screen, func(s string) bool { return strings.Contains(s, ".compare.txt") })
	saved, _ := filepath.Glob(filepath.Join(dir, "infertop-*.compare.txt"))
	if len(saved) != 1 {
		t.Errorf("saved %q", saved)
	} else if b, _ := os.ReadFile(saved[0]); !strings.Contains(string(b), "baseline: group 1 (old)") {
		t.Errorf("the saved table:\n%s", b)
	}
	term.Keys("q")
	s = term.Wait("a clean exit", term.Scrollback, func(s string) bool { return strings.Contains(s, "EXITED 0") })
	for _, want := range []string{"Split by header:X-Backend", "baseline: group 1 (old)", "Comparison · group 1 (old) · group 2 (new)"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q printed at the end:\n%s", want, s)
		}
	}
}
