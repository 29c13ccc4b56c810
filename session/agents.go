package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/slo"
)

// AgentsConfig is a load that infertop agents run and this machine
// follows (run --agents). Follow starts following them: their merge, or,
// where they compare a canary with their baseline (their --compare;
// Compare set), the baselines' merge and the canaries', and the
// comparison of the two (pair). fleet/fleetflag makes it of fleet's
// types; session.Start calls it.
type AgentsConfig struct {
	Compare *compare.Options
	Follow  func() (merges []Merge, pair MergePair, err error)
}

// Merge is the agents' load merged, as a session follows it
// (fleet.Merging is one): a side of snapshots and objectives, its
// controller moving every agent, the agents' table, the merged reports,
// and the engine a capacity search over the agents drives.
type Merge interface {
	Side
	capacity.Shared
	What() string
	Controller() load.Controller
	// Finish ends the follow for why (a signal's: the agents run on; any
	// other: their runs end); FinishAgents ends their runs, the follower
	// waiting for their last words.
	Finish(why string)
	FinishAgents(why string)
	Stop()
	// Final is the merged report once the run is over; Now the merge of
	// the agents' last results.
	Final() (*report.Report, error)
	Now() (*report.Report, error)
	Table() *report.AgentsJSON
}

// MergePair is the agents' two merges compared (fleet.Pair is one): the
// comparison's source, the controller moving both sides of every agent,
// and the end of the follow.
type MergePair interface {
	PairSource
	Controller() load.Controller
	Finish(why string)
}

// Agents is the agents' load followed as one: their merge as the one
// side, its controller moving every agent. A capacity search over it
// (Spec.Search) splits each step between them.
type Agents struct {
	m Merge
}

// errNoMerge is a Follow that gave no merge to follow.
var errNoMerge = errors.New("the agents' follow gave no merge")

// startAgents starts following the agents a describes: their merge, or
// with a.Compare their baselines' merge and their canaries' compared (a
// Pair of merges); searched by plan where one is given.
func startAgents(a AgentsConfig, plan *Plan) (Session, error) {
	ms, mp, err := a.Follow()
	switch {
	case err != nil:
		return nil, err
	case a.Compare != nil && (len(ms) != 2 || mp == nil), a.Compare == nil && len(ms) != 1:
		for _, m := range ms {
			m.Stop()
		}
		return nil, errNoMerge
	case a.Compare != nil:
		m := &merges{m: [2]Merge{ms[0], ms[1]}, p: mp}
		p := newPair(m, mp, *a.Compare, time.Second)
		m.onReset = p.settings.v.Reset
		return &AgentsPair{Pair: p, m: m}, nil
	}
	s := &Agents{m: ms[0]}
	if plan != nil {
		return NewSearchOver(Searched{Session: s, Engine: s.m, Subscribe: s.m.Subscribe, End: s.m.FinishAgents}, *plan), nil
	}
	return s, nil
}

// What names the agents.
func (s *Agents) What() string { return s.m.What() }

// Sides is the one merged side.
func (s *Agents) Sides() []Side { return []Side{s.m} }

// Controller moves every agent: the whole load's knobs, each agent
// taking its share.
func (s *Agents) Controller() load.Controller { return s.m.Controller() }

// Finish ends the follow for why (fleet.Merging.Finish).
func (s *Agents) Finish(why string) { s.m.Finish(why) }

// Stop stops following; it may be called more than once.
func (s *Agents) Stop() error {
	s.m.Stop()
	return nil
}

// Conclude is the merged report with its breaches.
func (s *Agents) Conclude(_ context.Context, _ []load.Snapshot, breaches [][]slo.Verdict) Conclusion {
	rep, err := s.m.Final()
	if err != nil {
		return Conclusion{Err: err}
	}
	if len(breaches) > 0 {
		rep.Verdicts = append(rep.Verdicts, breaches[0]...)
	}
	return Conclusion{Reports: []*report.Report{rep}}
}

// Save writes the merge of the agents' last results into dir.
func (s *Agents) Save(_ context.Context, _ load.Snapshot, dir string) (string, error) {
	rep, err := s.m.Now()
	if err != nil {
		return "", err
	}
	return runner.SaveAs(rep, agentsSaveBase(dir))
}

