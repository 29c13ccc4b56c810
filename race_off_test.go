//go:build !race

package main

// raceDetector is false in a build without -race.
const raceDetector = false
