package load

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// denseTrace writes a Mooncake-style trace of n arrivals gap apart into
// a file and reads it back: groups of requests share two 512-token
// blocks (a system prompt), each then has a partial block of its own.
// want is what the sim must see: each arrival's prompt tokens and the
// tokens its prefix cache holds of it.
func denseTrace(t *testing.T, n, groups int, gap time.Duration) (tr *Trace, want [][2]int) {
	t.Helper()
	var b strings.Builder
	seen := map[int]bool{}
	for i := range n {
		g := i % groups
		input := 2*TraceBlockTokens + 50 + 10*g
		row := map[string]any{
			"timestamp": float64(time.Duration(i)*gap) / float64(time.Millisecond), "input_length": input, "output_length": 1 + i%3,
			"hash_ids": []int{100 * g, 100*g + 1, 10000 + i},
		}
		line, _ := json.Marshal(row)
		b.Write(line)
		b.WriteByte('\n')
		cached := 0
		if seen[g] {
			cached = 2 * TraceBlockTokens
		}
		seen[g] = true
		want = append(want, [2]int{input, cached})
	}
	path := filepath.Join(t.TempDir(), "dense.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := LoadTrace(path, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, want
}

// startTraceRig runs the sim with its prefix cache and an engine
// replaying tr against it through the completions API (no chat template:
// the words are the tokens, so the sim's record of each prompt is the
// trace's length exactly).
func startTraceRig(t *testing.T, p sim.Params, tr *Trace, opts ...func(*Config)) (*Engine, *simtest.Server, func()) {
	t.Helper()
	srv := simtest.Start(t, p)
	client, err := probe.New(probe.Config{URL: srv.URL + "/completions", API: probe.OpenAICompletions, Model: p.Model, MaxConns: 256})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Do: client.Do, Trace: tr, Tick: 50 * time.Millisecond, NoCalibrate: true, Seed: 5,
		Target: Target{URL: srv.Origin, Model: p.Model, API: "openai-completions", Sim: true}}
	for _, o := range opts {
		o(&cfg)
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	var stopped bool
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			srv.Close()
			client.Close()
		}
	}
	t.Cleanup(stop)
	return eng, srv, stop
}

func cachedSim() sim.Params {
	p, _ := sim.Preset("fast")
	p.PrefixCacheBlocks = 1 << 16
	return p
}

// A replay sends every arrival of the trace, then ends the run; the
// sim's own record of the prompts' lengths and of their shared prefixes
// is the trace's.
func TestReplayAgainstSim(t *testing.T) {
	t.Parallel()
	tr, want := denseTrace(t, 120, 4, 10*time.Millisecond)
	eng, srv, stop := startTraceRig(t, cachedSim(), tr)
	s := waitFor(t, eng, 120*time.Second, "the replay's end", func(s Snapshot) bool { return s.Done })
	stop()
	if s.DoneWhy != EndTrace || s.TotalCompleted != 120 || s.TotalFailed != 0 {
		t.Fatalf("ended %q: %d completed, %d failed (%s)", s.DoneWhy, s.TotalCompleted, s.TotalFailed, s.LastError)
	}
	if st := s.Trace; !st.On || st.Sent != 120 || st.Total != 120 || st.Pass != 0 || !strings.Contains(st.Summary(), "120 arrivals") {
		t.Errorf("the replay's status: %+v (%s)", st, st.Summary())
	}
	var got [][2]int
	for _, r := range srv.Sim.Records() {
		got = append(got, [2]int{r.PromptTokens, r.CachedTokens})
	}
	cmp := func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	}
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	if !slices.Equal(got, want) {
		t.Errorf("the sim's prompts and hits differ from the trace's:\n got %v\nwant %v", got, want)
	}
}

