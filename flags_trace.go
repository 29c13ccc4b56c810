package main

import (
	"github.com/spf13/pflag"

	"github.com/infertop/infertop/load"
)

// traceFlags are the flags of a trace replay (--trace and its company).
type traceFlags struct {
	path, format, window, model string
	speed                       float64
	loop                        bool
}

// addTrace: a recorded load replayed instead of a synthetic one.
func (f *loadFlags) addTrace(fs *pflag.FlagSet) {
	t := &f.trace
	fs.StringVar(&t.path, "trace", "", "replay a trace's arrivals and lengths: Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids), Azure's or BurstGPT's CSV, or JSONL of {\"at\": s, \"prompt\"|\"prompt_tokens\", \"max_tokens\"}")
	fs.StringVar(&t.format, "trace-format", "", "the trace's format: mooncake, azure, burstgpt or jsonl (default: told from the file)")
	fs.Float64Var(&t.speed, "trace-speed", 1, "replay the trace this many times faster (0.5: at half its pace); the rate keys move it")
	fs.BoolVar(&t.loop, "trace-loop", false, "start the trace again at its end (default: the run ends with it)")
	fs.StringVar(&t.window, "trace-window", "", "replay only FROM-TO of the trace, durations from its start, e.g. 10m-20m")
	fs.StringVar(&t.model, "trace-model", "", "replay only the rows of this model (BurstGPT's Model column)")
}

// traceShape reads the trace flags into l.
func (f *loadFlags) traceShape(l *load.Config) error {
	t := &f.trace
	if t.path == "" {
		for _, name := range []string{"trace-format", "trace-speed", "trace-loop", "trace-window", "trace-model"} {
			if f.fs.Changed(name) {
				return usagef("--%s needs --trace", name)
			}
		}
		return nil
	}
	for _, name := range []string{"rate", "concurrency", "dataset", "stages", "ramp", "prompt-tokens", "output-tokens"} {
		if f.fs.Changed(name) {
			return usagef("--trace sets the arrivals and the lengths: it does not go with --%s", name)
		}
	}
	if !(t.speed >= load.MinSpeed && t.speed <= load.MaxSpeed) {
		return usagef("--trace-speed: %v is not within %v..%v", t.speed, load.MinSpeed, load.MaxSpeed)
	}
	from, to, err := load.ParseTraceWindow(t.window)
	if err != nil {
		return usagef("--trace-window: %v", err)
	}
	tr, err := load.LoadTrace(t.path, load.TraceOptions{Format: t.format, Model: t.model, From: from, To: to, Loop: t.loop})
	if err != nil {
		return flagError(err)
	}
	l.Trace, l.Knobs.Speed = tr, t.speed
	return nil
}
