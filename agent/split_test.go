package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// cutAll cuts a copy of the whole load c for every share of n, as n
// agents given the same flags do.
func cutAll(t *testing.T, c load.Config, n int, requestsGiven bool) []load.Config {
	t.Helper()
	out := make([]load.Config, n)
	for i := range n {
		l := c
		b := &Board{Share: Share{Index: i, Of: n}}
		if err := b.Cut(&l, requestsGiven); err != nil {
			t.Fatalf("share %d of %d: %v", i, n, err)
		}
		out[i] = l
	}
	return out
}

// TestCutWalk: every stage's concurrency split with the remainder spread
// and its rate split n ways, its lengths and duration the whole's, so the
// shares of each stage add up to it; the whole's walk is left as it was;
// a stage that would leave an agent none is refused in one line.
func TestCutWalk(t *testing.T) {
	stages, err := load.ParseStages("concurrency=10,duration=30s;rate=9,duration=1m;concurrency=4,prompt=512,duration=5s")
	if err != nil {
		t.Fatal(err)
	}
	ramp, err := load.Ramp("8:20:12s", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, walk := range [][]load.Stage{stages, ramp} {
		keep := slices.Clone(walk)
		c := load.Config{Knobs: load.Knobs{Concurrency: 3, PromptTokens: 16, OutputTokens: 16}, Stages: walk}
		shares := cutAll(t, c, 4, false)
		if !slices.Equal(walk, keep) {
			t.Fatalf("the whole's walk was changed: %+v", walk)
		}
		for s, st := range walk {
			var conc int
			var rate float64
			for i, l := range shares {
				got := l.Stages[s]
				if got.Duration != st.Duration || got.PromptTokens != st.PromptTokens || got.OutputTokens != st.OutputTokens {
					t.Errorf("stage %d, share %d: %+v, want the whole's duration and lengths %+v", s+1, i, got, st)
				}
				if want := st.Concurrency / 4; got.Concurrency != want && got.Concurrency != want+1 {
					t.Errorf("stage %d, share %d: concurrency %d of %d", s+1, i, got.Concurrency, st.Concurrency)
				}
				conc += got.Concurrency
				rate += got.Rate
			}
			if conc != st.Concurrency || rate != st.Rate {
				t.Errorf("stage %d: shares add to concurrency %d, rate %g; want %d, %g", s+1, conc, rate, st.Concurrency, st.Rate)
			}
		}
		if len(shares[3].Stages) != len(walk) {
			t.Errorf("share 3 walks %d stages, want %d", len(shares[3].Stages), len(walk))
		}
	}
	// The base concurrency 3 leaves share 3 none, but the walk sets it.
	if l := cutAll(t, load.Config{Knobs: load.Knobs{Concurrency: 3}, Stages: stages}, 4, false)[3]; l.Knobs.Concurrency != 0 || l.Stages[0].Concurrency != 2 {
		t.Errorf("share 3: %+v", l)
	}
	small, _ := load.ParseStages("concurrency=8,duration=1s;concurrency=3,duration=1s")
	l := load.Config{Knobs: load.Knobs{Concurrency: 8}, Stages: small}
	err = (&Board{Share: Share{Index: 3, Of: 4}}).Cut(&l, false)
	if err == nil || err.Error() != "agent: stage 2's concurrency of 3 split 4 ways leaves agent 3 none (give each stage 4 or more)" {
		t.Errorf("a stage of none: %v", err)
	}
}

// TestCutPrompts: a dataset's prompts and a trace's arrivals cut by Cut
// are partitions of the whole's; the sessions split as the concurrency;
// a share of none is refused in one line.
func TestCutPrompts(t *testing.T) {
	dir := t.TempDir()
	var ds, tr strings.Builder
	for i := range 10 {
		fmt.Fprintf(&ds, "{\"prompt\": \"p%d\"}\n", i)
		fmt.Fprintf(&tr, "{\"at\": %g, \"prompt_tokens\": %d}\n", float64(i)/4, 10+i)
	}
	dsPath, trPath := filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "t.jsonl")
	if os.WriteFile(dsPath, []byte(ds.String()), 0o600) != nil || os.WriteFile(trPath, []byte(tr.String()), 0o600) != nil {
		t.Fatal("writing")
	}
	d, err := load.LoadDataset(dsPath, 1)
	if err != nil {
		t.Fatal(err)
	}
	trace, err := load.LoadTrace(trPath, load.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shares := cutAll(t, load.Config{Knobs: load.Knobs{Concurrency: 7}, Dataset: d, Sessions: load.Sessions{Turns: 2}}, 3, false)
	seen := map[int]int{}
	for i, l := range shares {
		if want := []int{3, 2, 2}[i]; l.Knobs.Concurrency != want {
			t.Errorf("share %d: %d sessions, want %d", i, l.Knobs.Concurrency, want)
		}
		seen[l.Dataset.Len()]++
	}
	if seen[4] != 1 || seen[3] != 2 || d.Len() != 10 {
		t.Errorf("10 prompts in shares of %v (the whole %d)", seen, d.Len())
	}
	var at []time.Duration
	for i, l := range cutAll(t, load.Config{Knobs: load.Knobs{Concurrency: 2}, Trace: trace, Seed: 5}, 3, false) {
		if want := []int{1, 1, 0}[i]; l.Knobs.Concurrency != want { // the open loop's: no share of it is refused
			t.Errorf("share %d: a replay's concurrency cut to %d, want %d", i, l.Knobs.Concurrency, want)
		}
		for _, en := range l.Trace.Entries {
			at = append(at, en.At)
		}
	}
	slices.Sort(at)
	for k, en := range trace.Entries {
		if at[k] != en.At {
			t.Fatalf("the shares' arrivals %v, want the trace's", at)
		}
	}
	// The prefixes are the whole's (its seed), the prompts each share's.
	for i, l := range cutAll(t, load.Config{Knobs: load.Knobs{Concurrency: 4}, Seed: 5, PrefixTokens: 100}, 2, false) {
		if l.PrefixSeed == nil || *l.PrefixSeed != 5 || l.Seed == 5 {
			t.Errorf("share %d: prefix seed %v, seed %d (the whole's 5)", i, l.PrefixSeed, l.Seed)
		}
	}
	for _, tt := range []struct {
		c    load.Config
		want string
	}{
		{load.Config{Knobs: load.Knobs{Concurrency: 20}, Dataset: d}, "agent: --dataset: 10 prompts split 11 ways leave share 10 none"},
		{load.Config{Trace: trace}, "agent: --trace: 10 arrivals split 11 ways leave share 10 none"},
		{load.Config{Knobs: load.Knobs{Concurrency: 10}, Sessions: load.Sessions{Turns: 2}}, "agent: --sessions 10 split 11 ways leaves agent 10 none"},
	} {
		if err := (&Board{Share: Share{Index: 10, Of: 11}}).Cut(&tt.c, false); err == nil || err.Error() != tt.want {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
}

// TestUnsplit: the flags of a search or a split are refused with why, in
// one line, wherever they stand before "--"; the rest pass (a comparison
// with another endpoint is each agent's: it loads both sides).
func TestUnsplit(t *testing.T) {
	for _, args := range [][]string{{"--find-max", "ttft_p99<=1s"}, {"-c", "4", "--split-by=header:x"}, {"--matrix", "c=1,2"}, {"--split-by", "x"}} {
		err := Unsplit(args)
		if err == nil || !strings.Contains(err.Error(), "does not go with agents") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, args := range [][]string{{"--dataset", "d.jsonl", "--stages", "c=1,duration=1s"}, {"--", "--split-by"}, {"--model", "find-max"}, {"--compare", "http://x"}} {
		if err := Unsplit(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	if Whole("trace") != nil || Whole("find-max") == nil {
		t.Error("Whole")
	}
}
