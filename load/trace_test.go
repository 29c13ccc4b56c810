package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
)

func TestLoadTraceFormats(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		file, model          string
		format               string
		n, skipped, filtered int
		second               TraceEntry
		span                 time.Duration
	}{
		{"mooncake.jsonl", "", TraceMooncake, 5, 0, 0, TraceEntry{At: 40 * ms, Input: 1300, Output: 8, HashIDs: []int64{0, 1, 3}}, 262500 * time.Microsecond},
		{"azure.csv", "", TraceAzure, 4, 0, 0, TraceEntry{At: 4314579 * time.Microsecond, Input: 396, Output: 109}, 0},
		{"burstgpt.csv", "", TraceBurstGPT, 3, 2, 0, TraceEntry{At: 113 * time.Second, Input: 417, Output: 30}, 0},
		{"burstgpt.csv", "chatgpt", TraceBurstGPT, 2, 2, 1, TraceEntry{At: 129 * time.Second, Input: 1360, Output: 171}, 0},
		{"plain.jsonl", "", TraceJSONL, 3, 0, 0, TraceEntry{At: 250 * ms, Input: 8, Output: 24, Prompt: "Write a haiku about latency and the tail."}, 750 * ms},
	} {
		tr, err := LoadTrace(filepath.Join("testdata", "trace", c.file), TraceOptions{Model: c.model})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if tr.Format != c.format || len(tr.Entries) != c.n || tr.Skipped != c.skipped || tr.Filtered != c.filtered || tr.Name != c.file {
			t.Errorf("%s: format %s, %d entries, %d skipped, %d filtered; want %s, %d, %d, %d", c.file, tr.Format, len(tr.Entries), tr.Skipped, tr.Filtered, c.format, c.n, c.skipped, c.filtered)
			continue
		}
		got := tr.Entries[1]
		if got.At.Round(time.Microsecond) != c.second.At || got.Input != c.second.Input || got.Output != c.second.Output || !slices.Equal(got.HashIDs, c.second.HashIDs) || got.Prompt != c.second.Prompt {
			t.Errorf("%s: second entry %+v, want %+v", c.file, got, c.second)
		}
		if tr.Entries[0].At != 0 {
			t.Errorf("%s: the first arrival at %v, want 0", c.file, tr.Entries[0].At)
		}
		if c.span != 0 && tr.Span != c.span {
			t.Errorf("%s: span %v, want %v", c.file, tr.Span, c.span)
		}
	}
	// The plain format's default output limit.
	tr, _ := LoadTrace(filepath.Join("testdata", "trace", "plain.jsonl"), TraceOptions{})
	if tr.Entries[2].Output != DefaultOutputTokens || tr.Entries[2].Input != 300 {
		t.Errorf("an entry with no max_tokens: %+v", tr.Entries[2])
	}
}

func TestLoadTraceBadFiles(t *testing.T) {
	for file, line := range map[string]string{
		"bad-mooncake.jsonl": "line 2:", "bad-azure.csv": "line 3:", "bad-burstgpt.csv": "line 3:", "bad-plain.jsonl": "line 2:",
	} {
		_, err := LoadTrace(filepath.Join("testdata", "trace", file), TraceOptions{})
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != SettingTrace {
			t.Errorf("%s: %v, want a SettingError of the trace", file, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, file+": "+line) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q, want one line naming %q", file, msg, line)
		}
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"empty.jsonl": "", "words.txt": "hello\n", "head.csv": "TIMESTAMP,ContextTokens\n"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := LoadTrace(p, TraceOptions{}); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line error", name, err)
		}
	}
	if _, err := LoadTrace(filepath.Join("testdata", "trace", "azure.csv"), TraceOptions{Format: "sharegpt"}); err == nil || !strings.Contains(err.Error(), "mooncake") {
		t.Errorf("an unknown format: %v", err)
	}
	if _, err := LoadTrace(filepath.Join("testdata", "trace", "mooncake.jsonl"), TraceOptions{From: time.Hour}); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("an empty window: %v", err)
	}
}

