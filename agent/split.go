package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/infertop/infertop/load"
)

// cutWalk is this share of a walk (--stages, --ramp): each stage's
// concurrency and rate split as the plain knobs are, its lengths and
// its duration the whole's, so every agent walks the same stages in step
// from the common start. A stage that would leave this agent no
// concurrency is refused: a stage's zero concurrency means "as before",
// which is not none.
func (s Share) cutWalk(stages []load.Stage) ([]load.Stage, error) {
	out := slices.Clone(stages)
	for i := range out {
		st := &out[i]
		if st.Concurrency == 0 {
			st.Rate = s.Rate(st.Rate)
			continue
		}
		whole := st.Concurrency
		st.Concurrency, st.Rate = int(s.Count(int64(whole))), s.Rate(st.Rate)
		if st.Concurrency == 0 {
			return nil, fmt.Errorf("agent: stage %d's concurrency of %d split %d ways leaves agent %d none (give each stage %d or more)", i+1, whole, s.Of, s.Index, s.Of)
		}
	}
	return out, nil
}

// cutPrompts makes l's dataset and trace this share's: the prompts and
// conversations, and the arrivals, partitioned by the index (load's
// Share), the trace's blocks from the whole's seed (so l.Seed must still
// be the whole's).
func (s Share) cutPrompts(l *load.Config) error {
	var err error
	if l.Dataset != nil {
		if l.Dataset, err = l.Dataset.Share(s.Index, s.Of); err != nil {
			return named("--dataset", err)
		}
	}
	if l.Trace != nil {
		if l.Trace, err = l.Trace.Share(s.Index, s.Of, l.Seed); err != nil {
			return named("--trace", err)
		}
	}
	return nil
}

// named is load's refusal of a setting in the words of its flag.
func named(flag string, err error) error {
	var se *load.SettingError
	if errors.As(err, &se) {
		err = se.Err
	}
	return fmt.Errorf("agent: %s: %w", flag, err)
}

// whole are the flags of loads no agent takes a share of, and why.
var whole = map[string]string{
	"find-max": "a search judges each step on the whole load's figures, which no agent has: give it to the follower (run --agents --find-max, or the dashboard's), which drives every agent's share",
	"matrix":   "a search judges each step on the whole load's figures, which no agent has: give it to the follower (run --agents --matrix ... --find-max), which drives every agent's share",
	"split-by": "a comparison's statistics are not merged between agents; run it from one machine",
}

// Whole refuses name, a flag of a load that is not split between agents
// (a capacity search, a comparison), with why in one line; nil for any
// other flag.
func Whole(name string) error {
	why, ok := whole[name]
	if !ok {
		return nil
	}
	return fmt.Errorf("--%s does not go with agents: %s", name, why)
}

// Unsplit refuses, before the flags are parsed (infertop agent has none
// of them), the flags in args of a load that is not split between
// agents (Whole).
func Unsplit(args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") {
			if err := Whole(name); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
		}
	}
	return nil
}
