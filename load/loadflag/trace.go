package loadflag

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/load"
)

// traceFlags are the flags of a trace replay (--trace and its company).
type traceFlags struct {
	path, format, window, model string
	speed                       float64
	loop                        bool
}

// addTrace: a recorded load replayed instead of a synthetic one.
func (f *Flags) addTrace(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Trace replay")()
	t := &f.trace
	fs.StringVar(&t.path, "trace", "", "replay a trace's arrivals and lengths: Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids), Azure's or BurstGPT's CSV, or JSONL of {\"at\": s, \"prompt\"|\"prompt_tokens\", \"max_tokens\"}")
	fs.StringVar(&t.format, "trace-format", "", "the trace's format: mooncake, azure, burstgpt or jsonl (default: told from the file)")
	fs.Float64Var(&t.speed, "trace-speed", 1, "replay the trace this many times faster (0.5: at half its pace); the rate keys move it")
	fs.BoolVar(&t.loop, "trace-loop", false, "start the trace again at its end (default: the run ends with it)")
	fs.StringVar(&t.window, "trace-window", "", "replay only FROM-TO of the trace, durations from its start, e.g. 10m-20m")
	fs.StringVar(&t.model, "trace-model", "", "replay only the rows of this model (BurstGPT's Model column)")
}

// traceShape reads the trace flags into l.
func (f *Flags) traceShape(l *load.Config) error {
	t := &f.trace
	if t.path == "" {
		for _, name := range []string{"trace-format", "trace-speed", "trace-loop", "trace-window", "trace-model"} {
			if f.fs.Changed(name) {
				return fmt.Errorf("--%s needs --trace", name)
			}
		}
		return nil
	}
	for _, name := range []string{"rate", "concurrency", "dataset", "stages", "ramp", "prompt-tokens", "output-tokens"} {
		if f.fs.Changed(name) {
			return fmt.Errorf("--trace sets the arrivals and the lengths: it does not go with --%s", name)
		}
	}
	if !(t.speed >= load.MinSpeed && t.speed <= load.MaxSpeed) {
		return fmt.Errorf("--trace-speed: %v is not within %v..%v", t.speed, load.MinSpeed, load.MaxSpeed)
	}
	from, to, err := load.ParseTraceWindow(t.window)
	if err != nil {
		return fmt.Errorf("--trace-window: %v", err)
	}
	tr, err := load.LoadTrace(t.path, load.TraceOptions{Format: t.format, Model: t.model, From: from, To: to, Loop: t.loop})
	if err != nil {
		return f.FlagError(err)
	}
	l.Trace, l.Knobs.Speed = tr, t.speed
	return nil
}

// sessionFlags are the flags of multi-turn sessions.
type sessionFlags struct {
	n, turns, bytes int
	think           time.Duration
}

// addSessions: conversations of several turns instead of single requests.
func (f *Flags) addSessions(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Multi-turn sessions")()
	s := &f.sessions
	fs.IntVar(&s.n, "sessions", 0, "multi-turn sessions: N conversations at once (the closed loop's concurrency), each turn's prompt the context so far")
	fs.IntVar(&s.turns, "turns", 5, "with --sessions: turns in a session, then a new one starts (with a ShareGPT --dataset: its conversations' human turns, up to --turns if given)")
	fs.DurationVar(&s.think, "think", 0, "with --sessions: the wait between an answer and the session's next turn")
	fs.IntVar(&s.bytes, "session-bytes", load.DefaultSessionBytes, "with --sessions: the cap on a session's context in bytes, past which it starts again")
}

// sessionShape reads the session flags into l.
func (f *Flags) sessionShape(l *load.Config) error {
	s := &f.sessions
	if s.n == 0 {
		for _, name := range []string{"turns", "think", "session-bytes", "sessions"} {
			if f.fs.Changed(name) {
				return fmt.Errorf("--%s needs --sessions N (N at least 1)", name)
			}
		}
		return nil
	}
	for _, name := range []string{"concurrency", "rate", "trace", "stages", "ramp"} {
		if f.fs.Changed(name) {
			return fmt.Errorf("--sessions sets the concurrency and the prompts: it does not go with --%s", name)
		}
	}
	if s.n < 0 || s.n > load.MaxConcurrency {
		return fmt.Errorf("--sessions: %d is not within 1..%d", s.n, load.MaxConcurrency)
	}
	if l.Dataset != nil && !f.fs.Changed("turns") { // a conversation's own length (load refuses a dataset of none)
		s.turns = max(l.Dataset.MostTurns(), 1)
	}
	if s.turns < 1 || s.turns > load.MaxTurns {
		return fmt.Errorf("--turns: %d is not within 1..%d", s.turns, load.MaxTurns)
	}
	if s.think < 0 {
		return fmt.Errorf("--think: %v is negative", s.think)
	}
	l.Knobs.Concurrency, l.Knobs.Mode = s.n, load.ClosedLoop
	l.Sessions = load.Sessions{Turns: s.turns, Think: s.think, MaxBytes: s.bytes} // load refuses a negative cap
	return nil
}
