package load

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// TestCacheBust: a dataset's prompts repeat, and with the sim's prefix
// cache on a repeated prompt reads its blocks cached; with CacheBust each
// prompt opens with a marker of its own and the sim caches none of any,
// by its own records. The dataset's prompts are not changed by the
// markers (a later request takes them as they were).
func TestCacheBust(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 8) // 72 words: four blocks of the sim's 16 tokens
	file := filepath.Join(t.TempDir(), "prompts.jsonl")
	jsonl := `{"prompt": "` + long + `"}` + "\n" + `{"messages": [{"role": "system", "content": "` + long + `"}, {"role": "user", "content": "and again"}]}` + "\n"
	if err := os.WriteFile(file, []byte(jsonl), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bust := range []bool{false, true} {
		t.Run(map[bool]string{false: "repeated", true: "busted"}[bust], func(t *testing.T) {
			t.Parallel()
			d, err := LoadDataset(file, 1)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := sim.Preset("fast")
			p.PrefixCacheBlocks = 4096
			const n = 8
			r := startRig(t, p, Knobs{Concurrency: 1, PromptTokens: 1, OutputTokens: 2}, func(c *Config) {
				c.Dataset, c.CacheBust, c.MaxRequests = d, bust, n
			})
			waitFor(t, r.eng, 20*time.Second, "the requests", func(s Snapshot) bool { return s.TotalCompleted+s.TotalFailed >= n })
			r.stop()
			recs := r.sim.Records()
			cached := 0
			for _, rec := range recs {
				if rec.Status != 200 {
					t.Fatalf("a request failed: %+v", rec)
				}
				if rec.CachedTokens > 0 {
					cached++
				}
			}
			switch {
			case len(recs) < n:
				t.Fatalf("%d requests reached the sim, want %d", len(recs), n)
			case bust && cached > 0:
				t.Errorf("cache bust: %d of %d requests read cached tokens", cached, len(recs))
			case !bust && cached < n-2: // all but each prompt's first
				t.Errorf("repeated prompts: %d of %d read cached tokens, want %d", cached, len(recs), n-2)
			}
			for range 2 {
				if req := d.take(); req.Prompt != "" && req.Prompt != long || len(req.Messages) > 0 && req.Messages[0].Content != long {
					t.Errorf("the dataset's prompt changed: %+v", req)
				}
			}
		})
	}
}

// TestCacheBustSessions: a session's marker opens its first message
// once, before what it says without one (the prompts are the seed's),
// and each later turn carries it (the turns share their context); the
// next session has another. A shared prefix is refused beside it.
func TestCacheBustSessions(t *testing.T) {
	t.Parallel()
	run := func(bust bool) []probe.Request {
		sent, _, _, _ := sessionRig(t, probe.OpenAIChat, "/chat/completions", Knobs{Concurrency: 1, PromptTokens: 12, OutputTokens: 4},
			func(c *Config) { c.Sessions, c.CacheBust = Sessions{Turns: 3}, bust }, 6)
		if len(sent) != 6 {
			t.Fatalf("%d requests sent", len(sent))
		}
		return sent
	}
	sent, plain := run(true), run(false)
	marker := func(r probe.Request) string { return strings.Fields(r.Messages[0].Content)[0] }
	for i, r := range sent {
		m := marker(r)
		if r.Messages[0].Content != m+" "+plain[i].Messages[0].Content || strings.Count(strings.Join(contents(r.Messages), " "), m) != 1 {
			t.Errorf("request %d: the marker %q not once, before the message %q: %q", i, m, plain[i].Messages[0].Content, r.Messages)
		}
		if i%3 > 0 && m != marker(sent[i-1]) {
			t.Errorf("request %d, turn %d: marker %q, the turn before %q", i, i%3+1, m, marker(sent[i-1]))
		}
	}
	if marker(sent[0]) == marker(sent[3]) {
		t.Errorf("two sessions opened with the one marker %q", marker(sent[0]))
	}
	var se *SettingError
	if err := (Config{Knobs: Knobs{Concurrency: 1, PromptTokens: 10, OutputTokens: 1}, CacheBust: true, PrefixTokens: 8}).Validate(); !errors.As(err, &se) || se.Setting != SettingCacheBust {
		t.Errorf("a marker with a shared prefix: %v", err)
	}
}

// TestCacheBustMarkers: a run's markers are distinct, and another run's
// of the same seed are others.
func TestCacheBustMarkers(t *testing.T) {
	a, b := newCacheBust(true, 1), newCacheBust(true, 1)
	seen := map[string]bool{}
	for n := range uint64(10000) {
		for _, m := range []string{a.marker(n), a.marker(sessionMarkers + n)} {
			if seen[m] || len(m) > 13 || strings.ContainsAny(m, " \n") {
				t.Fatalf("marker %q: seen %v", m, seen[m])
			}
			seen[m] = true
		}
		if a.marker(n) == b.marker(n) {
			t.Fatalf("two runs of one seed drew the marker %q for request %d", a.marker(n), n)
		}
	}
	if newCacheBust(false, 1) != nil {
		t.Error("markers when none was asked for")
	}
}
