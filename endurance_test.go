package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/infertop/infertop/tools/endurance"
)

// TestEndurance is the 30-second version of the bench's hour
// (endurance.Standard): the real dashboard in tmux against `infertop sim
// --faults` with every fault mixed in, sampled once a second through its
// exporter. Memory stays flat, no goroutine or socket is left behind once
// the load is paused and drained, every fault is counted in its class,
// keys are answered throughout and q quits cleanly.
func TestEndurance(t *testing.T) {
	t.Parallel()
	if os.Getenv("INFERTOP_ENDURANCE") == "" {
		t.Skip("35 s of the dashboard against every fault: its own stage (make test-endurance, run by .ci/run)")
	}
	self := selfForTmux(t)
	cfg := endurance.Standard([]string{self}, []string{"INFERTOP_TEST_MAIN=1", "TERM=xterm-256color"}, 30*time.Second, 3*time.Second)
	res, err := endurance.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", res.Summary())
	if err := res.Check(endurance.StandardBounds()); err != nil {
		t.Fatalf("%v\nlast screen:\n%s", err, res.Screen)
	}
}