// View: a capacity search may drive the agents (the dashboard's f key),
// each step split between them.
func (s *Agents) View() View { return View{Search: s.m} }

// Agents is the agents' table.
func (s *Agents) Agents() *report.AgentsJSON { return s.m.Table() }

// agentsSaveBase is where the s key saves the agents' reports in dir,
// without an extension: infertop-agents-START.
func agentsSaveBase(dir string) string {
	return filepath.Join(dir, "infertop-agents-"+time.Now().Format("20060102-150405"))
}

// AgentsPair is a Pair of the agents' two merges: a Pair, and the
// agents' table.
type AgentsPair struct {
	*Pair
	m *merges
}

// Agents is the agents' table: each agent one row, its two sides one
// process.
func (p *AgentsPair) Agents() *report.AgentsJSON { return p.m.m[0].Table() }

// merges are the agents' two merges as a Pair's loads.
type merges struct {
	m       [2]Merge
	p       MergePair
	onReset func()
}

func (m *merges) sides() [2]Side { return [2]Side{m.m[0], m.m[1]} }

func (m *merges) controller() load.Controller { return resetting{m.p.Controller(), m} }
func (m *merges) finish(why string)           { m.p.Finish(why) }
func (m *merges) release()                    {}

func (m *merges) stop() error {
	m.m[0].Stop()
	m.m[1].Stop()
	return nil
}

func (m *merges) names() [2]string { return [2]string{m.m[0].What(), m.m[1].What()} }

func (m *merges) what() string { return m.m[0].What() + ", their baseline against their canary" }

// reports are both merges' final reports.
func (m *merges) reports(context.Context, [2]load.Snapshot) ([2]*report.Report, error) {
	var reps [2]*report.Report
	for i, s := range m.m {
		rep, err := s.Final()
		if err != nil {
			if i == int(compare.Canary) {
				err = fmt.Errorf("the canary: %w", err)
			}
			return reps, err
		}
		reps[i] = rep
	}
	return reps, nil
}

// saved are the merges of both sides' last results.
func (m *merges) saved(_ context.Context, _ load.Snapshot, dir string) ([2]*report.Report, string, error) {
	var reps [2]*report.Report
	for i, s := range m.m {
		rep, err := s.Now()
		if err != nil {
			return reps, "", err
		}
		reps[i] = rep
	}
	return reps, agentsSaveBase(dir), nil
}

// resetting is the merges' controller whose reset also forgets the
// Pair's verdicts of earlier settings.
type resetting struct {
	load.Controller
	m *merges
}

func (r resetting) Reset() {
	r.Controller.Reset()
	if r.m.onReset != nil {
		r.m.onReset()
	}
}

// ErrAgentCut is a load an agent cannot run a share of.
var ErrAgentCut = fmt.Errorf("agent: not a load split between agents")

// CutFor makes the load s describes an agent's share (b.Cut), by kind:
// one runner's load, or a comparison's (--compare: its baseline's load
// being its canary's too, whose state the board then serves as well).
// Every other kind is refused by kind: a split's and a search's figures
// are judged on the whole load, which no agent has, and an agent follows
// no agents.
func (s *Spec) CutFor(b *agent.Board, requestsGiven bool) error {
	switch {
	case s.Agents != nil:
		return fmt.Errorf("%w: an agent follows no agents (--agents)", ErrAgentCut)
	case s.Split != nil:
		return fmt.Errorf("%w: a split (--split-by) compares its groups' statistics, which are not merged between agents; run it from one machine", ErrAgentCut)
	case s.Search != nil:
		return fmt.Errorf("%w: a capacity search judges each step on the whole load's figures: give it to the follower (run --agents --find-max)", ErrAgentCut)
	case s.Pair != nil:
		b.Compare = true
		return b.Cut(&s.Pair.Baseline.Load, requestsGiven)
	}
	return b.Cut(&s.Run.Load, requestsGiven)
}

// Serve records s's loads on b once they run: the first side the load
// (with s's controller), a comparison's second its canary.
func Serve(b *agent.Board, s Session) {
	sides := s.Sides()
	if len(sides) == 2 {
		if c, ok := sides[1].(agent.Load); ok {
			b.StartedCanary(c)
		}
	}
	if l, ok := sides[0].(agent.Load); ok {
		b.Started(l, s.Controller())
	}
}
