//go:build !race

package compare

// raceDetector is false in a build without -race.
const raceDetector = false
