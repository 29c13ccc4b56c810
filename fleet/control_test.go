package fleet

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// shareLoad is an agent's running load as its board moves it: the
// knobs its controller was given, its resets counted.
type shareLoad struct {
	mu     sync.Mutex
	knobs  load.Knobs
	resets int
	ended  int
}

func (l *shareLoad) Finish(string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended++
}

func (l *shareLoad) Latest() load.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return load.Snapshot{Knobs: l.knobs}
}

func (l *shareLoad) Report(context.Context, load.Snapshot) *report.Report { return nil }

func (l *shareLoad) Update(fn func(*load.Knobs)) load.Knobs {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn(&l.knobs)
	return l.knobs
}

func (l *shareLoad) SetWindow(time.Duration) {}

func (l *shareLoad) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.resets++
}

// agentFake is an in-process agent that takes controls: a real
// agent.Board over a shareLoad, behind agent.Handler, its counters and
// result the test's (as fake's).
type agentFake struct {
	*fake
	board *agent.Board
	load  *shareLoad
}

// newAgent is agent index of of, its share of whole running since
// started, answering with res.
func newAgent(t *testing.T, index, of int, whole load.Knobs, started time.Time, res []byte) *agentFake {
	t.Helper()
	b := &agent.Board{Share: agent.Share{Index: index, Of: of}, Version: "test"}
	cfg := load.Config{Knobs: whole}
	if err := b.Cut(&cfg, false); err != nil {
		t.Fatal(err)
	}
	l := &shareLoad{knobs: cfg.Knobs}
	b.Started(l, l)
	a := &agentFake{fake: &fake{st: state(index, of), res: res}, board: b, load: l}
	a.st.Started = started
	h := agent.NewHandler([]byte(testToken), func() agent.State {
		bs, k := b.State(), l.Latest().Knobs
		a.mu.Lock()
		defer a.mu.Unlock()
		s := a.st
		s.Now, s.Whole, s.ControlSeq, s.Phase = time.Now(), bs.Whole, bs.ControlSeq, bs.Phase
		s.Mode, s.Concurrency, s.Rate, s.PromptTokens, s.OutputTokens = k.Mode.String(), k.Concurrency, k.Rate, k.PromptTokens, k.OutputTokens
		return s
	}, func(_ context.Context, w io.Writer) (bool, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, err := w.Write(a.res)
		return a.st.Final, err
	}, nil).WithControl(b.Control)
	a.srv = httptest.NewServer(h)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agentFake) knobs() load.Knobs { return a.load.Latest().Knobs }

var testWhole = load.Knobs{Concurrency: 8, PromptTokens: 16, OutputTokens: 8}

