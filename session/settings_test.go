package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
)

// TestPairKeepsEachSettingsVerdict: a pair judged under one setting, then
// a knob change: the comparison starts over, and the save (the s key's)
// still holds the verdict of the setting that ran, as the phase table
// holds its figures. On main the saved table said only "not enough data"
// of the new setting, and the judged one was kept nowhere.
func TestPairKeepsEachSettingsVerdict(t *testing.T) {
	p := startPair(t, quick(t, 1), quick(t, 1),
		load.Config{Knobs: load.Knobs{Concurrency: 8, PromptTokens: 64, OutputTokens: 16}, Seed: 1}, compare.Options{MinSeconds: 2})
	judged := func(c compare.Comparison) bool { return !strings.Contains(c.Line(), "not enough data") }
	c, took := waitVerdict(p, 60*time.Second, judged)
	if !judged(c) {
		t.Fatalf("not judged in %v: %s", took, c.Line())
	}
	p.Controller().Update(func(k *load.Knobs) { k.Concurrency = 4 })
	// The first look under the new setting: the old one's verdict is
	// final once the comparison has started over.
	waitVerdict(p, 30*time.Second, func(c compare.Comparison) bool { return strings.Contains(c.Line(), "not enough data") })
	dir := t.TempDir()
	if _, err := p.Save(context.Background(), p.Runner(compare.Baseline).Latest(), dir); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.compare.txt"))
	if len(tables) != 1 {
		t.Fatalf("tables %v", tables)
	}
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "Earlier settings, each its last live verdict:\n  concurrency 8, prompt 64, output 16: ")
	if i < 0 {
		t.Fatalf("the judged setting's verdict is not in the saved table:\n%s", text)
	}
	if line := strings.SplitN(text[i:], "\n", 3)[1]; strings.Contains(line, "not enough data") {
		t.Fatalf("the setting's verdict kept is not its last: %s\n%s", line, text)
	}
}
