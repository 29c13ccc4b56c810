package session

import (
	"errors"
	"testing"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/runner"
)

// TestCutFor: an agent's cut is exhaustive by kind: one runner's load and
// a comparison's are cut (the comparison's board then serves the canary
// too); a split, a search and a follow of agents are refused by kind,
// whatever flags made them.
func TestCutFor(t *testing.T) {
	base := runner.Config{Load: load.Config{Knobs: load.Knobs{Concurrency: 8, Rate: 0}, Seed: 7}}
	for _, tc := range []struct {
		name    string
		spec    Spec
		refused bool
		compare bool
	}{
		{"one runner", Spec{Run: base}, false, false},
		{"a pair", Spec{Pair: &PairConfig{Baseline: base}}, false, true},
		{"a split", Spec{Split: &SplitConfig{Run: base}}, true, false},
		{"a search", Spec{Run: base, Search: &Plan{}}, true, false},
		{"agents", Spec{Agents: &AgentsConfig{}}, true, false},
	} {
		b := &agent.Board{Share: agent.Share{Index: 1, Of: 2}}
		s := tc.spec
		err := s.CutFor(b, false)
		switch {
		case tc.refused && !errors.Is(err, ErrAgentCut):
			t.Errorf("%s: %v, want refused by kind", tc.name, err)
		case !tc.refused && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case b.Compare != tc.compare:
			t.Errorf("%s: the board compares %v", tc.name, b.Compare)
		}
		if tc.refused {
			continue
		}
		l := s.Run.Load
		if s.Pair != nil {
			l = s.Pair.Baseline.Load
		}
		if l.Knobs.Concurrency != 4 || l.Seed == 7 {
			t.Errorf("%s: not this share's: concurrency %d, seed %d", tc.name, l.Knobs.Concurrency, l.Seed)
		}
	}
}
