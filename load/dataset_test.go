package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

func TestLoadDataset(t *testing.T) {
	d, err := LoadDataset("testdata/prompts.jsonl", 1)
	if err != nil || d.Len() != 3 {
		t.Fatalf("jsonl: %v, %d prompts", err, d.Len())
	}
	seen := map[string]bool{}
	for range 3 {
		r := d.take()
		if len(r.Messages) == 2 {
			seen["messages"] = r.Messages[1].Content == "Name three primes."
		} else {
			seen[r.Prompt] = true
		}
	}
	if !seen["messages"] || !seen["What is the capital of France?"] || !seen["Write a haiku about load testing."] {
		t.Fatalf("prompts %v", seen)
	}
	s, err := LoadDataset("testdata/sharegpt.json", 1)
	if err != nil || s.Len() != 2 {
		t.Fatalf("sharegpt: %v, %d prompts", err, s.Len())
	}
	// The seed fixes the order.
	order := func(seed uint64) string {
		d, _ := LoadDataset("testdata/prompts.jsonl", seed)
		out := ""
		for range 3 {
			out += d.take().Prompt + "|"
		}
		return out
	}
	if first, again := order(3), order(3); first != again {
		t.Fatal("the same seed shuffled differently")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"bad.jsonl": "{\"prompt\": 1}\n", "empty.jsonl": "\n\n", "none.jsonl": "{\"text\":\"x\"}\n", "bad.json": "[{"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := LoadDataset(p, 1); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := LoadDataset(filepath.Join(dir, "missing.jsonl"), 1); err == nil {
		t.Error("a missing file accepted")
	}
}

func TestEngineUsesDataset(t *testing.T) {
	d, _ := LoadDataset("testdata/prompts.jsonl", 1)
	var mu sync.Mutex
	var got []probe.Request
	do := func(ctx context.Context, r probe.Request) probe.Result {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		return probe.Result{Start: time.Now(), E2E: time.Millisecond, OutputTokens: 1, InputEstimated: true}
	}
	e, _ := New(Config{Do: do, Dataset: d, Knobs: Knobs{Concurrency: 1, PromptTokens: 999, OutputTokens: 7}, MaxRequests: 6})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	s := waitFor(t, e, 5*time.Second, "6 requests", func(s Snapshot) bool { return s.TotalCompleted == 6 })
	cancel()
	<-done
	if s.Dataset != 3 {
		t.Fatalf("snapshot dataset %d", s.Dataset)
	}
	mu.Lock()
	defer mu.Unlock()
	if got[0].MaxTokens != 7 || len(got) != 6 {
		t.Fatalf("requests %+v", got)
	}
	for i := range 3 { // cycled in the same order
		if got[i].Prompt != got[i+3].Prompt || len(got[i].Messages) != len(got[i+3].Messages) {
			t.Fatalf("request %d and %d differ", i, i+3)
		}
	}
}

func TestDatasetEmptyPrompt(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		`{"prompt":""}`:   "line 1: the prompt is empty",
		`{"messages":[]}`: "line 1: the prompt is empty",
		`{"text":"hi"}`:   `line 1: neither "prompt" nor "messages"`,
	} {
		path := dir + "/d.jsonl"
		os.WriteFile(path, []byte(body+"\n"), 0o644)
		if _, err := LoadDataset(path, 1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// TestPrefixLongerThanPrompt: a shared prefix longer than the prompt is
// honoured (the prompt grows to hold it), never silently dropped.
func TestPrefixLongerThanPrompt(t *testing.T) {
	g := NewPromptGen(1, 100)
	a, b := g.Next(10), g.Next(10)
	if n := len(strings.Fields(a)); n < 100 {
		t.Fatalf("a 10-token prompt with a 100-token prefix has %d words", n)
	}
	if strings.Join(strings.Fields(a)[:100], " ") != strings.Join(strings.Fields(b)[:100], " ") {
		t.Fatal("the prefix is not shared")
	}
}
