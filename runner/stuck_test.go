package runner

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// syncBuffer is a bytes.Buffer safe for the runner's notes, written from
// its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStopWithStuckRequests: requests stuck past their context (as in a
// deadlocked HTTP/2 transport) hold Stop no longer than the engine's
// grace; they are counted incomplete, and a note says so.
func TestStopWithStuckRequests(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // before goleak looks: the stuck calls end with the test
	started := make(chan struct{}, 8)
	cfg := simConfig(t)
	var notes syncBuffer
	cfg.Notes = &notes
	cfg.Telemetry.ServerMetrics = ServerMetricsOff
	cfg.WrapDo = func(Do) Do {
		return func(context.Context, probe.Request) probe.Result {
			started <- struct{}{}
			<-release
			return probe.Result{}
		}
	}
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	<-started
	t0 := time.Now()
	r.Stop()
	if took := time.Since(t0); took > load.AbandonGrace+5*time.Second {
		t.Errorf("Stop took %v with requests stuck", took)
	}
	if s := r.Latest(); s.Incomplete != 2 || s.InFlight != 0 {
		t.Errorf("incomplete %d, in flight %d: want the 2 stuck requests incomplete", s.Incomplete, s.InFlight)
	}
	if !strings.Contains(notes.String(), "2 requests stuck in the HTTP transport were given up on") {
		t.Errorf("notes: %q", notes.String())
	}
}

// TestWaitForIsBounded: a wait group that never ends holds waitFor no
// longer than its bound.
func TestWaitForIsBounded(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	defer wg.Done() // lets waitFor's goroutine end before goleak looks
	t0 := time.Now()
	if waitFor(&wg, 50*time.Millisecond) {
		t.Fatal("waitFor reported a wait group that never ended as done")
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("waitFor took %v for a bound of 50ms", took)
	}
	var done sync.WaitGroup
	if !waitFor(&done, time.Minute) {
		t.Fatal("waitFor missed a wait group with nothing to wait for")
	}
}
