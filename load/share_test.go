package load

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDatasetShare: the n shares of a dataset are a partition of it (the
// union the whole, no prompt twice), each in the whole's seeded order,
// the first k of every share the whole's first n·k; a ShareGPT file's
// conversations are partitioned alike, never split; a share of nothing
// is refused.
func TestDatasetShare(t *testing.T) {
	dir := t.TempDir()
	var jl, sg strings.Builder
	sg.WriteString("[")
	for i := range 23 {
		fmt.Fprintf(&jl, "{\"prompt\": \"prompt %d\"}\n", i)
		if i > 0 {
			sg.WriteString(",")
		}
		fmt.Fprintf(&sg, `{"conversations": [{"from": "human", "value": "c%d t1"}, {"from": "gpt", "value": "a"}, {"from": "human", "value": "c%d t2"}]}`, i, i)
	}
	sg.WriteString("]")
	for name, body := range map[string]string{"p.jsonl": jl.String(), "c.json": sg.String()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		whole, err := LoadDataset(path, 42)
		if err != nil {
			t.Fatal(err)
		}
		var order []string // the whole's own order: one machine's
		for range whole.Len() {
			order = append(order, whole.take().Prompt)
		}
		var convs []string
		for range whole.Conversations() {
			convs = append(convs, strings.Join(whole.takeConversation(), "|"))
		}
		for _, n := range []int{1, 2, 4, 23} {
			var union, unionC []string
			for i := range n {
				d, err := whole.Share(i, n)
				if err != nil {
					t.Fatalf("%s: share %d of %d: %v", name, i, n, err)
				}
				var got []string
				for range d.Len() {
					got = append(got, d.take().Prompt)
				}
				for p, prompt := range got { // the whole's order, every n-th from i
					if want := order[i+p*n]; prompt != want {
						t.Fatalf("%s: share %d of %d sends %q at %d, want %q", name, i, n, prompt, p, want)
					}
				}
				if again := d.take().Prompt; again != got[0] {
					t.Errorf("%s: share %d of %d does not cycle through its own: %q after its last", name, i, n, again)
				}
				union = append(union, got...)
				for range d.Conversations() {
					c := d.takeConversation()
					if len(c) != 2 {
						t.Errorf("%s: a conversation split: %v", name, c)
					}
					unionC = append(unionC, strings.Join(c, "|"))
				}
			}
			slices.Sort(union)
			if want := slices.Sorted(slices.Values(order)); !slices.Equal(union, want) {
				t.Errorf("%s: %d shares send %v, want the dataset once: %v", name, n, union, want)
			}
			slices.Sort(unionC)
			if want := slices.Sorted(slices.Values(convs)); !slices.Equal(unionC, want) {
				t.Errorf("%s: %d shares' conversations %v, want %v", name, n, unionC, want)
			}
		}
		if _, err := whole.Share(23, 24); err == nil || !strings.Contains(err.Error(), "23 prompts split 24 ways leave share 23 none") {
			t.Errorf("%s: a share of nothing: %v", name, err)
		}
		if _, err := whole.Share(2, 2); err == nil {
			t.Errorf("%s: index 2 of 2 taken", name)
		}
	}
}

// TestTraceShare: the n shares of a trace, each arrival at its own time,
// merge to the trace's arrivals; the span, the lengths' knobs (the
// whole's means) and the prefix blocks' seed are the whole's on every
// share, the rates add up to the trace's.
func TestTraceShare(t *testing.T) {
	var b strings.Builder
	for i := range 17 {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [%d]}\n", i*250+i%3*40, 100+i*37, 10+i, i%4)
	}
	whole, err := parseTrace([]byte(b.String()), TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in, out, rate := whole.means()
	for _, n := range []int{1, 3, 17} {
		var merged []TraceEntry
		sum := 0.0
		for i := range n {
			s, err := whole.Share(i, n, 99)
			if err != nil {
				t.Fatal(err)
			}
			if s.Span != whole.Span || s.Name != whole.Name {
				t.Errorf("share %d of %d: span %v, want the whole's %v", i, n, s.Span, whole.Span)
			}
			c := Config{Trace: s, Seed: 12345} // the agent's own seed
			if err := c.prepareTrace(); err != nil {
				t.Fatal(err)
			}
			if c.Knobs.PromptTokens != in || c.Knobs.OutputTokens != out {
				t.Errorf("share %d of %d: lengths %d/%d, want the whole's means %d/%d", i, n, c.Knobs.PromptTokens, c.Knobs.OutputTokens, in, out)
			}
			if r := newReplay(&c); r.seed != 99 {
				t.Errorf("share %d of %d: blocks from seed %d, want the whole's 99", i, n, r.seed)
			}
			_, _, r := s.means()
			sum += r
			merged = append(merged, s.Entries...)
		}
		slices.SortStableFunc(merged, func(a, b TraceEntry) int { return int(a.At - b.At) })
		if len(merged) != len(whole.Entries) {
			t.Fatalf("%d shares: %d arrivals, want %d", n, len(merged), len(whole.Entries))
		}
		for k := range merged {
			a, w := merged[k], whole.Entries[k]
			if a.At != w.At || a.Input != w.Input || a.Output != w.Output || !slices.Equal(a.HashIDs, w.HashIDs) {
				t.Fatalf("%d shares: arrival %d is %+v, want %+v", n, k, a, w)
			}
		}
		if d := sum - rate; d > 1e-9 || d < -1e-9 {
			t.Errorf("%d shares: rates add to %v, want %v", n, sum, rate)
		}
	}
	if _, err := whole.Share(17, 18, 1); err == nil || !strings.Contains(err.Error(), "17 arrivals split 18 ways leave share 17 none") {
		t.Errorf("a share of nothing: %v", err)
	}
	// The first arrival of share 1 stays at its own time, not at zero.
	s, _ := whole.Share(1, 3, 1)
	if s.Entries[0].At != 290*time.Millisecond {
		t.Errorf("share 1's first arrival at %v, want 290ms", s.Entries[0].At)
	}
}
