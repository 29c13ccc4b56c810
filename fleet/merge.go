package fleet

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/infertop/infertop/report"
	reportmerge "github.com/infertop/infertop/report/merge"
)

// ErrNoResults is a view with no agent's result to merge.
var ErrNoResults = errors.New("no agent's result came")

// Merge merges the results of v's agents exactly (report/merge): every
// agent's last result but the refused ones', a lost or replaced agent's
// (or one still running) with its requests in flight at that result
// counted incomplete, so that sent = completed + failed + incomplete
// over the whole. Phases some agents lack (a knob change on its way, an
// index started again) are merged from those that have them, each gap
// named (merge.Options.Gaps). The merged result holds the agents' table
// with each agent's own result (infertop.agents).
func Merge(v View) (*report.MergedResult, error) { return mergeView(v, false) }

// mergeView is Merge; live leaves a running agent's requests in flight in
// flight (a live snapshot's phases count them pending, as a search over
// the agents waits for them), the others' counted incomplete.
func mergeView(v View, live bool) (*report.MergedResult, error) {
	var ins []reportmerge.Input
	seen := map[[sha256.Size]byte]bool{}
	for _, a := range v.Agents {
		if a.Result == nil || a.Status == report.AgentRefused {
			continue
		}
		// One result under two runs (an agent that says it started
		// again, and serves the same) is merged once.
		if fp := reportmerge.Fingerprint(&a.Result.Result); seen[fp] {
			continue
		} else {
			seen[fp] = true
		}
		in := *a.Result
		if !a.Final && !(live && a.Status == report.AgentRunning) {
			in = settled(in)
		}
		if at, ok := commonStart(v); ok && a.HasState && !a.State.Started.IsZero() {
			in = onCommonClock(in, a.State.Started.Add(-a.ClockOffset).Sub(at))
		}
		ins = append(ins, in)
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("fleet: %w (%s)", ErrNoResults, doneWhy(v.Agents))
	}
	m, err := reportmerge.Merge(ins, reportmerge.Options{One: true, Gaps: true})
	if err != nil {
		return nil, err
	}
	m.Result.Agents = agentsJSON(v)
	return &report.MergedResult{Result: m.Result, MaxConcurrency: m.MaxConcurrency}, nil
}

// settled is a result not final: its requests in flight counted
// incomplete (they were never seen to finish), in the run and in every
// phase.
func settled(in reportmerge.Input) reportmerge.Input {
	r := in.Result
	fix := func(p *report.PhaseJSON) {
		if n := p.Sent - p.Completed - p.Failed - p.Incomplete; n > 0 {
			p.Incomplete += n
		}
	}
	fix(&r.Run)
	r.Phases = append([]report.PhaseJSON(nil), r.Phases...)
	for i := range r.Phases {
		fix(&r.Phases[i])
	}
	in.Result = r
	return in
}

// onCommonClock is an agent's result whose load started off after the
// agents' common start: its phases' and its run's starts (from its own
// start) moved by off onto the common start's, so that a late agent's
// phase is not merged as begun before the others' (less than a
// millisecond: as it is).
func onCommonClock(in reportmerge.Input, off time.Duration) reportmerge.Input {
	if off < time.Millisecond {
		return in
	}
	r := in.Result
	r.Run.StartS += off.Seconds()
	r.Phases = slices.Clone(r.Phases)
	for i := range r.Phases {
		r.Phases[i].StartS += off.Seconds()
	}
	in.Result = r
	return in
}

// agentsJSON is v's agents as infertop.agents writes them.
func agentsJSON(v View) *report.AgentsJSON {
	out := &report.AgentsJSON{Source: v.Source, Of: v.Of, Missing: append([]int{}, v.Missing...), Agents: []report.AgentJSON{}}
	for _, a := range v.Agents {
		out.Agents = append(out.Agents, AgentRow(a))
	}
	return out
}

// AgentRow is one agent's row of the agents' table: its counters and
// p99 from its last result (from its last state before one came).
func AgentRow(a Agent) report.AgentJSON {
	j := report.AgentJSON{Index: a.Index(), Address: a.Addr, State: a.Status, Why: a.Why}
	if a.ControlErr != "" {
		j.Why = strings.TrimPrefix(j.Why+"; "+a.ControlErr, "; ")
	}
	if a.HasState {
		st := a.State
		j.Sent, j.Completed, j.Failed, j.Incomplete, j.InFlight = st.Sent, st.Completed, st.Failed, st.Incomplete, st.InFlight
		j.StartOffsetMS = st.OffsetMS
		j.ClockOffsetMS = float64(a.ClockOffset) / float64(time.Millisecond)
		if st.TTFTP99MS > 0 {
			p := st.TTFTP99MS
			j.TTFTP99MS = &p
		}
		seen := a.LastSeen.UTC()
		j.LastSeen = &seen
	}
	if r := a.Result; r != nil && a.Status != report.AgentRefused {
		// The counters of its last result once it no longer runs (its
		// last word, or what a lost agent's merge counts), or with no
		// state beside it; while it runs, its state's are newer (a
		// result so far is up to ResultEvery old and counts what was in
		// flight then as incomplete).
		if run := r.Result.Run; a.Final || !a.HasState || a.Status != report.AgentRunning {
			j.Sent, j.Completed, j.Failed, j.Incomplete = run.Sent, run.Completed, run.Failed, run.Incomplete
			j.InFlight = max(run.Sent-run.Completed-run.Failed-run.Incomplete, 0)
			if d := run.Latency["ttft"]; d.Count > 0 {
				p := d.P99
				j.TTFTP99MS = &p
			} else {
				j.TTFTP99MS = nil
			}
		}
		j.Result = a.Raw
	}
	if a.Status != report.AgentRunning && a.Status != report.AgentWaiting && !a.Final && j.InFlight > 0 {
		// Never seen to finish: the merge counts them incomplete.
		j.Incomplete, j.InFlight = j.Incomplete+j.InFlight, 0
	}
	return j
}