// A trace the client cannot keep up with (one request in flight at a
// time, each at least 10 ms) is reported as falling behind, and its
// arrivals' waits counted from their intended times.
func TestReplayFallsBehind(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 20, "output_length": 20}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "burst.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o600)
	tr, err := LoadTrace(path, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eng, _, stop := startTraceRig(t, cachedSim(), tr, func(c *Config) { c.MaxInFlight = 1 })
	s := waitFor(t, eng, 120*time.Second, "the replay's end", func(s Snapshot) bool { return s.Done })
	stop()
	if s.TotalCompleted != 20 || s.Trace.MaxBehind < 150*time.Millisecond || !strings.Contains(s.Trace.Summary(), "fell behind") {
		t.Errorf("%d completed; behind at most %v: %s", s.TotalCompleted, s.Trace.MaxBehind, s.Trace.Summary())
	}
	if q := s.Run.Latency[Queue].Max; q < 150*time.Millisecond {
		t.Errorf("the longest wait from an intended time: %v, want the backlog's", q)
	}
}

// A looped trace starts again at its end; a pause stops its clock.
func TestReplayLoopsAndPauses(t *testing.T) {
	t.Parallel()
	tr, _ := denseTrace(t, 10, 2, 5*time.Millisecond)
	tr.Loop = true
	eng, _, stop := startTraceRig(t, cachedSim(), tr)
	waitFor(t, eng, 120*time.Second, "a second pass", func(s Snapshot) bool { return s.Trace.Pass >= 2 })
	eng.SetPaused(true)
	s := waitFor(t, eng, 120*time.Second, "the paused load's end", func(s Snapshot) bool { return s.InFlight == 0 && s.Knobs.Paused })
	pos := s.Trace.Position
	sent := s.Trace.Pass*10 + s.Trace.Sent
	s2 := waitFor(t, eng, 120*time.Second, "more snapshots", func(n Snapshot) bool { return n.Seq > s.Seq+3 })
	if s2.Trace.Position != pos || s2.Trace.Pass*10+s2.Trace.Sent != sent {
		t.Errorf("paused: the trace went on from %v (%d sent) to %v (%d)", pos, sent, s2.Trace.Position, s2.Trace.Pass*10+s2.Trace.Sent)
	}
	eng.Reset() // the figures, not the trace's position
	s3 := waitFor(t, eng, 120*time.Second, "the reset", func(n Snapshot) bool { return n.Since > 0 })
	if s3.Trace.Position != pos || s3.Trace.MaxBehind != s2.Trace.MaxBehind {
		t.Errorf("a reset moved the trace: %v, want %v", s3.Trace.Position, pos)
	}
	eng.SetPaused(false)
	waitFor(t, eng, 120*time.Second, "the replay going on", func(n Snapshot) bool { return n.Trace.Pass*10+n.Trace.Sent > sent })
	stop()
}

// TestBacklogBounded: a looped trace with every arrival at time 0,
// behind one slot that never frees, grows the backlog to MaxBacklog and
// no further; the arrivals past it are dropped at once and counted
// (issue 40, item 11: 1.7 GB in 5 s before).
func TestBacklogBounded(t *testing.T) {
	t.Parallel()
	tr := &Trace{Span: time.Millisecond, Loop: true}
	for range 5000 {
		tr.Entries = append(tr.Entries, TraceEntry{Input: 5, Output: 5})
	}
	eng, err := New(Config{Trace: tr, MaxInFlight: 1, Tick: 20 * time.Millisecond, NoCalibrate: true, Seed: 5,
		Do: func(ctx context.Context, _ probe.Request) probe.Result {
			<-ctx.Done()
			return probe.Result{Class: probe.Timeout}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	s := waitFor(t, eng, 120*time.Second, "arrivals dropped past the bound", func(s Snapshot) bool { return s.DroppedEver > 0 })
	cancel()
	<-done
	if s.Backlog > MaxBacklog {
		t.Errorf("a backlog of %d, past MaxBacklog %d", s.Backlog, MaxBacklog)
	}
	if s.ScheduledEver < int64(MaxBacklog) {
		t.Errorf("%d scheduled, %d dropped: dropped before the backlog was full", s.ScheduledEver, s.DroppedEver)
	}
}
