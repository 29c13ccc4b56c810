//go:build race

package main

// raceDetector is true in a -race build, whose shadow memory is most of
// the process's resident memory.
const raceDetector = true
