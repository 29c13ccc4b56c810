package load

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// sessionsRun runs sessions of 5 turns on the sim (prefill at 4000
// tokens a second, so a turn's TTFT is mostly its prefill) with its
// prefix cache of cache blocks, until 4 sessions have run every turn.
func sessionsRun(t *testing.T, cache int) SessionFigures {
	t.Helper()
	p, _ := sim.Preset("default")
	p.Jitter, p.PrefillRate, p.PrefixCacheBlocks = 0, 4000, cache
	r := startRig(t, p, Knobs{Concurrency: 2, PromptTokens: 200, OutputTokens: 20}, func(c *Config) {
		c.Sessions = Sessions{Turns: 5}
	})
	s := waitFor(t, r.eng, 2*time.Minute, "four sessions", func(s Snapshot) bool { return s.Sessions.Completed >= 4 })
	r.stop()
	return s.Sessions
}

// TestSessionsPrefixCache: with the sim's prefix cache on, a session's
// later turns reuse its earlier ones (their prompt is the context so
// far), so their TTFT stays near the first's while their prompts grow
// five-fold; with it off their TTFT grows with the prompt.
func TestSessionsPrefixCache(t *testing.T) {
	on, off := sessionsRun(t, 1<<14), sessionsRun(t, 0)
	table := func(f SessionFigures) string {
		var b strings.Builder
		for _, tf := range f.Turns {
			fmt.Fprintf(&b, "turn %d: %d done, prompt %.0f tokens, TTFT p50 %v mean %v\n", tf.Turn, tf.Completed, tf.PromptTokens, tf.TTFT.P50, tf.TTFT.Mean)
		}
		return b.String()
	}
	t.Logf("cache on:\n%s\ncache off:\n%s", table(on), table(off))
	if len(on.Turns) != 5 || len(off.Turns) != 5 || on.Completed < 4 || on.SessionTime.Count < 4 {
		t.Fatalf("on: %+v\noff: %+v", on, off)
	}
	for _, f := range []SessionFigures{on, off} {
		if p1, p5 := f.Turns[0].PromptTokens, f.Turns[4].PromptTokens; p5 < 4*p1 {
			t.Errorf("turn 5's prompt %.0f tokens, turn 1's %.0f: want the context grown by four turns", p5, p1)
		}
	}
	first, last := func(f SessionFigures) time.Duration { return f.Turns[0].TTFT.Mean }, func(f SessionFigures) time.Duration { return f.Turns[4].TTFT.Mean }
	if last(off) < 2*first(off) {
		t.Errorf("cache off: turn 5's TTFT %v, turn 1's %v: want it grown with the prompt", last(off), first(off))
	}
	if last(on) > first(on)*3/2 || last(on) > last(off)/2 {
		t.Errorf("cache on: turn 5's TTFT %v, turn 1's %v (off: %v): want it near the first's, far under the uncached", last(on), first(on), last(off))
	}
}

func TestSessionsRefused(t *testing.T) {
	for _, c := range []Config{
		{Sessions: Sessions{Turns: -1}},
		{Sessions: Sessions{Think: time.Second}},
		{Sessions: Sessions{Turns: 3}, Knobs: Knobs{Mode: OpenLoop, Rate: 3, PromptTokens: 1, OutputTokens: 1}},
		{Sessions: Sessions{Turns: 3}, Trace: &Trace{Entries: []TraceEntry{{Input: 1, Output: 1}}, Span: time.Second}},
	} {
		c.Do = traceEngine(t, &Trace{Entries: []TraceEntry{{Input: 1, Output: 1}}, Span: time.Second}, false).cfg.Do
		if c.Knobs == (Knobs{}) {
			c.Knobs = Knobs{Concurrency: 1, PromptTokens: 1, OutputTokens: 1}
		}
		var se *SettingError
		if _, err := New(c); !errors.As(err, &se) || se.Setting != SettingSessions && se.Setting != SettingTrace {
			t.Errorf("%+v: %v, want the sessions refused", c.Sessions, err)
		}
	}
}

// A session's turn is its context so far: the last turn's prompt, the
// answer's stand-in, a new message; the shared prefix opens it once.
func TestConversationGrows(t *testing.T) {
	e, err := New(Config{Do: traceEngine(t, &Trace{Entries: []TraceEntry{{Input: 1, Output: 1}}, Span: time.Second}, false).cfg.Do,
		Knobs: Knobs{Concurrency: 1, PromptTokens: 30, OutputTokens: 5}, PrefixTokens: 12, Sessions: Sessions{Turns: 2}})
	if err != nil {
		t.Fatal(err)
	}
	c := e.conversationFor()
	k := e.Knobs()
	first := c.next(k).Prompt
	c.done(&probe.Result{Class: probe.OK, OutputTokens: 5, HasTTFT: true}, 30)
	second := c.next(k).Prompt
	prefix := e.prompts.prefix
	if !strings.HasPrefix(second, first+" ") || strings.Count(second, prefix) != 1 || len(strings.Fields(second)) != 30+5+30 {
		t.Errorf("turn 2's prompt (%d words) does not grow turn 1's (%d) by 5 and 30:\n%q\n%q", len(strings.Fields(second)), len(strings.Fields(first)), first, second)
	}
	c.done(&probe.Result{Class: probe.OK, OutputTokens: 5}, 65)
	if third := c.next(k).Prompt; strings.HasPrefix(third, first) || c.turn != 1 {
		t.Errorf("after the last turn a new session: %q", third)
	}
	f := e.sessions.figures(0)
	if f.Completed != 1 || f.Turns[0].Completed != 1 || f.Turns[1].Completed != 1 || f.Turns[1].PromptTokens != 65 {
		t.Errorf("figures: %+v", f)
	}
}

// A session whose next turn would pass the model's context starts again.
func TestConversationCapped(t *testing.T) {
	e, err := New(Config{Do: traceEngine(t, &Trace{Entries: []TraceEntry{{Input: 1, Output: 1}}, Span: time.Second}, false).cfg.Do,
		Knobs: Knobs{Concurrency: 1, PromptTokens: 30, OutputTokens: 5}, Sessions: Sessions{Turns: 10}, MaxContext: 100})
	if err != nil {
		t.Fatal(err)
	}
	c := e.conversationFor()
	turns := 0
	for turns < 10 {
		c.next(e.Knobs())
		turns++
		if c.done(&probe.Result{Class: probe.OK, OutputTokens: 5}, 0); c.turn == 0 {
			break
		}
	}
	// 30, 65: a third turn of 100 words and 5 of output would pass 100.
	if turns != 2 {
		t.Errorf("the session ran %d turns, want 2 under a context of 100", turns)
	}
}
