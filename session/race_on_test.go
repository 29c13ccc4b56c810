//go:build race

package session

// raceDetector is true in a -race build. The 100-run properties are pure
// arithmetic on one goroutine: the race detector finds nothing there and
// makes them ten times slower, so make test runs them in its stage
// without -race.
const raceDetector = true
