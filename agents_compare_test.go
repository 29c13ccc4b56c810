package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestAgentsCompare: two agents, each loading a baseline sim and a
// canary sim four times as slow (--compare: its share on both sides),
// followed by run --agents --agents-compare: the live verdict over the
// two merges calls the canary slower and breaches the regression (exit
// 1), --fail-fast ending the agents' runs (both sides), its JSON holds the comparison and the canaries' merge, each side's
// requests counted over both agents (sent = completed + failed +
// incomplete) as their own results count them. A follower without
// --agents-compare refuses them by name.
func TestAgentsCompare(t *testing.T) {
	if os.Getenv("INFERTOP_AGENTS") == "" {
		t.Skip("a stage of its own: make test-agents")
	}
	p, _ := sim.Preset("fast") // as TestRunCompare's: steps of 10 and 40 ms
	p.StepBase, p.Jitter = 10*time.Millisecond, 0.05
	slow := p
	slow.StepBase = 40 * time.Millisecond
	b, c := simtest.Start(t, p), simtest.Start(t, slow)
	dir := t.TempDir()
	tokenFile, _ := tokenIn(t, dir)
	// Their --duration only a bound: --fail-fast ends their runs at the
	// first live breach of the regression.
	agents := startAgents(t, dir, tokenFile, 2, "--url", b.URL, "--compare", c.URL, "-c", "8", "--duration", "2m", "--prompt-tokens", "16",
		"--output-tokens", "4")
	follow := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"run", "--agents", addrsOf(agents), "--agents-token-file", tokenFile, "--agents-plain-loopback",
			"--agents-poll", "100ms", "--agents-result-every", "1s"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := follow("--agents-lost-after", "2s")
	if code != 2 || !strings.Contains(errs, "it compares a canary (its --compare): follow it with --agents-compare") {
		t.Errorf("a follower without --agents-compare: exit %d\n%s\n%s", code, out, errs)
	}
	all := filepath.Join(dir, "all.json")
	start := time.Now()
	code, out, errs = follow("--agents-compare", "--agents-lost-after", "10s", "--regression", "tpot_p50<+10%", "--compare-min-seconds", "3",
		"--fail-fast", "--json", all)
	t.Logf("%s\n%s", errs, out)
	if code != 1 {
		for i, a := range agents {
			t.Logf("agent %d:\n%s", i, a.stderr.String())
		}
		t.Fatalf("exit %d, want 1 (the canary regressed)", code)
	}
	for _, want := range []string{"== baseline ==", "== canary ==", "Comparison · baseline agents", "tpot_p50<+10%: breached", "canary slower"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the summary", want)
		}
	}
	if !strings.Contains(errs, "the canary regressed (--fail-fast)") {
		t.Errorf("no --fail-fast end in\n%s", errs)
	}
	bound := time.NewTimer(time.Minute) // their --duration is 2 m: a bound, not a wait
	defer bound.Stop()
	for i, a := range agents {
		select {
		case err := <-a.exited: // each ends once both its final results are fetched
			if err != nil {
				t.Errorf("agent %d: %v\n%s", i, err, a.stderr.String())
			}
			a.exited <- nil
		case <-bound.C:
			t.Fatalf("agent %d still runs %v after the follower started: --fail-fast did not end its run", i, time.Since(start).Round(time.Second))
		}
	}
	f := readMerged(t, all)
	pair := f.Infertop.Compare
	if pair == nil || pair.Pair == nil || !pair.Pair.Regressed || pair.Pair.Baseline.URL != b.URL+"/chat/completions" {
		t.Fatalf("infertop.compare: %+v", pair)
	}
	var canary mergedFile
	if err := json.Unmarshal(pair.Pair.Canary, &canary); err != nil {
		t.Fatal(err)
	}
	// Each side's merge counts every request its agents' own results do.
	for side, merged := range []report.PhaseJSON{f.Infertop.Run, canary.Infertop.Run} {
		var sent, completed int64
		for _, a := range agents {
			own := readMerged(t, a.json)
			r := own.Infertop.Run
			if side == 1 {
				var oc mergedFile
				if own.Infertop.Compare == nil || own.Infertop.Compare.Pair == nil || json.Unmarshal(own.Infertop.Compare.Pair.Canary, &oc) != nil {
					t.Fatalf("agent's %s: no canary inside", a.json)
				}
				r = oc.Infertop.Run
			}
			sent, completed = sent+r.Sent, completed+r.Completed
		}
		if merged.Sent != merged.Completed+merged.Failed+merged.Incomplete || merged.Sent != sent || merged.Completed != completed || sent == 0 {
			t.Errorf("side %d: merged sent %d = %d + %d + %d; the agents' own sent %d, completed %d", side, merged.Sent, merged.Completed,
				merged.Failed, merged.Incomplete, sent, completed)
		}
	}
}
