package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
)

// What the fleet shows: each agent as it stands (Agent) and the fleet at
// a moment (View), built by the roster at every step.

// Agent is one agent as the fleet sees it at a moment. Its pointers are
// never written once published.
type Agent struct {
	// Addr is where it is polled, ServerName its certificate's name.
	Addr, ServerName string
	// Status is one of report's Agent* states; Why says why it is lost,
	// unreachable or refused, LastErr the last failed poll's reason.
	Status       string
	Why, LastErr string
	// State is its last /state (HasState: one came).
	State    agent.State
	HasState bool
	// Result is its last /result decoded, Raw it re-encoded (none of the
	// agent's padding; nil past maxKeptResult), Final whether it
	// is the last word. ResultPhase is the phase its state named just
	// before that result was asked for: the result was built in it or
	// later, so every phase before it is in the result as far as the
	// agent sends in it (a phase that sent nothing is in no result).
	Result      *merge.Input
	Raw         []byte
	Final       bool
	ResultPhase int
	// Added is when it was first named, LastSeen when it last answered;
	// ClockOffset is its clock less ours, at the middle of the round trip.
	Added, LastSeen time.Time
	ClockOffset     time.Duration
	// ControlErr is its refusal of the follower's last control ("":
	// none), sanitised.
	ControlErr string
	// Seconds are its newest sealed seconds (/seconds, every PollEvery),
	// oldest first, at most keepSeconds, since its last reset
	// (SecondsFrom); SecondsStart is its second 0 on its clock.
	// SecondsErr is why its last /seconds was refused ("": it was not),
	// sanitised.
	Seconds      []Second
	SecondsStart time.Time
	SecondsFrom  int64
	SecondsErr   string
}

// Index is the agent's index, -1 before its first state.
func (a Agent) Index() int {
	if !a.HasState {
		return -1
	}
	return a.State.Index
}

// index is m's Index, without a copy of its Agent.
func (m *member) index() int {
	if !m.HasState {
		return -1
	}
	return m.State.Index
}

// View is the fleet at a moment.
type View struct {
	// Seq counts views from 1.
	Seq    uint64
	Source string
	// Of is the split (the first accepted agent's --of; 0 before one).
	Of int
	// Agents are sorted by index, then address.
	Agents []Agent
	// Missing are the indexes of 0..Of-1 no accepted agent has.
	Missing []int
	// Done says the fleet is over: every agent done, lost, unreachable or
	// refused (or Finish was called); DoneWhy says so in a line.
	Done    bool
	DoneWhy string
	// Started is when the fleet started, or, where the first agent that
	// answered said its load had started before, that start (on this
	// machine's clock): the instant the follower's run time counts from.
	// ResolveErr is the last resolution's error ("" none).
	Started    time.Time
	ResolveErr string
}

// view is v with the members' state now.
func view(v View, members map[string]*member) View {
	// Sorted as pointers, then copied once: an Agent is some 600 bytes,
	// and a sort of thousands by value costs a copy per comparison.
	ms := make([]*member, 0, len(members))
	for _, m := range members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int {
		if ai, bi := a.index(), b.index(); ai != bi {
			return ai - bi
		}
		return strings.Compare(a.Addr, b.Addr)
	})
	v.Agents = make([]Agent, 0, len(ms))
	for _, m := range ms {
		a := m.Agent
		if m.other != "" {
			a.Status, a.Why = report.AgentRefused, m.other
		}
		v.Agents = append(v.Agents, a)
	}
	v.Of, v.Missing = 0, nil
	have := map[int]bool{}
	for _, a := range v.Agents {
		if a.HasState && a.Status != report.AgentRefused {
			if v.Of == 0 {
				v.Of = a.State.Of
			}
			have[a.State.Index] = true
		}
	}
	for i := range v.Of {
		if !have[i] {
			v.Missing = append(v.Missing, i)
		}
	}
	return v
}

// over says every agent is done, lost, unreachable or refused.
func over(as []Agent) bool {
	for _, a := range as {
		if a.Status == report.AgentRunning || a.Status == report.AgentWaiting {
			return false
		}
	}
	return true
}

// doneWhy says how the agents ended, in a line.
func doneWhy(as []Agent) string {
	n := map[string]int{}
	for _, a := range as {
		n[a.Status]++
	}
	var parts []string
	for _, s := range []string{report.AgentDone, report.AgentLost, report.AgentReplaced, report.AgentUnreachable, report.AgentRefused} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return "every agent over: " + strings.Join(parts, ", ")
}