// TestKnobsReachEveryAgent: the merged agents' controller keeps the
// whole load's knobs (the agents' own at the start), returns at once,
// and its change reaches all four agents within a tick (the pollers
// wake for it: the tick here is 5 s), each taking its share; the
// snapshot shows the whole, the clamp leaves no share without a request
// in flight, and a reset reaches them all.
func TestKnobsReachEveryAgent(t *testing.T) {
	var agents []*agentFake
	var addrs []string
	for i := range 4 {
		a := newAgent(t, i, 4, testWhole, time.Now(), result(t, 4, 3, 0))
		agents, addrs = append(agents, a), append(addrs, a.addr())
	}
	const tick = 5 * time.Second
	f := follow(t, strings.Join(addrs, ","), func(c *Config) { c.PollEvery, c.ResultEvery, c.LostAfter = tick, tick, 30*time.Second })
	s := NewMerging(f, nil)
	defer s.Stop()
	ctl := s.Controller()
	waitView(t, f, "four agents running", func(v View) bool {
		return len(v.Agents) == 4 && v.Agents[3].Status == report.AgentRunning && v.Agents[0].Status == report.AgentRunning
	})
	waitSnap(t, s, "the whole knobs known", func(sn load.Snapshot) bool { return sn.Knobs.Concurrency == 8 })
	// What the agents' requests in flight are doing, together: counts
	// summed, the oldest of any (one agent's nonsense age is none).
	for i, a := range agents {
		a.mu.Lock()
		a.st.Streams = agent.StreamsState{Waiting: 1, Generating: 2, Stalled: i % 2, OldestGeneratingMS: float64(1000 * (i + 1)), LongestStallMS: -5}
		a.mu.Unlock()
	}
	waitSnap(t, s, "the agents' streams summed", func(sn load.Snapshot) bool {
		return sn.Streams == load.Streams{Waiting: 4, Generating: 8, Stalled: 2, OldestGenerating: 4 * time.Second} && sn.OldestInFlight == 4*time.Second
	})
	// The header names what the agents load, as their results say.
	waitSnap(t, s, "the agents' model and protocol", func(sn load.Snapshot) bool { return sn.Target.Model == "sim" && sn.Target.API == "openai-chat" })
	asked := time.Now()
	k := ctl.Update(func(k *load.Knobs) { k.Concurrency, k.PromptTokens = 13, 32 })
	if k.Concurrency != 13 || k.PromptTokens != 32 {
		t.Fatalf("Update: %+v", k)
	}
	v := waitView(t, f, "every agent at the new knobs", func(v View) bool {
		for _, a := range v.Agents {
			if a.State.ControlSeq < 1 {
				return false
			}
		}
		return true
	})
	took := time.Since(asked)
	t.Logf("the change reached all four in %v (a tick is %v)", took, tick)
	if took >= tick {
		t.Errorf("the change took %v, past a tick (%v)", took, tick)
	}
	for i, a := range agents {
		if k := a.knobs(); k.Concurrency != []int{4, 3, 3, 3}[i] || k.PromptTokens != 32 {
			t.Errorf("agent %d: %+v", i, k)
		}
	}
	for _, a := range v.Agents {
		if a.Status != report.AgentRunning || a.ControlErr != "" {
			t.Errorf("%s: %s %s %s", a.Addr, a.Status, a.Why, a.ControlErr)
		}
	}
	waitSnap(t, s, "the snapshot at the whole", func(sn load.Snapshot) bool { return sn.Knobs.Concurrency == 13 })
	// A share without a request in flight: held at one each.
	if k := ctl.Update(func(k *load.Knobs) { k.Concurrency = 1 }); k.Concurrency != 4 {
		t.Errorf("concurrency 1 over four agents: %d", k.Concurrency)
	}
	ctl.Reset()
	waitView(t, f, "the reset everywhere", func(View) bool {
		for _, a := range agents {
			if a.load.Latest().Knobs.Concurrency != 1 || func() int { a.load.mu.Lock(); defer a.load.mu.Unlock(); return a.load.resets }() != 1 {
				return false
			}
		}
		return true
	})
	// A window none of the agents' is no control; one they refuse (sent
	// past the controller's checks) is said in every row.
	ctl.SetWindow(7 * time.Millisecond)
	if out, _ := f.control(); out.c.Seq != 3 {
		t.Errorf("a window of 7ms was sent: %+v", out.c)
	}
	f.Send(agent.Control{Seq: 4, WindowMS: 7}, time.Time{})
	v = waitView(t, f, "the refusal in every row", func(v View) bool {
		for _, a := range v.Agents {
			if !strings.Contains(AgentRow(a).Why, "refused the knob change (HTTP 422): agent: a window of 7ms") {
				return false
			}
		}
		return true
	})
	for _, a := range v.Agents {
		if a.Status != report.AgentRunning || a.State.ControlSeq != 3 {
			t.Errorf("%s after a refused control: %s, seq %d", a.Addr, a.Status, a.State.ControlSeq)
		}
	}
}

