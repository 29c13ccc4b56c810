package session

import (
	"context"
	"io"

	"github.com/infertop/infertop/runner"
)

// Spec is a load of any kind, checked and not yet started: one runner
// (Run), a pair (Pair: --compare), a split (Split: --split-by), the
// agents' load followed (Agents: --agents), or a capacity search over
// one runner or over the agents (Search: --find-max, --matrix). At most
// one of Pair, Split and Agents is set; Run is unused then.
type Spec struct {
	Run    runner.Config
	Pair   *PairConfig
	Split  *SplitConfig
	Agents *AgentsConfig
	Search *Plan
}

// Base is the configuration of the load, or of a pair's baseline.
func (s Spec) Base() runner.Config {
	switch {
	case s.Pair != nil:
		return s.Pair.Baseline
	case s.Split != nil:
		return s.Split.Run
	}
	return s.Run
}

// Start starts the load s describes, its notes to notes and every
// request through wrap (nil: none); ctx bounds only the start (detection,
// model discovery). It is the one place that tells the kinds of load
// apart. A pair's errors are *StartError, naming the side. The agents'
// load takes neither notes nor wrap: their fleet's Logf hears of them.
func Start(ctx context.Context, s Spec, notes io.Writer, wrap func(runner.Do) runner.Do) (Session, error) {
	switch {
	case s.Agents != nil:
		return startAgents(*s.Agents, s.Search)
	case s.Pair != nil:
		pc := *s.Pair
		pc.Baseline.Notes, pc.Baseline.WrapDo = notes, wrap
		p, err := StartPair(ctx, pc)
		if err != nil {
			return nil, err // not a nil *Pair in a Session
		}
		return p, nil
	case s.Split != nil:
		sc := *s.Split
		sc.Run.Notes, sc.Run.WrapDo = notes, wrap
		sp, err := StartSplit(ctx, sc)
		if err != nil {
			return nil, err
		}
		return sp, nil
	}
	cfg := s.Run
	cfg.Notes, cfg.WrapDo = notes, wrap
	single, err := StartSingle(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if s.Search != nil {
		return NewSearch(single, *s.Search), nil
	}
	return single, nil
}
