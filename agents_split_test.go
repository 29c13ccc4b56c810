package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestAgentsSplit: two agents, processes of their own, share a dataset
// and then a trace; run --agents merges them. The sim's own record holds
// the split: every prompt of the dataset sent once over both agents
// (each of a length of its own, so the server's prompt counts name
// them), and the trace's arrivals all replayed, half each.
func TestAgentsSplit(t *testing.T) {
	if os.Getenv("INFERTOP_AGENTS") == "" {
		t.Skip("a stage of its own: make test-agents")
	}
	dir := t.TempDir()
	tokenFile, _ := tokenIn(t, dir)
	var ds, tr strings.Builder
	for i := range 8 {
		fmt.Fprintf(&ds, "{\"prompt\": %q}\n", strings.Repeat("word ", 3*(i+1)))
		fmt.Fprintf(&tr, "{\"at\": %g, \"prompt_tokens\": 16, \"max_tokens\": 8}\n", float64(i)/10)
	}
	dsPath, trPath := filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "t.jsonl")
	if os.WriteFile(dsPath, []byte(ds.String()), 0o600) != nil || os.WriteFile(trPath, []byte(tr.String()), 0o600) != nil {
		t.Fatal("writing the load's files")
	}
	p, _ := sim.Preset("fast")
	follow := func(name string, load ...string) (mergedFile, []sim.Record) {
		srv := simtest.Start(t, p)
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		agents := startAgents(t, sub, tokenFile, 2, append([]string{"--url", srv.URL}, load...)...)
		all := filepath.Join(sub, "all.json")
		var out, errb bytes.Buffer
		if code := run([]string{"run", "--agents", addrsOf(agents), "--agents-token-file", tokenFile, "--agents-plain-loopback", "--agents-poll", "100ms",
			"--agents-result-every", "1s", "--agents-lost-after", "10s", "--json", all}, &out, &errb); code != 0 {
			t.Fatalf("%s: run --agents: exit %d\n%s\n%s", name, code, out.String(), errb.String())
		}
		for i, a := range agents {
			if err := <-a.exited; err != nil {
				t.Errorf("%s: agent %d: %v\n%s", name, i, err, a.stderr.String())
			}
			a.exited <- nil
		}
		return readMerged(t, all), srv.Sim.Records()
	}

	// The dataset: 8 prompts, 4 requests an agent at one in flight, so
	// each sends its 4 prompts once.
	f, recs := follow("dataset", "--dataset", dsPath, "--output-tokens", "8", "-c", "2", "--requests", "8")
	var lengths []int
	for _, r := range recs {
		lengths = append(lengths, r.PromptTokens)
	}
	slices.Sort(lengths)
	if len(lengths) != 8 || len(slices.Compact(slices.Clone(lengths))) != 8 || f.Infertop.Run.Completed != 8 {
		t.Errorf("the dataset over two agents: the server saw prompts of %v tokens, want 8 of lengths their own; merged %d completed",
			lengths, f.Infertop.Run.Completed)
	}

	// The trace: 8 arrivals, 4 an agent, the merged replay all 8.
	f, recs = follow("trace", "--trace", trPath)
	sent := []int64{}
	for _, a := range f.Infertop.Agents.Agents {
		sent = append(sent, a.Sent)
	}
	if tj := f.Infertop.Trace; len(recs) != 8 || tj == nil || tj.Arrivals != 8 || !slices.Equal(sent, []int64{4, 4}) {
		t.Errorf("the trace over two agents: the server saw %d, the merged replay %+v, the agents sent %v", len(recs), tj, sent)
	}
}