// TestSearchControls: the merged agents as a capacity search's engine
// (capacity.Shared): ready once the whole knobs are known, no load below
// one request in flight (or the slowest rate) an agent, every step a
// phase the follower numbers past phase 1 and past every agent's, sent
// to all of them with the knobs changed or not; the search's end ends
// every agent's run.
func TestSearchControls(t *testing.T) {
	var agents []*agentFake
	var addrs []string
	for i := range 2 {
		a := newAgent(t, i, 2, testWhole, time.Now(), result(t, 4, 3, 0))
		agents, addrs = append(agents, a), append(addrs, a.addr())
	}
	f := follow(t, strings.Join(addrs, ","), func(c *Config) { c.PollEvery, c.ResultEvery, c.LostAfter = time.Second, 5*time.Second, 30*time.Second })
	s := NewMerging(f, nil)
	defer s.Stop()
	var _ capacity.Shared = s
	select {
	case <-s.Ready():
	case <-time.After(20 * time.Second): // a bound on a hang, not a wait
		t.Fatal("never ready")
	}
	if s.Least(capacity.Concurrency) != 2 || s.Least(capacity.Rate) != 2*load.MinRate {
		t.Errorf("least %v, %v over two agents", s.Least(capacity.Concurrency), s.Least(capacity.Rate))
	}
	phaseOn := func(a *agentFake) int { return a.board.State().Phase }
	waitAll := func(what string, cond func(a *agentFake) bool) {
		t.Helper()
		waitView(t, f, what, func(View) bool {
			for _, a := range agents {
				if !cond(a) {
					return false
				}
			}
			return true
		})
	}
	k, id := s.NewPhase(func(k *load.Knobs) { k.Concurrency = 6 })
	if k.Concurrency != 6 || id < 2 {
		t.Fatalf("NewPhase: %+v, phase %d", k, id)
	}
	waitAll("the step's phase on every agent", func(a *agentFake) bool { return phaseOn(a) == id && a.knobs().Concurrency == 3 })
	// A phase that sent nothing is in no agent's result: the snapshot
	// holds it, empty, once every agent's result was asked for in it.
	sn := waitSnap(t, s, "the step's phase in the snapshot", func(sn load.Snapshot) bool {
		return len(sn.Phases) > 0 && sn.Phases[len(sn.Phases)-1].ID == id
	})
	if p := sn.Phases[len(sn.Phases)-1]; p.Sent() != 0 || p.Knobs.Concurrency != 6 || !p.Current {
		t.Errorf("the step's phase: %+v", p)
	}
	// The measured phase after a warm-up: no knob turns, a phase begins.
	if _, next := s.NewPhase(func(*load.Knobs) {}); next != id+1 {
		t.Errorf("the next phase %d, want %d", next, id+1)
	}
	waitAll("the next phase on every agent", func(a *agentFake) bool { return phaseOn(a) == id+1 })
	// A reset names a phase too, so that it is one id everywhere.
	s.Controller().Reset()
	waitAll("the reset's phase on every agent", func(a *agentFake) bool { return phaseOn(a) == id+2 })
	s.FinishAgents("the search ended")
	waitAll("every run ended", func(a *agentFake) bool { a.load.mu.Lock(); defer a.load.mu.Unlock(); return a.load.ended == 1 })
	// The runs are ending, for the reason given: a second signal stops the follower at once.
	waitSnap(t, s, "the snapshot ending", func(sn load.Snapshot) bool { return sn.Ending() && sn.DoneWhy == "the search ended" })
}

// waitSnap waits for a snapshot of s that cond holds for.
func waitSnap(t *testing.T, s *Merging, what string, cond func(load.Snapshot) bool) load.Snapshot {
	t.Helper()
	snaps, stop := s.Subscribe()
	defer stop()
	bound := time.NewTimer(20 * time.Second) // a bound on a hang, not a wait
	defer bound.Stop()
	for {
		select {
		case sn, ok := <-snaps:
			if !ok {
				t.Fatalf("the session ended before %s", what)
			}
			if cond(sn) {
				return sn
			}
		case <-bound.C:
			t.Fatalf("never %s", what)
		}
	}
}

