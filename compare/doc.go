// Package compare holds the statistics of a comparison, and only those:
// the requests of two sides (Samples), of the groups of one load
// (Groups) or the agents' merged seconds (Binned), each statistic judged
// with a paired block bootstrap over whole seconds, or with
// Options.Anytime an anytime-valid confidence sequence (QuantileInterval,
// RateInterval: an interval that holds at every look at once; requests
// that move together are read at their design effect); a verdict per statistic with an interval of the
// newer side's difference, a line for a person ("canary slower: TTFT p99
// +38% (…)"), the gates of the regressions allowed (with the sequences,
// as margins: within, beyond, undecided) and their typed failures. It
// starts no load and serves nothing: package session runs the loads it
// judges.
package compare