func TestParseTraceWindow(t *testing.T) {
	for _, c := range []struct {
		in       string
		from, to time.Duration
		bad      bool
	}{
		{"", 0, 0, false}, {"1m-2m30s", time.Minute, 150 * time.Second, false}, {"30s-", 30 * time.Second, 0, false},
		{"-5m", 0, 5 * time.Minute, false}, {"10-20.5", 10 * time.Second, 20500 * time.Millisecond, false},
		{"2m-1m", 0, 0, true}, {"1m", 0, 0, true}, {"a-b", 0, 0, true}, {"1m-1m", 0, 0, true},
	} {
		from, to, err := ParseTraceWindow(c.in)
		if (err != nil) != c.bad || from != c.from || to != c.to {
			t.Errorf("%q: %v %v %v", c.in, from, to, err)
		}
	}
}

func TestTraceWindow(t *testing.T) {
	tr, err := LoadTrace(filepath.Join("testdata", "trace", "mooncake.jsonl"), TraceOptions{From: 40 * time.Millisecond, To: 200 * time.Millisecond, Loop: true})
	if err != nil {
		t.Fatal(err)
	}
	var at []time.Duration
	for _, en := range tr.Entries {
		at = append(at, en.At)
	}
	if ms := time.Millisecond; !slices.Equal(at, []time.Duration{0, 55 * ms, 110 * ms}) || tr.Span != 160*ms || tr.Filtered != 2 || !tr.Loop {
		t.Errorf("window: arrivals %v, span %v, %d filtered", at, tr.Span, tr.Filtered)
	}
}

