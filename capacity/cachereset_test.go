package capacity

import (
	"context"
	"sync"
	"testing"
)

// resetting is a fake whose prefix cache resets are recorded among its
// phases: each as the phase count at the moment it came.
type resetting struct {
	*fake
	mu     sync.Mutex
	resets []int
}

func (r *resetting) ResetCache(context.Context) error {
	r.fake.mu.Lock()
	n := len(r.fake.phases)
	r.fake.mu.Unlock()
	r.mu.Lock()
	r.resets = append(r.resets, n)
	r.mu.Unlock()
	return nil
}

// TestStepsStartCold: over an engine that resets the prefix cache
// (load's --reset-prefix-cache), every step asks for a reset just before
// its warm-up phase, and at no other moment.
func TestStepsStartCold(t *testing.T) {
	f, snaps := newFake(t, 37)
	r := &resetting{fake: f}
	res, err := Search{Objectives: mustParse(t, "ttft_p99<=500ms"), Hold: fakeHold(), Resolution: 0.01}.Run(context.Background(), r, snaps)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.resets) != len(res.Steps) || len(res.Steps) < 3 {
		t.Fatalf("%d resets for %d steps", len(r.resets), len(res.Steps))
	}
	for i, s := range res.Steps {
		// The phases before the warm-up's: its id less one (a drain's
		// pause, when there was one, came before the reset).
		if r.resets[i] != s.WarmupPhase-1 {
			t.Errorf("step %d: reset after %d phases, its warm-up is phase %d", s.N, r.resets[i], s.WarmupPhase)
		}
	}
}
