// Package load is infertop's engine: it owns the knobs (concurrency, rate,
// prompt and output length, pause), runs the closed loop (N workers) or the
// open loop (arrivals at a rate) that sends requests through probe, folds
// every result into rolling HdrHistogram windows and per-phase statistics in
// one aggregator goroutine, and publishes an immutable Snapshot on every tick
// to any number of subscribers, never blocking on them.
//
// The files, by concern:
//
//	config.go     Config, Warmup, Goodput, Record, the run-end reasons, Windows
//	validate.go   Config.Validate and SettingError: what New refuses, in the engine's terms
//	engine.go     Engine and New, the knob methods, Finish/Ending, Run (the aggregator loop)
//	step.go       NewPhase: a phase on demand, for a driver of the knobs (a capacity search)
//	knobs.go      Knobs, Mode and the knobs' limits
//	closed.go     the closed loop: workers, one per unit of concurrency, backing off on failures
//	open.go       the open loop: Arrivals, the dispatcher, the backlog; ParseRate
//	request.go    one request: admitted, sent, its result handed on or counted incomplete
//	hub.go        the subscription hub: Subscribe, Latest, publish
//	plan.go       stages, ramps and the stage walk
//	stats.go      the aggregator: windows, phases, counters
//	hist.go       the histograms behind the windows and Dist, their percentiles
//	snapshot.go   Snapshot and what it carries: Metric, Target, Point, Phase, Limits
//	errtable.go   the failures by class, status and message (ErrorCount)
//	prompt.go     the prompt generator
//	calibrate.go  learning how many words make a token count
//	tokenize.go   the calibration through the server's own tokenizer (/tokenize)
//	cachereset.go the server's prefix cache emptied before a phase (--reset-prefix-cache), the workers held till it begins
//	cachebust.go  a marker of its own opening every prompt, or every session (--cache-bust)
//	httpphases.go where the time went: HTTP phases, the TTFT's split, the cache, whose counts
//	windowsplit.go the rolling window's TTFT split, kept as the window's latencies are
//	steady.go     the closed loop's steady-state window (in flight at 95 % of the concurrency)
//	traceid.go    the requests' trace ids, drawn from a seed
//	lengths.go    spread prompt and output lengths (Length)
//	dataset.go    prompts from a file (Dataset)
//	mix.go        a mix of models by weight (Mix), dealt in seeded blocks
//
// Errors speak the engine's terms (a rate, a ramp, a dataset), never a
// command-line flag's name: the caller knows which flag it parsed.
package load
