package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/tools/tmuxterm"
)

// TestCompareDashboardInTmux runs `infertop --compare` as a person would,
// in a terminal of 80x24: the embedded sim as the baseline, a second sim
// started here as the canary. The screen shows the canary and a verdict
// line; K doubles the concurrency on both sides (each engine's own knobs,
// read off the screen); q quits and the comparison table follows.
func TestCompareDashboardInTmux(t *testing.T) {
	self := selfForTmux(t)
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	canary := simtest.Start(t, p)
	term := tmuxterm.New(t, fmt.Sprintf("infertop-compare-%d", os.Getpid()), 80, 24,
		fmt.Sprintf("env INFERTOP_TEST_MAIN=1 TERM=xterm-256color %q --tick 100ms --sim-preset fast --server-metrics off --compare %s; echo EXITED $?; sleep 30",
			self, canary.URL))
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
	term.Keys("q")
	s = term.Wait("a clean exit", term.Screen, func(s string) bool { return strings.Contains(s, "EXITED 0") })
	if !strings.Contains(s, "canary slower") && !strings.Contains(s, "no difference found") && !strings.Contains(s, "canary faster") {
		t.Errorf("no comparison printed at the end:\n%s", s)
	}
}
