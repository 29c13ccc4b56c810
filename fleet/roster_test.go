package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
)

// t0 is the synthetic clock's start: the roster's, and every step's
// time is an offset from it.
var t0 = time.Unix(1_000_000, 0)

// step is one thing the roster hears at t0+at: a resolution (found),
// one poll's observation of the agent at addr, or Finish; each is
// followed by a step of the roster, as the Fleet's loop does. A step
// with none of them is a tick.
type step struct {
	at     time.Duration
	found  []string
	addr   string
	obs    observation
	finish string
}

// seen is an observation of a state of index of n whose load started
// at t0+started; mod changes the state.
func seen(index, n int, started time.Duration, mod func(*agent.State)) observation {
	st := agent.State{Version: "test", Index: index, Of: n, Mode: "closed", Concurrency: 2, PromptTokens: 16, OutputTokens: 8,
		Started: t0.Add(started)}
	if mod != nil {
		mod(&st)
	}
	return observation{state: &st}
}

// final is seen with its final result.
func final(index, n int, started time.Duration) observation {
	o := seen(index, n, started, func(s *agent.State) { s.Final, s.Done = true, true })
	o.result, o.final = &merge.Input{Name: fmt.Sprint("agent ", index)}, true
	return o
}

// failed is a poll that got no answer.
func failed() observation { return observation{err: errors.New("dial tcp: connection refused")} }

