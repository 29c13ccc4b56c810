package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestResetPrefixCacheRefused: --reset-prefix-cache against a server with
// no reset endpoint (the fast sim has no prefix cache) is refused at the
// start in one line, before any request; against one that has it, the
// run starts and ends with nothing failed.
func TestResetPrefixCacheRefused(t *testing.T) {
	cfg := simConfig(t)
	cfg.Load.ResetPrefixCache = true
	cfg.Load.MaxRequests = 4
	r, err := Start(context.Background(), cfg)
	if err == nil {
		r.Stop()
		t.Fatal("a server with no reset endpoint was not refused")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "--reset-prefix-cache: ") || !strings.Contains(msg, "not offered by this server") {
		t.Fatalf("the refusal: %q", msg)
	}

	cfg.Sim.PrefixCacheBlocks = 256
	r, err = Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s := waitSnap(t, r, 10*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	if s.TotalCompleted != 4 || s.TotalFailed != 0 {
		t.Fatalf("completed %d, failed %d", s.TotalCompleted, s.TotalFailed)
	}
}