// traceEngine is an engine replaying tr that never runs: for its request
// building.
func traceEngine(t *testing.T, tr *Trace, calibrate bool) *Engine {
	t.Helper()
	e, err := New(Config{Do: func(context.Context, probe.Request) probe.Result { return probe.Result{} }, Trace: tr, NoCalibrate: !calibrate, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Requests sharing hash ids share those blocks byte for byte, the rest
// differs, and the calibration moves only the tail.
func TestTraceRequestBlocks(t *testing.T) {
	tr := &Trace{Entries: []TraceEntry{
		{Input: 1100, Output: 10, HashIDs: []int64{7, 8, 9}},
		{At: time.Second, Input: 1300, Output: 30, HashIDs: []int64{7, 8, 10}},
		{At: 2 * time.Second, Input: 900, Output: 20, HashIDs: []int64{7, 11}},
	}, Span: 3 * time.Second}
	e := traceEngine(t, tr, true)
	k := e.Knobs()
	if k.Mode != OpenLoop || k.Speed != 1 || k.PromptTokens != 1100 || k.OutputTokens != 20 || k.Rate != 1 {
		t.Fatalf("a replay's knobs: %+v", k)
	}
	a, wa, pa, oa := e.traceRequest(&tr.Entries[0], k)
	b, wb, pb, _ := e.traceRequest(&tr.Entries[1], k)
	c, _, _, _ := e.traceRequest(&tr.Entries[2], k)
	fa, fb, fc := strings.Fields(a.Prompt), strings.Fields(b.Prompt), strings.Fields(c.Prompt)
	if len(fa) != 1100 || wa != 1100 || pa != 1100 || oa != 10 || len(fb) != 1300 || wb != 1300 || pb != 1300 || a.MaxTokens != 10 {
		t.Fatalf("lengths: %d words (%d, %d tokens), %d words (%d, %d)", len(fa), wa, pa, len(fb), wb, pb)
	}
	if a.Prompt[:len(strings.Join(fa[:1024], " "))] != b.Prompt[:len(strings.Join(fb[:1024], " "))] || slices.Equal(fa[1024:1050], fb[1024:1050]) {
		t.Error("two blocks shared: want the first 1024 words the same, the rest not")
	}
	if !slices.Equal(fa[:512], fc[:512]) || slices.Equal(fa[512:540], fc[512:540]) {
		t.Error("one block shared: want the first 512 words the same, the rest not")
	}
	// The server counts 7 tokens more than the words (a chat template):
	// the tail gives them up, the blocks stay.
	for _, n := range []int{900, 1100, 1300, 1500} {
		e.cal.observe(n, n+7)
	}
	a2, w2, _, _ := e.traceRequest(&tr.Entries[0], k)
	if f := strings.Fields(a2.Prompt); len(f) != 1093 || w2 != 1093 || !slices.Equal(f[:1024], fa[:1024]) {
		t.Errorf("calibrated: %d words (%d), want 1093 with the blocks unchanged", len(f), w2)
	}
	// The length knobs scale the trace's lengths.
	k.PromptTokens, k.OutputTokens = 2200, 40
	_, _, p3, o3 := e.traceRequest(&tr.Entries[0], k)
	if p3 != 2200 || o3 != 20 {
		t.Errorf("knobs at twice the start: prompt %d output %d, want 2200 and 20", p3, o3)
	}
}

// The knobs stay a replay's: the open loop, a speed, the rate it makes.
func TestTraceKnobs(t *testing.T) {
	tr := &Trace{Entries: []TraceEntry{{Input: 10, Output: 10}, {At: time.Second, Input: 10, Output: 10}}, Span: 2 * time.Second}
	e := traceEngine(t, tr, false)
	k := e.Update(func(k *Knobs) { k.Mode = ClosedLoop; k.Speed *= 1.5 })
	if k.Mode != OpenLoop || k.Speed != 1.5 || k.Rate != 1.5 {
		t.Errorf("after o and a faster speed: %+v", k)
	}
	if k := e.Update(func(k *Knobs) { k.Speed = 0 }); k.Speed != 1.5 {
		t.Errorf("a speed of 0 kept the last: %v", k.Speed)
	}
	if k := e.Update(func(k *Knobs) { k.Speed = 1e9 }); k.Speed != MaxSpeed {
		t.Errorf("a speed past the most: %v", k.Speed)
	}
	for _, cfg := range []Config{
		{Trace: tr, Dataset: &Dataset{items: []probe.Request{{Prompt: "x"}}}},
		{Trace: tr, Stages: []Stage{{Duration: time.Second}}},
		{Trace: tr, Knobs: Knobs{Speed: -1}},
	} {
		cfg.Do = func(context.Context, probe.Request) probe.Result { return probe.Result{} }
		var se *SettingError
		if _, err := New(cfg); !errors.As(err, &se) || se.Setting != SettingTrace {
			t.Errorf("%+v: %v, want the trace refused", cfg.Knobs, err)
		}
	}
}

// --prefix-groups: G distinct prefixes, each shared by every G-th prompt.
func TestPrefixGroups(t *testing.T) {
	g := NewPromptGen(1, 40).withGroups(3)
	var heads []string
	for range 6 {
		f := strings.Fields(g.Next(60))
		if len(f) != 60 {
			t.Fatalf("a prompt of %d words, want 60", len(f))
		}
		heads = append(heads, strings.Join(f[:40], " "))
	}
	for i := range 3 {
		if heads[i] != heads[i+3] || heads[i] == heads[(i+1)%3] {
			t.Errorf("group %d: prompts %d and %d should share the prefix, and no other group's", i, i, i+3)
		}
	}
	if one := NewPromptGen(1, 40).withGroups(1); one.prefixOf(5) != NewPromptGen(1, 40).prefix {
		t.Error("one group is the plain prefix")
	}
	cfg := Config{Do: func(context.Context, probe.Request) probe.Result { return probe.Result{} }, Knobs: Knobs{Concurrency: 1, PromptTokens: 10, OutputTokens: 1}, PrefixGroups: 4}
	var se *SettingError
	if _, err := New(cfg); !errors.As(err, &se) || se.Setting != SettingPrefixGroups {
		t.Errorf("groups without a prefix: %v", err)
	}
}

// TestPrefixSeed: prompt generators of two seeds (two agents' shares)
// given one prefix seed (the whole load's) share their prefix, and their
// groups' prefixes, while the rest of their prompts differ; without it
// their prefixes differ too.
func TestPrefixSeed(t *testing.T) {
	head := func(g *PromptGen) (string, string) {
		f := strings.Fields(g.Next(60))
		return strings.Join(f[:40], " "), strings.Join(f[40:], " ")
	}
	seven, zero := uint64(7), uint64(0)
	a, b := NewPromptGen(11, 40).withPrefixSeed(&seven), NewPromptGen(12, 40).withPrefixSeed(&seven)
	ha, ra := head(a)
	hb, rb := head(b)
	if ha != hb || ra == rb {
		t.Errorf("one prefix seed: prefixes equal %v, the rest equal %v", ha == hb, ra == rb)
	}
	if ha != NewPromptGen(7, 40).prefix {
		t.Error("the prefix is not the prefix seed's own")
	}
	if x, _ := head(NewPromptGen(12, 40)); x == ha {
		t.Error("without a prefix seed, another seed's prefix is the same")
	}
	if x, _ := head(NewPromptGen(12, 40).withPrefixSeed(&zero)); x != NewPromptGen(0, 40).prefix {
		t.Error("a prefix seed of 0 is not seed 0's prefix")
	}
	ga, gb := NewPromptGen(11, 40).withPrefixSeed(&seven).withGroups(3), NewPromptGen(12, 40).withPrefixSeed(&seven).withGroups(3)
	for n := range uint64(3) {
		if ga.prefixOf(n) != gb.prefixOf(n) {
			t.Errorf("group %d's prefix differs between the two seeds", n)
		}
	}
}

// FuzzParseTrace: any bytes are a trace or a one-line error, never a
// panic, and a trace read is sorted from 0 with lengths of at least 1.
// TestTraceTimesBounded: times past what a schedule's nanoseconds hold
// are refused in a line, before they collapse the schedule or never end
// (issue 40, item 11: Mooncake 9.3e12 ms, jsonl at 1e11 s, Azure years 1
// and 9999), and the sort's comparator does not overflow.
func TestTraceTimesBounded(t *testing.T) {
	for name, body := range map[string]string{
		"mooncake far":    `{"timestamp": 0, "input_length": 5, "output_length": 5}` + "\n" + `{"timestamp": 9.3e12, "input_length": 5, "output_length": 5}`,
		"jsonl far":       `{"at": 0, "prompt_tokens": 5}` + "\n" + `{"at": 1e11, "prompt_tokens": 5}`,
		"azure year 1":    "TIMESTAMP,ContextTokens,GeneratedTokens\n0001-01-01 00:00:00.0000000,5,5\n2023-11-16 18:15:46.6805900,5,5\n",
		"azure year 9999": "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,5,5\n9999-12-31 00:00:00.0000000,5,5\n",
		"azure decade":    "TIMESTAMP,ContextTokens,GeneratedTokens\n2013-11-16 18:15:46.6805900,5,5\n2023-11-16 18:15:46.6805900,5,5\n",
	} {
		_, err := parseTrace([]byte(body), TraceOptions{})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line refusal", name, err)
		}
	}
	// Within a year, far apart, the order holds (the comparator's
	// difference would overflow an int on 32 bits, and did for spans
	// past int64 nanoseconds).
	tr, err := parseTrace([]byte(`{"at": 3e7, "prompt_tokens": 5}`+"\n"+`{"at": 0, "prompt_tokens": 5}`), TraceOptions{})
	if err != nil || tr.Entries[1].At != 30_000_000*time.Second {
		t.Fatalf("%v, %+v", err, tr)
	}
}

func FuzzParseTrace(f *testing.F) {
	for _, name := range []string{"mooncake.jsonl", "azure.csv", "burstgpt.csv", "plain.jsonl", "bad-azure.csv", "bad-plain.jsonl"} {
		b, _ := os.ReadFile(filepath.Join("testdata", "trace", name))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := parseTrace(data, TraceOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		if tr.Entries[0].At != 0 || tr.Span <= 0 {
			t.Fatalf("first at %v, span %v", tr.Entries[0].At, tr.Span)
		}
		for i, en := range tr.Entries {
			if en.Input < 1 || en.Output < 1 || i > 0 && en.At < tr.Entries[i-1].At {
				t.Fatalf("entry %d: %+v", i, en)
			}
		}
	})
}

func BenchmarkTraceRequest(b *testing.B) {
	tr := &Trace{Entries: []TraceEntry{{Input: 4000, Output: 10, HashIDs: []int64{1, 2, 3, 4, 5, 6, 7, 8}}}, Span: time.Second}
	e, err := New(Config{Do: func(context.Context, probe.Request) probe.Result { return probe.Result{} }, Trace: tr})
	if err != nil {
		b.Fatal(err)
	}
	k := e.Knobs()
	b.ReportAllocs()
	for b.Loop() {
		e.traceRequest(&tr.Entries[0], k)
	}
}
