//go:build race

package load

// raceDetector is true in a -race build, where every memory access is
// instrumented and the HTTP stack runs several times slower.
const raceDetector = true
