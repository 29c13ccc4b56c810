package session

import (
	"slices"
	"testing"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/outputcheck"
	"github.com/infertop/infertop/runner"
)

// TestStatsOfJudgedLoad: the invalid rate is among a comparison's
// statistics only when the load judges answers (--tools here): a load
// that does not compares what it did before.
func TestStatsOfJudgedLoad(t *testing.T) {
	var cfg runner.Config
	if got := statsOf(nil, cfg); !slices.Equal(got, compare.DefaultStats()) {
		t.Fatalf("nothing judged: %v", got)
	}
	cfg.Probe.Body.Output = &outputcheck.Spec{Tools: outputcheck.Builtin()}
	got := statsOf(nil, cfg)
	if len(got) != len(compare.DefaultStats())+1 || got[len(got)-1] != compare.InvalidRate() {
		t.Fatalf("tools judged: %v", got)
	}
}
