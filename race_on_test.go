//go:build race

package main

// raceDetector is true in a -race build: it distorts the embedded sims'
// timing too much for a property of their latencies (make test-compare
// holds those without it).
const raceDetector = true
