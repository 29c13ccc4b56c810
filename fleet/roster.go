package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
	"github.com/infertop/infertop/sanitize"
)

// lateFollowerBound is the longest an agents' load may have run before
// its follower came for the follower to count from its start; an agent
// saying more is not believed (its clock is then the follower's own).
const lateFollowerBound = 30 * 24 * time.Hour

// roster is the agents' status machine: it takes the addresses found and
// what each poll observed, and decides every agent's status (waiting,
// running, done, lost, unreachable, refused, replaced) and the fleet's
// view. It starts no goroutine and touches no network; the time is
// passed in, so a test drives it with synthetic observations. The
// Fleet's loop owns one and carries out what it decides: the pollers to
// start (found), to stop (stopped), and which may send controls
// (sendable).
type roster struct {
	// cfg is the fleet's (its defaults set): the roster reads the rules
	// (Version, Compare, Canary), the durations and Logf.
	cfg     Config
	members map[string]*member
	// v is the view's own part (Seq, Source, Started, ResolveErr); the
	// agents are added at each step.
	v          View
	lastChange time.Time // the last time an agent was found or changed status
	clockSet   bool      // the view's Started has been set from an agent's word
	finishing  string    // why Finish ended the wait ("": it did not)
	stops      []string  // the addresses polled no more, since stopped
}

// member is the roster's record of one agent.
type member struct {
	Agent
	// other says why its load is not the others' ("": it is); logged
	// says that was told to Logf.
	other, logged string
	// restarts counts the starts of its load again at its address
	// (each kept as a member of its own, at most maxRestarts).
	restarts int
	// resultFailing is since when its /result has failed while its
	// state says the run is over (zero: it has not); gaveUp says it was
	// called lost for it, and is polled no more.
	resultFailing time.Time
	resultWhy     string
	gaveUp        bool
}

// maxRestarts bounds the starts again of one address's load that are
// kept (each its last result, merged): a container restarted now and
// then, not an agent that says it started at every poll.
const maxRestarts = 8

// newRoster is a roster of no agent yet, its view started at now.
func newRoster(cfg Config, now time.Time) *roster {
	return &roster{cfg: cfg, members: map[string]*member{}, v: View{Source: cfg.Source.String(), Started: now}, lastChange: now}
}

// found takes a resolution at now: it returns the addresses new to the
// roster, to poll (at most discover.MaxAddresses agents in all), and keeps its
// error for the view.
func (r *roster) found(res resolution, now time.Time) []discover.Addr {
	r.v.ResolveErr = ""
	if res.err != nil {
		r.v.ResolveErr = sanitize.Text(res.err.Error())
	}
	var fresh []discover.Addr
	for _, a := range res.addrs {
		if r.members[a.HostPort] != nil || len(r.members) >= discover.MaxAddresses {
			continue
		}
		r.members[a.HostPort] = &member{Agent: Agent{Addr: a.HostPort, ServerName: a.ServerName, Status: report.AgentWaiting, Added: now}}
		r.lastChange = now
		fresh = append(fresh, a)
	}
	return fresh
}

// observe takes one poll's observation at now. It says whether the view
// may have changed: not for a poll that failed as the last one did.
func (r *roster) observe(o observation, now time.Time) bool {
	m := r.members[o.addr]
	if m == nil || m.Status == report.AgentRefused || m.Status == report.AgentReplaced || m.gaveUp {
		return false
	}
	if o.err != nil && !o.denied && m.LastErr == sanitize.Text(o.err.Error()) {
		return false
	}
	if st := o.state; st != nil && o.err == nil && startedAgain(m.Agent, *st) && m.restarts >= maxRestarts {
		r.refuse(m, fmt.Sprintf("its load started again more than %d times at this address: no restarted container does", maxRestarts))
		r.lastChange = now
		return true
	}
	if st := o.state; st != nil && o.err == nil && startedAgain(m.Agent, *st) {
		// The load at this address started again (its container
		// restarted in the same pod): the earlier run's last word
		// stays beside the new one's, as a replaced pod's does.
		old := retire(m.Agent, st.Index)
		r.members[o.addr+" "+m.State.Started.Format(time.RFC3339Nano)] = &member{Agent: old}
		r.cfg.Logf("fleet: the agent at %s started its load again: %s", m.Addr, old.Why)
		m.Agent = Agent{Addr: m.Addr, ServerName: m.ServerName, Status: report.AgentWaiting, Added: m.Added}
		m.restarts++
		m.resultFailing = time.Time{}
		r.lastChange = now
	}
	if r.fold(m, o, now) {
		r.lastChange = now
	}
	if !r.clockSet && m.HasState && m.Status != report.AgentRefused {
		// A follower that comes after the agents' load began
		// (kubectl run once the Job runs) counts its time from
		// their start, so its run time, series and phases are
		// theirs; once, at the first agent's word: a clock that
		// later moved back would undo what was shown.
		r.clockSet = true
		st := &m.State // untrusted: a start after its own clock, or a month back, is none
		if at := st.Started.Add(-m.ClockOffset); !st.Started.IsZero() && !st.Started.After(st.Now) && at.Before(r.v.Started) &&
			r.v.Started.Sub(at) < lateFollowerBound {
			r.v.Started = at
		}
	}
	return true
}