// TestRoster: sequences of synthetic observations, each to the agents'
// statuses it must leave (by address), the view's whys, end, missing
// indexes and start, the agents polled no more and those that may be
// sent controls.
func TestRoster(t *testing.T) {
	const a, b, c = "10.0.0.1:7070", "10.0.0.2:7070", "10.0.0.3:7070"
	for _, tt := range []struct {
		name  string
		cfg   func(*Config)
		steps []step
		// agents are "addr status", sorted; why the substrings the
		// agents' whys hold between them; doneWhy the view's.
		agents, why []string
		done        bool
		doneWhy     string
		missing     []int
		stopped     []string
		sendable    []string
		started     time.Duration // the view's start, from t0
	}{{
		name:    "never answers: unreachable after LostAfter",
		steps:   []step{{found: []string{a}}, {at: 29 * time.Second}, {at: 30 * time.Second}},
		agents:  []string{a + " unreachable"},
		why:     []string{"never answered"},
		done:    true,
		doneWhy: "every agent over: 1 unreachable",
	}, {
		name: "silent past LostAfter: lost; answers again: running",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: seen(0, 2, -10*time.Second, nil)},
			{at: time.Second, addr: b, obs: seen(1, 2, -10*time.Second, nil)},
			{at: 30 * time.Second, addr: b, obs: seen(1, 2, -10*time.Second, nil)}, {at: 31 * time.Second, addr: a, obs: failed()}},
		agents:   []string{a + " lost", b + " running"},
		why:      []string{"silent for 30s (last error: dial tcp: connection refused)"},
		sendable: []string{a, b}, // sent a control should it answer again
		started:  -10 * time.Second,
	}, {
		name: "a lost agent answers again",
		steps: []step{{found: []string{a}}, {at: time.Second, addr: a, obs: seen(0, 1, -10*time.Second, nil)},
			{at: 31 * time.Second, addr: a, obs: failed()}, {at: 32 * time.Second, addr: a, obs: seen(0, 1, -10*time.Second, nil)}},
		agents:   []string{a + " running"},
		sendable: []string{a},
		started:  -10 * time.Second,
	}, {
		name: "final results: done, polled no more, the fleet over",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: seen(0, 2, -10*time.Second, nil)},
			{at: 2 * time.Second, addr: a, obs: final(0, 2, -10*time.Second)}, {at: 2 * time.Second, addr: b, obs: final(1, 2, -10*time.Second)}},
		agents:   []string{a + " done", b + " done"},
		done:     true,
		doneWhy:  "every agent over: 2 done",
		stopped:  []string{a, b},
		sendable: []string{a, b},
		started:  -10 * time.Second, // a late follower: the agents' start
	}, {
		name:    "an index missing: waited for LostAfter since the last change",
		steps:   []step{{found: []string{a}}, {at: time.Second, addr: a, obs: final(0, 2, 0)}, {at: 30 * time.Second}},
		agents:  []string{a + " done"},
		missing: []int{1},
		stopped: []string{a},
		// not done: 29 s since the last change
		sendable: []string{a},
	}, {
		name:     "an index missing past LostAfter: over",
		steps:    []step{{found: []string{a}}, {at: time.Second, addr: a, obs: final(0, 2, 0)}, {at: 31 * time.Second}},
		agents:   []string{a + " done"},
		missing:  []int{1},
		done:     true,
		doneWhy:  "every agent over: 1 done",
		stopped:  []string{a},
		sendable: []string{a},
	}, {
		name: "the token refused (401)",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: observation{err: errDenied, denied: true}},
			{at: time.Second, addr: b, obs: seen(0, 1, 0, nil)}},
		agents:   []string{a + " refused", b + " running"},
		why:      []string{"HTTP 401"},
		stopped:  []string{a},
		sendable: []string{b},
	}, {
		name: "another version, another kind: refused",
		steps: []step{{found: []string{a, b, c}}, {at: time.Second, addr: a, obs: seen(0, 3, 0, func(s *agent.State) { s.Version = "v9.9.9" })},
			{at: time.Second, addr: b, obs: seen(1, 3, 0, func(s *agent.State) { s.Compare = true })},
			{at: time.Second, addr: c, obs: seen(5, 3, 0, nil)}},
		agents:  []string{a + " refused", b + " refused", c + " refused"},
		why:     []string{`version "v9.9.9", not this infertop's "test"`, "follow it with --agents-compare", "index 5 of 3 is no share"},
		stopped: []string{a, b, c},
		done:    true,
		doneWhy: "every agent over: 3 refused",
	}, {
		name: "other knobs than the most's: refused by name, still polled",
		steps: []step{{found: []string{a, b, c}}, {at: time.Second, addr: a, obs: seen(0, 3, 0, nil)},
			{at: time.Second, addr: b, obs: seen(1, 3, 0, nil)},
			{at: time.Second, addr: c, obs: seen(2, 3, 0, func(s *agent.State) { s.PromptTokens = 999 })}},
		agents:   []string{a + " running", b + " running", c + " refused"},
		why:      []string{"other knobs (closed loop, prompt 999, output 8; not agent 0 (10.0.0.1:7070)'s closed loop, prompt 16"},
		missing:  []int{2},
		sendable: []string{a, b},
	}, {
		name: "other knobs, then the most's again: taken again",
		steps: []step{{found: []string{a, b, c}}, {at: time.Second, addr: a, obs: seen(0, 3, 0, nil)},
			{at: time.Second, addr: b, obs: seen(1, 3, 0, nil)},
			{at: time.Second, addr: c, obs: seen(2, 3, 0, func(s *agent.State) { s.PromptTokens = 999 })},
			{at: 2 * time.Second, addr: c, obs: seen(2, 3, 0, nil)}},
		agents:   []string{a + " running", b + " running", c + " running"},
		sendable: []string{a, b, c},
	}, {
		name: "a new pod of an index while the old answers: two of one share",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: seen(0, 1, -10*time.Second, nil)},
			{at: time.Second, addr: b, obs: seen(0, 1, -2*time.Second, nil)}},
		agents:   []string{a + " running", b + " refused"},
		why:      []string{"index 0 is run by agent 0 (10.0.0.1:7070) too, which still answers"},
		sendable: []string{a},
		started:  -10 * time.Second,
	}, {
		name: "the old pod silent: replaced, the new one followed",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: seen(0, 1, -10*time.Second, nil)},
			{at: time.Second, addr: b, obs: seen(0, 1, -2*time.Second, nil)}, {at: 3 * time.Second, addr: a, obs: failed()},
			{at: 3 * time.Second, addr: b, obs: seen(0, 1, -2*time.Second, nil)}},
		agents:   []string{a + " replaced", b + " running"},
		why:      []string{"index 0 started again at 10.0.0.2:7070"},
		stopped:  []string{a},
		sendable: []string{b},
		started:  -10 * time.Second,
	}, {
		name: "one agent under two addresses: followed once",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: seen(0, 1, 0, nil)},
			{at: time.Second, addr: b, obs: seen(0, 1, 0, nil)}},
		agents:   []string{a + " running", b + " refused"},
		why:      []string{"the same agent as 10.0.0.1:7070 (index 0, the same start), under another address"},
		sendable: []string{a},
	}, {
		name: "started again at its address: the earlier run kept beside",
		steps: []step{{found: []string{a}}, {at: time.Second, addr: a, obs: seen(0, 1, -10*time.Second, nil)},
			{at: 2 * time.Second, addr: a, obs: seen(0, 1, 0, func(s *agent.State) { s.Started = time.Time{} })}},
		agents:   []string{a + " replaced", a + " running"},
		why:      []string{"its load started again at this address (index 0, a restarted container)"},
		sendable: []string{a},
		started:  -10 * time.Second,
	}, {
		name: "started again after its final result: that run kept done",
		steps: []step{{found: []string{a}}, {at: time.Second, addr: a, obs: final(0, 1, -10*time.Second)},
			{at: 2 * time.Second, addr: a, obs: seen(0, 1, 0, nil)}},
		agents:   []string{a + " done", a + " running"},
		why:      []string{"this earlier run's final result is kept"},
		stopped:  []string{a},
		sendable: []string{a},
		started:  -10 * time.Second,
	}, {
		name: "a start of year 1 is not believed",
		steps: []step{{found: []string{a}},
			{at: time.Second, addr: a, obs: seen(0, 1, 0, func(s *agent.State) { s.Started = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC) })}},
		agents:   []string{a + " running"},
		sendable: []string{a},
	}, {
		name: "the clock set once, at the first agent's word",
		steps: []step{{found: []string{a, b}}, {at: time.Second, addr: a, obs: seen(0, 2, 0, func(s *agent.State) { s.Started = time.Time{} })},
			{at: 2 * time.Second, addr: b, obs: seen(1, 2, -time.Hour, nil)}},
		agents:   []string{a + " running", b + " running"},
		sendable: []string{a, b},
	}, {
		name: "Finish: over whatever the agents",
		steps: []step{{found: []string{a}}, {at: time.Second, addr: a, obs: seen(0, 1, 0, nil)},
			{at: 2 * time.Second, finish: "the search is over"}},
		agents:   []string{a + " running"},
		done:     true,
		doneWhy:  "the search is over",
		sendable: []string{a},
	}, {
		name:    "no agent found in LostAfter",
		steps:   []step{{found: []string{}}, {at: 30 * time.Second}},
		done:    true,
		doneWhy: "no agent found at 10.0.0.1:7070",
	}, {
		name:   "canaries followed: no control sent",
		cfg:    func(c *Config) { c.Canary = true },
		steps:  []step{{found: []string{a}}, {at: time.Second, addr: a, obs: seen(0, 1, 0, func(s *agent.State) { s.Canary = true })}},
		agents: []string{a + " running"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := discover.ParseSource(a)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Source: src, Version: "test", PollEvery: time.Second, LostAfter: 30 * time.Second, Logf: t.Logf}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			r := newRoster(cfg, t0)
			var v View
			var stopped, polled []string
			for _, s := range tt.steps {
				now := t0.Add(s.at)
				switch {
				case s.found != nil:
					var res resolution
					for _, addr := range s.found {
						res.addrs = append(res.addrs, discover.Addr{HostPort: addr})
					}
					for _, fresh := range r.found(res, now) {
						polled = append(polled, fresh.HostPort)
					}
				case s.addr != "":
					o := s.obs
					o.addr, o.at = s.addr, now
					if o.state != nil {
						st := *o.state
						st.Now = now
						o.state = &st
					}
					r.observe(o, now)
				case s.finish != "":
					r.finish(s.finish)
				}
				v = r.step(now)
				stopped = append(stopped, r.stopped()...)
			}
			var agents, whys, sendable []string
			for _, ag := range v.Agents {
				agents = append(agents, ag.Addr+" "+ag.Status)
				whys = append(whys, ag.Why)
			}
			for _, addr := range polled { // a poller's address: the loop asks for these
				if r.sendable(addr) {
					sendable = append(sendable, addr)
				}
			}
			slices.Sort(agents)
			slices.Sort(stopped)
			slices.Sort(sendable)
			if !slices.Equal(agents, tt.agents) {
				t.Errorf("agents %q, want %q", agents, tt.agents)
			}
			for _, w := range tt.why {
				if !strings.Contains(strings.Join(whys, "|"), w) {
					t.Errorf("no %q in the whys %q", w, whys)
				}
			}
			if v.Done != tt.done || !strings.Contains(v.DoneWhy, tt.doneWhy) {
				t.Errorf("done %v (%q), want %v (%q)", v.Done, v.DoneWhy, tt.done, tt.doneWhy)
			}
			if !slices.Equal(v.Missing, tt.missing) || !slices.Equal(stopped, tt.stopped) || !slices.Equal(sendable, tt.sendable) {
				t.Errorf("missing %v, stopped %q, sendable %q; want %v, %q, %q", v.Missing, stopped, sendable, tt.missing, tt.stopped, tt.sendable)
			}
			if want := t0.Add(tt.started); !v.Started.Equal(want) {
				t.Errorf("started %v, want %v", v.Started.Sub(t0), tt.started)
			}
			if v.Seq != uint64(len(tt.steps)) || v.Source != a {
				t.Errorf("view %d of %q after %d steps", v.Seq, v.Source, len(tt.steps))
			}
		})
	}
}

// TestRosterStopView: the view at Stop is Done, "stopped", with the
// agents as they stand, and no step counted.
func TestRosterStopView(t *testing.T) {
	src, err := discover.ParseSource("10.0.0.1:7070")
	if err != nil {
		t.Fatal(err)
	}
	r := newRoster(Config{Source: src, Version: "test", PollEvery: time.Second, LostAfter: 30 * time.Second, Logf: t.Logf}, t0)
	if fresh := r.found(resolution{addrs: []discover.Addr{{HostPort: "10.0.0.1:7070"}}, err: errors.New("fleet: resolve x: no such host")}, t0); len(fresh) != 1 {
		t.Fatalf("found %v", fresh)
	}
	if fresh := r.found(resolution{addrs: []discover.Addr{{HostPort: "10.0.0.1:7070"}}}, t0); len(fresh) != 0 {
		t.Fatalf("found again: %v", fresh)
	}
	r.step(t0)
	v := r.stopView()
	if !v.Done || v.DoneWhy != "stopped" || v.Seq != 1 || len(v.Agents) != 1 || v.Agents[0].Status != report.AgentWaiting || v.ResolveErr != "" {
		t.Fatalf("%+v", v)
	}
}
