//go:build !race

package session

// raceDetector is false in a build without -race.
const raceDetector = false