// finish ends the wait for the agents: the next step's view is Done,
// with why.
func (r *roster) finish(why string) { r.finishing = why }

// step judges the agents at now (one load, the lost, the unreachable,
// the replaced) and returns the next view, Done once they are over.
func (r *roster) step(now time.Time) View {
	judge(r.members)
	for _, m := range r.members {
		if r.age(m, now) {
			r.lastChange = now
		}
	}
	if r.replace(now) {
		r.lastChange = now
	}
	for _, m := range r.members {
		if m.other != "" && m.logged != m.other {
			m.logged = m.other
			r.cfg.Logf("fleet: refused the agent at %s: %s", m.Addr, m.other)
		}
	}
	r.v.Seq++
	out := view(r.v, r.members)
	switch {
	case r.finishing != "":
		out.Done, out.DoneWhy = true, r.finishing
	case len(r.members) == 0 && now.Sub(r.v.Started) >= r.cfg.LostAfter:
		out.Done, out.DoneWhy = true, "no agent found at "+sanitize.Text(r.cfg.Source.String())
	case len(r.members) > 0 && over(out.Agents) && (len(out.Missing) == 0 || now.Sub(r.lastChange) >= r.cfg.LostAfter):
		out.Done, out.DoneWhy = true, doneWhy(out.Agents)
	}
	return out
}

// stopView is the last view when the follower stops: Done, "stopped".
func (r *roster) stopView() View {
	v := r.v
	v.Done, v.DoneWhy = true, "stopped"
	return view(v, r.members)
}

// stopped returns the addresses whose agents are polled no more (refused,
// replaced, or done with their final result), each once.
func (r *roster) stopped() []string {
	out := r.stops
	r.stops = nil
	return out
}

// sendable says the agent at addr may be sent the follower's controls:
// an agent of the load, not refused nor replaced (none when following
// canaries: the pair's controls go to their baselines).
func (r *roster) sendable(addr string) bool {
	m := r.members[addr]
	return m != nil && !r.cfg.Canary && m.HasState && m.other == "" && m.Status != report.AgentRefused && m.Status != report.AgentReplaced
}

// fold takes one poll's observation into m at now; it says whether m's
// status changed.
func (r *roster) fold(m *member, o observation, now time.Time) bool {
	before := m.Status
	if o.err != nil {
		m.LastErr = sanitize.Text(o.err.Error())
		if o.denied {
			r.refuse(m, "it refused the token (HTTP 401): another --agents-token-file than the agents'")
		}
		return m.Status != before
	}
	m.LastSeen, m.LastErr = o.at, ""
	switch {
	case o.ctlErr != "":
		m.ControlErr = o.ctlErr
	case o.ctlOK:
		m.ControlErr = ""
	}
	if st := o.state; st != nil {
		m.State, m.HasState, m.ClockOffset = *st, true, o.offset
		if why := r.foreign(*st); why != "" {
			r.refuse(m, why)
			return true
		}
		if m.Status != report.AgentDone {
			m.Status, m.Why = report.AgentRunning, ""
		}
	}
	switch {
	case o.secs != nil:
		withSeconds(&m.Agent, o.secs)
		m.SecondsErr = ""
	case o.secErr != "":
		m.SecondsErr = o.secErr
	}
	if o.badResult {
		// Its result came and is none this follower merges: refused by
		// name, as an agent of another load is; the others are merged.
		why := strings.TrimPrefix(strings.TrimPrefix(o.resultErr.Error(), "merge: "), "result: ")
		r.refuse(m, "its result: "+sanitize.Short(why, maxWhyBytes))
		return true
	}
	switch {
	case o.resultErr == nil || !m.State.Final:
		m.resultFailing = time.Time{}
	case m.resultFailing.IsZero():
		m.resultFailing = now
	}
	if o.resultErr != nil {
		m.resultWhy = sanitize.Short(o.resultErr.Error(), maxWhyBytes)
	}
	if o.result != nil {
		m.Result, m.Raw, m.ResultPhase = o.result, o.raw, o.resultPhase
		if o.final {
			m.Final, m.Status = true, report.AgentDone
			r.stops = append(r.stops, m.Addr) // its last word: polled no more
		}
	}
	return m.Status != before
}

