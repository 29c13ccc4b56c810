// Package load is infertop's engine: it owns the knobs (concurrency, prompt
// and output length, pause), runs the closed-loop scheduler that keeps that
// many requests in flight through probe, folds every result into rolling
// HdrHistogram windows and per-phase statistics in one aggregator goroutine,
// and publishes an immutable Snapshot on every tick to any number of
// subscribers, never blocking on them.
package load
