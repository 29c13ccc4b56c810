// Package compare holds the statistics of a comparison, and only those:
// the newest requests of two sides (Samples) or of the groups of one load
// (Groups), compared with a paired block bootstrap: a verdict per
// statistic with an interval of the newer side's difference, a line for a
// person ("canary slower: TTFT p99 +38% (…)"), the gates of the
// regressions allowed and their typed failures. It starts no load and
// serves nothing: package session runs the loads it judges.
package compare