// foreign says why an agent's state is none this follower takes ("": it
// takes it): another version, or no share.
func (r *roster) foreign(st agent.State) string {
	switch {
	case r.cfg.Version != "" && st.Version != r.cfg.Version:
		return sanitize.Text(fmt.Sprintf("version %q, not this infertop's %q", st.Version, r.cfg.Version))
	case st.Of < 1 || st.Of > agent.MaxAgents || st.Index < 0 || st.Index >= st.Of:
		return sanitize.Text(fmt.Sprintf("index %d of %d is no share", st.Index, st.Of))
	case st.ControlSeq > agent.MaxSeq: // taken from no follower: it would wrap this one's count
		return fmt.Sprintf("its control seq %d is past any a follower sends (%d)", st.ControlSeq, uint64(agent.MaxSeq))
	case st.Compare && !r.cfg.Compare:
		return "it compares a canary (its --compare): follow it with --agents-compare"
	case !st.Compare && r.cfg.Compare:
		return "it compares nothing (no --compare): follow it without --agents-compare"
	case st.Canary != r.cfg.Canary:
		return "its state is not its canary's" // the canary's path answered with another side's
	}
	return ""
}

// loadKey is what the shares of one load have alike in their states.
func loadKey(st agent.State) string {
	return fmt.Sprint(st.Of, st.Mode, st.PromptTokens, st.OutputTokens)
}

// judge holds the agents to one load: the one most of them run (a tie:
// the lowest index's). An agent of another is refused by name while it
// is (m.other), and taken again should the most turn to its load.
func judge(members map[string]*member) {
	count := map[string]int{}
	var ref *member
	judged := func(m *member) bool { // a replaced pod's word is its last, not the load's now
		// One waiting for the common start says no knobs yet (its state
		// fills them from its load's snapshot): nothing to judge.
		return m.HasState && m.Status != report.AgentRefused && m.Status != report.AgentReplaced && !m.State.Started.IsZero()
	}
	for _, m := range members {
		if judged(m) {
			count[loadKey(m.State)]++
		}
	}
	for _, m := range members {
		if !judged(m) {
			continue
		}
		k := loadKey(m.State)
		if ref == nil {
			ref = m
			continue
		}
		rk := loadKey(ref.State)
		if count[k] > count[rk] || count[k] == count[rk] && (m.State.Index < ref.State.Index ||
			m.State.Index == ref.State.Index && m.Addr < ref.Addr) {
			ref = m
		}
	}
	for _, m := range members {
		m.other = ""
		if ref == nil || m == ref || !judged(m) {
			continue
		}
		st, r := m.State, ref.State
		switch {
		case st.Of != r.Of:
			m.other = fmt.Sprintf("a share of a load split %d ways, not %d as %s's", st.Of, r.Of, ref.name())
		case loadKey(st) != loadKey(r) && st.ControlSeq == r.ControlSeq: // a control on its way is no other load
			m.other = sanitize.Text(fmt.Sprintf("other knobs (%s loop, prompt %d, output %d; not %s's %s loop, prompt %d, output %d)",
				st.Mode, st.PromptTokens, st.OutputTokens, ref.name(), r.Mode, r.PromptTokens, r.OutputTokens))
		case m.Result != nil && ref.Result != nil:
			if d := merge.Differences(&ref.Result.Result, &m.Result.Result); len(d) > 0 {
				m.other = sanitize.Text(fmt.Sprintf("its result is of another load than %s's: %s", ref.name(), strings.Join(d, "; ")))
			}
		}
	}
}

// replace marks an index's earlier pod replaced once a later one of that
// index answers and it is silent: an Indexed Job's failed index started
// again in a new pod, at a new address, from zero. The earlier pod's
// last result stays in the merge (its requests in flight then counted
// incomplete) and the new one's is added, so its requests are neither
// lost nor counted twice. While both answer, the later is refused by
// name: two agents would be running one share. It says whether a
// status changed.
func (r *roster) replace(now time.Time) bool {
	byIndex := map[int][]*member{}
	for _, m := range r.members {
		if m.HasState && m.other == "" && m.Status != report.AgentRefused {
			byIndex[m.State.Index] = append(byIndex[m.State.Index], m)
		}
	}
	changed := false
	for i, ms := range byIndex {
		if len(ms) < 2 {
			continue
		}
		slices.SortFunc(ms, earlier)
		last := ms[len(ms)-1]
		if r.silent(last, now) || last.Status == report.AgentReplaced {
			continue // no new pod answering: the silent are lost in time
		}
		for _, m := range ms[:len(ms)-1] {
			// One agent under two addresses (a dual-stack pod) is followed
			// once, where it answers.
			same := !m.State.Started.IsZero() && m.State.Started.Equal(last.State.Started)
			twice := "the same agent as %s (index %d, the same start), under another address: followed there"
			switch {
			case same && r.silent(m, now):
				m.other = fmt.Sprintf(twice, last.Addr, i)
			case same:
				last.other = fmt.Sprintf(twice, m.Addr, i)
			case m.Status == report.AgentReplaced:
			case m.Status == report.AgentDone && m.Addr == last.Addr: // its load at this address started again: both runs kept
			case m.Status == report.AgentDone:
				// Its last word is in the merge: another agent of its
				// index, whenever it ends, would count the share twice.
				last.other = fmt.Sprintf("index %d was run by %s too, to its end: two agents of one share", i, m.name())
			case r.silent(m, now):
				m.Status = report.AgentReplaced
				m.Why = fmt.Sprintf("index %d started again at %s: this pod's last result is kept (its requests in flight counted incomplete), the new one's added",
					i, last.Addr)
				r.stops = append(r.stops, m.Addr)
				changed = true
			default:
				last.other = fmt.Sprintf("index %d is run by %s too, which still answers: two agents of one share", i, m.name())
			}
		}
	}
	return changed
}