// TestRestartedIndex: an Indexed Job's failed index comes back in a new
// pod at a new address, from zero. While the old pod still answers the
// new one is refused by name (two agents of one share); once the old
// falls silent it is replaced: its last result is kept, its requests in
// flight counted incomplete, the new pod's added, so nothing is counted
// twice or lost; the new pod is sent the latest control.
func TestRestartedIndex(t *testing.T) {
	t0 := time.Now()
	a0 := newAgent(t, 0, 2, testWhole, t0, result(t, 10, 5, 0))
	old := newAgent(t, 1, 2, testWhole, t0, result(t, 6, 7, 2))
	fresh := newAgent(t, 1, 2, testWhole, t0.Add(time.Minute), result(t, 3, 9, 0))
	f := follow(t, a0.addr()+","+old.addr()+","+fresh.addr(), nil)
	s := NewMerging(f, nil)
	defer s.Stop()
	waitView(t, f, "the new pod refused while the old answers", func(v View) bool {
		a := byAddr(v, fresh.addr())
		return a.Status == report.AgentRefused && strings.Contains(a.Why, "two agents of one share") && byAddr(v, old.addr()).Result != nil
	})
	waitSnap(t, s, "the whole knobs known", func(sn load.Snapshot) bool { return sn.Knobs.Concurrency == 8 })
	s.Controller().Update(func(k *load.Knobs) { k.Concurrency = 10 })
	waitView(t, f, "the control on the old pod", func(v View) bool { return byAddr(v, old.addr()).State.ControlSeq == 1 })
	if fresh.board.State().ControlSeq != 0 {
		t.Error("a refused agent was sent the control")
	}
	old.srv.Close() // the old pod fails
	v := waitView(t, f, "the old pod replaced, the new one running at the latest knobs", func(v View) bool {
		return byAddr(v, old.addr()).Status == report.AgentReplaced && byAddr(v, fresh.addr()).Status == report.AgentRunning &&
			byAddr(v, fresh.addr()).State.ControlSeq == 1
	})
	if k := fresh.knobs(); k.Concurrency != 5 {
		t.Errorf("the new pod's knobs: %+v", k)
	}
	if why := byAddr(v, old.addr()).Why; !strings.Contains(why, "started again at "+fresh.addr()) {
		t.Errorf("replaced: %s", why)
	}
	a0.set(func(s *agent.State) { s.Final, s.Done = true, true })
	fresh.set(func(s *agent.State) { s.Final, s.Done = true, true })
	v = waitView(t, f, "the fleet over", func(v View) bool { return v.Done })
	if !strings.Contains(v.DoneWhy, "2 done, 1 replaced") || len(v.Missing) != 0 {
		t.Errorf("done: %s, missing %v", v.DoneWhy, v.Missing)
	}
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Result.Run
	if r.Sent != 10+8+3 || r.Completed != 19 || r.Incomplete != 2 || r.Latency["ttft"].Count != 19 {
		t.Errorf("merged: sent %d = %d + %d + %d, TTFT count %d", r.Sent, r.Completed, r.Failed, r.Incomplete, r.Latency["ttft"].Count)
	}
	rows := map[string]report.AgentJSON{}
	for _, row := range m.Result.Agents.Agents {
		rows[row.Address] = row
	}
	if o, n := rows[old.addr()], rows[fresh.addr()]; len(rows) != 3 || o.Index != 1 || n.Index != 1 || o.State != report.AgentReplaced ||
		n.State != report.AgentDone || o.Incomplete != 2 || o.InFlight != 0 || o.Result == nil || n.Result == nil {
		t.Errorf("the agents' table: %+v", m.Result.Agents.Agents)
	}
}

// TestHurry: a search's step fetches the agents' results at every poll
// for HurryFor, then every ResultEvery again (a search over, the agents
// running on), on the fleet's clock.
func TestHurry(t *testing.T) {
	now := time.Unix(1000, 0)
	f := &Fleet{cfg: Config{PollEvery: time.Second, ResultEvery: 5 * time.Second, Now: func() time.Time { return now }}}
	if got := f.resultEvery(); got != 5*time.Second {
		t.Fatalf("before a step: every %v", got)
	}
	f.Hurry()
	now = now.Add(HurryFor - time.Second)
	if got := f.resultEvery(); got != time.Second {
		t.Errorf("during a search: every %v", got)
	}
	now = now.Add(2 * time.Second)
	if got := f.resultEvery(); got != 5*time.Second {
		t.Errorf("after it: every %v", got)
	}
}

// TestFirstMergeWaitsForAll: the first merge waits for every running
// agent's result (a ResultEvery at most): one agent's alone would show
// its share as the whole's phases.
func TestFirstMergeWaitsForAll(t *testing.T) {
	a, b := newFake(t, testToken, state(0, 2), result(t, 10, 5, 0)), newFake(t, testToken, state(1, 2), nil)
	f := follow(t, a.addr()+","+b.addr(), func(c *Config) { c.ResultEvery, c.LostAfter = time.Minute, time.Minute })
	f.Hurry() // every poll asks for the results; the first merge may wait a minute
	s := NewMerging(f, nil)
	defer s.Stop()
	waitView(t, f, "agent 0's result, none of agent 1's", func(v View) bool {
		return len(v.Agents) == 2 && v.Agents[0].Result != nil && v.Agents[1].HasState && v.Agents[1].Result == nil
	})
	views, stop := f.Subscribe()
	for range 3 { // views after it: still no merge
		<-views
	}
	stop()
	if ps := s.Latest().Phases; len(ps) != 0 {
		t.Errorf("merged one agent's result alone: %+v", ps)
	}
	b.mu.Lock()
	b.res = result(t, 20, 5, 0)
	b.mu.Unlock()
	sn := waitSnap(t, s, "the first merge", func(sn load.Snapshot) bool { return len(sn.Phases) > 0 })
	if got := sn.Phases[0].Completed; got != 30 {
		t.Errorf("the first merge's phase completed %d, want 30 (both agents')", got)
	}
}
