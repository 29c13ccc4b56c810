package load

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests.
//
// The tests that put load on an endpoint of their own (a sim, a dead
// port, a transport stuck past its context) and wait for its answers on
// the real clock call t.Parallel: most of their time is the sim's decode
// steps and the back-offs and graces, waited, not computed, so two of
// them overlap (go test's -parallel is GOMAXPROCS). They share nothing:
// each starts its own sim, client and engine; the package keeps no
// mutable state. Left in sequence, which go test runs before the parallel
// ones and alone:
//   - the timing-accuracy tests, whose bounds a busy machine breaks:
//     TestEngineMatchesSim (make test-accuracy's), TestLiveMatchesSim (a
//     TTFT in the window within a tick, a second's tokens within 2 %),
//     TestReplayTiming (make test-trace's);
//   - TestPhasesFollowKnobs, which holds how many requests complete
//     between a reset and the next snapshot;
//   - TestHugeLinesHoldMemory, which reads the whole process's heap;
//   - the tests in a synctest bubble's virtual time and the other quick
//     ones on a fake transport: they compute rather than wait, and beside
//     the sim-backed tests they would only take the cores those share.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