// startedAgain says st is of a load started again where a, its
// address's agent, had one running or over: another start.
func startedAgain(a Agent, st agent.State) bool {
	// A load started again answers before it starts (its start zero
	// until then): that is another start too.
	return a.HasState && a.Status != report.AgentRefused && !a.State.Started.IsZero() && !st.Started.Equal(a.State.Started)
}

// retire is a, whose load at its address started again, kept as that
// earlier run's last word: done if it was over (its final result), else
// replaced, its last result in the merge with its requests in flight
// counted incomplete. It is polled no more.
func retire(a Agent, index int) Agent {
	if a.Status == report.AgentDone && a.Final {
		a.Why = fmt.Sprintf("its load started again at this address (index %d): this earlier run's final result is kept", index)
		return a
	}
	a.Status = report.AgentReplaced
	a.Why = fmt.Sprintf("its load started again at this address (index %d, a restarted container): this earlier run's last result is kept (its requests in flight counted incomplete), the new one's added", index)
	return a
}

// earlier orders the pods of one index by the start of their loads (one
// not started yet last), then by when they were found.
func earlier(a, b *member) int {
	as, bs := a.State.Started, b.State.Started
	switch {
	case as.IsZero() != bs.IsZero():
		if as.IsZero() {
			return 1
		}
		return -1
	case !as.Equal(bs):
		return as.Compare(bs)
	case !a.Added.Equal(b.Added):
		return a.Added.Compare(b.Added)
	}
	return strings.Compare(a.Addr, b.Addr)
}

// silent says m has stopped answering: lost, or its polls failing for
// two rounds.
func (r *roster) silent(m *member, now time.Time) bool {
	return m.Status == report.AgentLost || m.Status == report.AgentUnreachable || m.LastErr != "" && now.Sub(m.LastSeen) >= 2*r.cfg.PollEvery
}

// refuse marks m refused for why, stops polling it and says so.
func (r *roster) refuse(m *member, why string) {
	m.Status, m.Why = report.AgentRefused, why
	m.Result, m.Raw = nil, nil
	r.stops = append(r.stops, m.Addr)
	r.cfg.Logf("fleet: refused the agent at %s: %s", m.Addr, why)
}

func (m *member) name() string {
	if m.HasState {
		return fmt.Sprintf("agent %d (%s)", m.State.Index, m.Addr)
	}
	return "the agent at " + m.Addr
}

// age marks m lost or unreachable once it has been silent past the
// bound, and says whether that changed its status.
func (r *roster) age(m *member, now time.Time) bool {
	if m.Status == report.AgentRunning && !m.resultFailing.IsZero() && now.Sub(m.resultFailing) >= r.cfg.LostAfter {
		// Its state says the run is over and its last word never comes:
		// it is waited for no longer.
		m.Status, m.gaveUp = report.AgentLost, true
		m.Why = fmt.Sprintf("it says its run is over, and its result failed for %s (last: %s); its requests are counted up to its last result",
			now.Sub(m.resultFailing).Round(time.Second), orNone(m.resultWhy))
		r.stops = append(r.stops, m.Addr)
		return true
	}
	switch m.Status {
	case report.AgentRunning:
		if silent := now.Sub(m.LastSeen); silent >= r.cfg.LostAfter {
			m.Status = report.AgentLost
			m.Why = fmt.Sprintf("silent for %s (last error: %s); its requests are counted up to its last result", silent.Round(time.Second),
				orNone(m.LastErr))
			return true
		}
	case report.AgentWaiting:
		if now.Sub(m.Added) >= r.cfg.LostAfter {
			m.Status = report.AgentUnreachable
			m.Why = "never answered: " + orNone(m.LastErr)
			return true
		}
	case report.AgentLost, report.AgentUnreachable:
		// it answers again: fold made it running
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
