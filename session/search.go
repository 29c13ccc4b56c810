package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// Plan is a capacity run, checked: one search, or a search (or a
// measurement at At) in each cell of a matrix of lengths.
type Plan struct {
	Search capacity.Search
	Matrix *capacity.Matrix
	// At is the load a matrix without objectives measures at.
	At float64
	// Knobs are the load's knobs at the start (the one cell's lengths).
	Knobs load.Knobs
}

// ErrNoRate is a matrix over the rate with no objectives (it measures
// each cell at the rate given) and no rate given.
var ErrNoRate = errors.New("a matrix over the rate without objectives measures at the load's rate: none is set")

// NewPlan is the plan of search (in each cell of m, when m is not nil),
// and prepares k, the load's knobs, for it: paused until the first step
// (phase 1 sends nothing, so every phase with requests is a step's), and
// in the open loop when the search is over the rate.
func NewPlan(search capacity.Search, m *capacity.Matrix, k *load.Knobs) (*Plan, error) {
	p := &Plan{Search: search, Matrix: m, At: float64(k.Concurrency)}
	if search.Over == capacity.Rate {
		p.At = k.Rate
	}
	if m != nil && len(search.Objectives) == 0 && search.Over == capacity.Rate && p.At <= 0 {
		return nil, ErrNoRate
	}
	k.Paused = true
	if search.Over == capacity.Rate {
		k.Mode, k.Rate = load.OpenLoop, max(k.Rate, load.MinRate)
	}
	p.Knobs = *k
	return p, nil
}

// Search is a capacity search driving one load: it is the load's session
// whose drive is the search, and whose report holds the search's outcome.
type Search struct {
	Session
	on   Searched
	plan Plan

	mu  sync.Mutex
	out *capacity.Outcome
	err error
}

// Searched is the load a search drives: its session, the engine whose
// knobs the search turns and the snapshots it judges each step on.
type Searched struct {
	Session   Session
	Engine    capacity.Engine
	Subscribe func() (<-chan load.Snapshot, func())
	// End ends the load once the search is over (nil: Session.Finish).
	End func(why string)
}

// NewSearch is the search p over s's load (started paused: the first
// step starts it).
func NewSearch(s *Single, p Plan) *Search {
	return NewSearchOver(Searched{Session: s, Engine: s.r.Engine(), Subscribe: s.r.Subscribe}, p)
}

// NewSearchOver is the search p over on's load.
func NewSearchOver(on Searched, p Plan) *Search { return &Search{Session: on.Session, on: on, plan: p} }

// Release releases the searched load's metrics (Releaser), where it
// holds them.
func (s *Search) Release() { Release(s.Session) }

// Finish ends the searched load for why.
func (s *Search) Finish(why string) {
	if s.on.End != nil {
		s.on.End(why)
		return
	}
	s.Session.Finish(why)
}

// Drive runs the plan against the engine until it is over or ctx ends,
// with progress on the drive's goroutine; the outcome is kept for
// Conclude.
func (s *Search) Drive(ctx context.Context, progress func(capacity.Progress)) error {
	search := s.plan.Search
	snaps, unsubscribe := s.on.Subscribe()
	defer unsubscribe()
	search.Progress = progress
	eng := s.on.Engine
	var out *capacity.Outcome
	var err error
	if s.plan.Matrix != nil {
		out, err = s.plan.Matrix.Run(ctx, eng, snaps, search, s.plan.At)
	} else {
		var res capacity.Result
		res, err = search.Run(ctx, eng, snaps)
		out = &capacity.Outcome{Over: res.Over, Objectives: search.Objectives,
			Cells: []capacity.Cell{{Prompt: cmp.Or(res.Prompt, s.plan.Knobs.PromptTokens), Output: cmp.Or(res.Output, s.plan.Knobs.OutputTokens), Result: res}}}
		if k, ok := eng.(load.KnobReader); ok { // a search cut short before a step: the lengths it ran at
			c := &out.Cells[0]
			c.Prompt, c.Output = cmp.Or(c.Prompt, k.Knobs().PromptTokens), cmp.Or(c.Output, k.Knobs().OutputTokens)
		}
		if res.Over == "" { // refused before a step
			out.Over = search.Over
		}
		if err != nil {
			out.Stopped = err.Error()
		}
	}
	s.mu.Lock()
	s.out, s.err = out, err
	s.mu.Unlock()
	return err
}

// Conclude is the run's report with the search's outcome, and its
// failure: exit 1 when even the lowest load broke (in any cell) or the
// search was cut short.
func (s *Search) Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion {
	c := s.Session.Conclude(ctx, last, breaches)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(c.Reports) == 0 { // nothing to report on (no agent's result came)
		return c
	}
	c.Reports[0].Capacity = s.out
	switch {
	case s.err != nil:
		c.Err = fmt.Errorf("the capacity search stopped before it was over: %w", s.err)
	case s.out == nil:
		c.Err = errors.New("the capacity search did not run")
	case !s.out.Found():
		c.Err = errors.New("no load held every objective, not even the lowest")
	}
	return c
}
