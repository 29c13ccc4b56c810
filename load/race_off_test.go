//go:build !race

package load

// raceDetector is true in a -race build.
const raceDetector = false
