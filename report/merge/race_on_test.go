//go:build race

package merge

// raceDetector is true in a -race build, where every memory access is
// instrumented: bounds on time are widened.
const raceDetector = true
