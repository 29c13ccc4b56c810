package fleet

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
	"github.com/infertop/infertop/report/schematest"
)

const testToken = "a-token-of-more-than-sixteen-bytes"

// result is a run's result of n requests, each of latency ms, sent
// requests: n plus inFlight.
func result(t testing.TB, n int, ms int64, inFlight int64) []byte {
	t.Helper()
	h := hdr.New(1, 3_600_000_000, 3)
	for range n {
		if err := h.RecordValue(ms * 1000); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	lat := map[string]report.DistJSON{}
	for _, k := range report.MetricKeys() {
		lat[k] = report.DistJSON{}
	}
	d := report.DistJSON{Count: int64(n), Mean: float64(ms), Min: float64(ms), Max: float64(ms), P50: float64(ms), P99: float64(ms)}
	lat["ttft"], lat["e2el"] = d, d
	hists := map[string]string{"ttft": string(enc), "e2el": string(enc)}
	knobs := report.KnobsJSON{Mode: "closed", Concurrency: 2, PromptTokens: 16, OutputTokens: 8}
	ph := report.PhaseJSON{ID: 1, Knobs: knobs, DurationS: 2, Sent: int64(n) + inFlight, Completed: int64(n), ErrorsByClass: map[string]int64{},
		Latency: lat}
	run := ph
	run.ID = 0
	m := report.NewManifest("test")
	m.URL, m.API, m.Model, m.Knobs = "http://127.0.0.1:1/v1", "openai-chat", "sim", knobs
	m.Start, m.End = time.Unix(1e9, 0).UTC(), time.Unix(1e9+2, 0).UTC()
	m.Settings = map[string]string{"of": "2", "concurrency": "4"}
	inf := report.InfertopJSON{Manifest: m, Run: run, Phases: []report.PhaseJSON{ph}, ErrorsByClass: map[string]int64{}, Errors: []report.ErrorJSON{},
		SLO: []report.VerdictJSON{}, SLOHeld: true,
		Histograms: &report.HistogramsJSON{Encoding: report.HistogramEncoding, Run: hists, Phases: []report.PhaseHistogramsJSON{{ID: 1, Hist: hists}}}}
	b, err := json.Marshal(map[string]any{"max_concurrency": 2, "infertop": inf})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fake is an agent served by agent.Handler on 127.0.0.1: its state and
// result are the test's to set.
type fake struct {
	srv *httptest.Server
	mu  sync.Mutex
	st  agent.State
	res []byte
}

func newFake(t *testing.T, token string, st agent.State, res []byte) *fake {
	t.Helper()
	f := &fake{st: st, res: res}
	h := agent.NewHandler([]byte(token), func() agent.State {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.st
		s.Now = time.Now()
		return s
	}, func(_ context.Context, w io.Writer) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, err := w.Write(f.res)
		return f.st.Final, err
	}, nil)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fake) set(fn func(*agent.State)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.st)
}

// state is a running agent's state: its load started (else it has no
// result to give, and no knobs to judge).
func state(index, of int) agent.State {
	return agent.State{Version: "test", Index: index, Of: of, Mode: "closed", Concurrency: 2, PromptTokens: 16, OutputTokens: 8,
		Started: time.Now().Add(-time.Second)}
}

// follow starts a fleet of addrs, its polls frequent. A poll has
// seconds (a busy machine's race build took past 300 ms for one), and
// an agent is lost or unreachable after 10 s of silence: a test that
// wants one so moves the follower's clock (followClock) once what must
// come first has come.
func follow(t *testing.T, spec string, mod func(*Config)) *Fleet {
	t.Helper()
	f, _ := followClock(t, spec, mod)
	return f
}

// followClock is follow, and the follower's clock (Config.Now).
func followClock(t *testing.T, spec string, mod func(*Config)) (*Fleet, *movedClock) {
	t.Helper()
	src, err := discover.ParseSource(spec)
	if err != nil {
		t.Fatal(err)
	}
	clk := &movedClock{}
	cfg := Config{Source: src, Token: []byte(testToken), PlainLoopback: true, Version: "test", PollEvery: 20 * time.Millisecond,
		ResultEvery: 40 * time.Millisecond, ResolveEvery: 40 * time.Millisecond, Timeout: 5 * time.Second, LostAfter: testLostAfter,
		Now: clk.now}
	if mod != nil {
		mod(&cfg)
	}
	f, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f, clk
}

// testLostAfter is follow's LostAfter.
const testLostAfter = 10 * time.Second

// movedClock is the real time moved on by the test.
type movedClock struct{ ahead atomic.Int64 }

func (c *movedClock) now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// pastLostAfter moves the clock past follow's LostAfter.
func (c *movedClock) pastLostAfter() { c.ahead.Add(int64(testLostAfter)) }

// waitView waits for a view of f that cond holds for (the fleet's end at
// the latest).
func waitView(t *testing.T, f *Fleet, what string, cond func(View) bool) View {
	t.Helper()
	views, stop := f.Subscribe()
	defer stop()
	var last View
	bound := time.NewTimer(20 * time.Second) // a bound on a hang, not a wait
	defer bound.Stop()
	for open := true; open; {
		select {
		case v, ok := <-views:
			if !ok {
				open = false
				break
			}
			if cond(v) {
				return v
			}
			last = v
		case <-bound.C:
			for _, a := range last.Agents[:min(len(last.Agents), 20)] {
				t.Logf("%s: %s %s (%s) state %v final %v", a.Addr, a.Status, a.Why, a.LastErr, a.HasState, a.Final)
			}
			t.Fatalf("never %s", what)
		}
	}
	if v := f.Latest(); cond(v) {
		return v
	}
	if len(last.Agents) > 20 { // thousands: the count, not each
		t.Fatalf("never %s: the last view of %d agents (%s)", what, len(last.Agents), last.DoneWhy)
	}
	t.Fatalf("never %s: the last view %+v", what, last)
	return View{}
}

func byAddr(v View, addr string) Agent {
	for _, a := range v.Agents {
		if a.Addr == addr {
			return a
		}
	}
	return Agent{}
}

// TestRefusedAndUnreachable: an agent of another version, of another
// load, or that refuses the token is refused by name; an address that
// never answers is unreachable; none of them blocks the good agents,
// whose results merge to the whole, each agent's own inside.
func TestRefusedAndUnreachable(t *testing.T) {
	good0 := newFake(t, testToken, state(0, 2), result(t, 10, 5, 0))
	good1 := newFake(t, testToken, state(1, 2), result(t, 30, 9, 0))
	other := state(1, 2)
	other.Version = "v9.9.9"
	oldVersion := newFake(t, testToken, other, result(t, 5, 1, 0))
	knobs := state(1, 2)
	knobs.PromptTokens = 999
	otherKnobs := newFake(t, testToken, knobs, result(t, 5, 1, 0))
	wrongToken := newFake(t, "another-token-of-sixteen-bytes!!", state(1, 2), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // an address that accepts and never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	silent := ln.Addr().String()
	var logMu sync.Mutex
	var logs []string
	f, clk := followClock(t, strings.Join([]string{good0.addr(), good1.addr(), oldVersion.addr(), otherKnobs.addr(), wrongToken.addr(), silent}, ","),
		func(c *Config) {
			c.Logf = func(format string, args ...any) {
				logMu.Lock()
				defer logMu.Unlock()
				logs = append(logs, format)
			}
		})
	// The good agents answer while the silent one hangs.
	waitView(t, f, "both good agents running", func(v View) bool {
		return byAddr(v, good0.addr()).Result != nil && byAddr(v, good1.addr()).Result != nil
	})
	good0.set(func(s *agent.State) { s.Final, s.Done = true, true })
	good1.set(func(s *agent.State) { s.Final, s.Done = true, true })
	// The good agents done, the silent one is unreachable past LostAfter.
	v := waitView(t, f, "the fleet over", func(v View) bool {
		if byAddr(v, good0.addr()).Status == report.AgentDone && byAddr(v, good1.addr()).Status == report.AgentDone {
			clk.pastLostAfter()
		}
		return v.Done
	})
	want := map[string]string{good0.addr(): report.AgentDone, good1.addr(): report.AgentDone, oldVersion.addr(): report.AgentRefused,
		otherKnobs.addr(): report.AgentRefused, wrongToken.addr(): report.AgentRefused, silent: report.AgentUnreachable}
	for addr, st := range want {
		if a := byAddr(v, addr); a.Status != st {
			t.Errorf("%s: %s (%s), want %s", addr, a.Status, a.Why, st)
		}
	}
	for addr, why := range map[string]string{oldVersion.addr(): `version "v9.9.9"`, otherKnobs.addr(): "prompt 999", wrongToken.addr(): "401"} {
		if a := byAddr(v, addr); !strings.Contains(a.Why, why) {
			t.Errorf("%s refused for %q, want %q in it", addr, a.Why, why)
		}
	}
	if !strings.Contains(v.DoneWhy, "2 done") || !strings.Contains(v.DoneWhy, "1 unreachable") || !strings.Contains(v.DoneWhy, "3 refused") {
		t.Errorf("done: %s", v.DoneWhy)
	}
	if len(logs) < 3 {
		t.Errorf("refusals logged: %q", logs)
	}
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Result.Run
	if r.Sent != 40 || r.Completed != 40 || r.Latency["ttft"].Count != 40 || r.Latency["ttft"].P50 < 8.9 || r.Latency["ttft"].P50 > 9.1 {
		t.Errorf("merged: sent %d completed %d, TTFT %+v", r.Sent, r.Completed, r.Latency["ttft"])
	}
	if len(m.Result.Agents.Agents) != 6 || len(m.Result.Agents.Missing) != 0 {
		t.Errorf("agents: %+v", m.Result.Agents)
	}
	rep := &report.Report{Manifest: m.Result.Manifest, Final: report.SnapshotOf(m.Result, m.MaxConcurrency), Merged: m}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sent 40 = 40 completed + 0 failed + 0 incomplete", "refused", "unreachable", "v9.9.9"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the text has no %q:\n%s", s, b.String())
		}
	}
	// The fakes' results are not whole files (the root's TestFourAgents
	// validates real agents' inside the merge): the rest against the schema.
	for i := range m.Result.Agents.Agents {
		m.Result.Agents.Agents[i].Result = nil
	}
	var js strings.Builder
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, []byte(js.String()))
}

// TestLost: an agent that falls silent mid-run is lost; its requests are
// counted up to its last result, those in flight then as incomplete, and
// the other's figures stay whole.
func TestLost(t *testing.T) {
	a := newFake(t, testToken, state(0, 2), result(t, 10, 5, 0))
	b := newFake(t, testToken, state(1, 2), result(t, 6, 7, 4))
	f, clk := followClock(t, a.addr()+","+b.addr(), nil)
	waitView(t, f, "both results", func(v View) bool {
		return byAddr(v, a.addr()).Result != nil && byAddr(v, b.addr()).Result != nil
	})
	b.srv.Close() // killed
	a.set(func(s *agent.State) { s.Final, s.Done = true, true })
	// a done and b's polls failing, b is lost past LostAfter.
	v := waitView(t, f, "the fleet over", func(v View) bool {
		if byAddr(v, a.addr()).Status == report.AgentDone && byAddr(v, b.addr()).LastErr != "" {
			clk.pastLostAfter()
		}
		return v.Done
	})
	if st := byAddr(v, b.addr()); st.Status != report.AgentLost || !strings.Contains(st.Why, "silent") {
		t.Fatalf("the killed agent: %s (%s)", st.Status, st.Why)
	}
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Result.Run
	if r.Sent != 20 || r.Completed != 16 || r.Incomplete != 4 || r.Sent != r.Completed+r.Failed+r.Incomplete {
		t.Errorf("merged: sent %d = %d + %d + %d", r.Sent, r.Completed, r.Failed, r.Incomplete)
	}
	if row := AgentRow(byAddr(v, b.addr())); row.Incomplete != 4 || row.InFlight != 0 {
		t.Errorf("the lost agent's row: %+v", row)
	}
}

// TestRestartedInPlace: an agent's load started again at the same
// address (its container restarted in its pod) is another run there:
// the earlier run's last result is kept as a replaced agent's (its
// requests in flight counted incomplete) beside the new run's, both
// rows in the table, nothing counted twice or lost.
func TestRestartedInPlace(t *testing.T) {
	t0 := time.Now().Add(-time.Minute)
	a0 := newAgent(t, 0, 2, testWhole, t0, result(t, 10, 5, 0))
	a1 := newAgent(t, 1, 2, testWhole, t0, result(t, 6, 7, 2))
	f := follow(t, a0.addr()+","+a1.addr(), nil)
	waitView(t, f, "both results", func(v View) bool { return byAddr(v, a0.addr()).Result != nil && byAddr(v, a1.addr()).Result != nil })
	// Started again: it answers before its load starts (no start yet),
	// then with its new start and result.
	a1.set(func(s *agent.State) { s.Started = time.Time{} })
	waitView(t, f, "the agent before its new start", func(v View) bool {
		for _, a := range v.Agents {
			if a.Addr == a1.addr() && a.State.Started.IsZero() {
				return true
			}
		}
		return false
	})
	a1.mu.Lock()
	a1.st.Started, a1.res = time.Now(), result(t, 3, 9, 0)
	a1.mu.Unlock()
	waitView(t, f, "the earlier run kept beside the new one", func(v View) bool {
		n := 0
		for _, a := range v.Agents {
			if a.Addr == a1.addr() {
				n++
			}
		}
		return n == 2 && len(v.Agents) == 3
	})
	a0.set(func(s *agent.State) { s.Final, s.Done = true, true })
	a1.set(func(s *agent.State) { s.Final, s.Done = true, true })
	v := waitView(t, f, "the fleet over", func(v View) bool {
		for _, a := range v.Agents {
			if a.Addr == a1.addr() && a.Status == report.AgentDone && a.Result != nil && a.Result.Result.Run.Sent != 3 {
				return false // the new run's final result not in yet
			}
		}
		return v.Done
	})
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Result.Run; r.Sent != 10+8+3 || r.Completed != 19 || r.Incomplete != 2 {
		t.Errorf("merged: sent %d = %d + %d + %d", r.Sent, r.Completed, r.Failed, r.Incomplete)
	}
	states := map[string]int{}
	for _, row := range m.Result.Agents.Agents {
		if row.Address == a1.addr() {
			states[row.State]++
			if row.State == report.AgentReplaced && !strings.Contains(row.Why, "started again at this address") {
				t.Errorf("the earlier run's row: %+v", row)
			}
		}
	}
	if states[report.AgentReplaced] != 1 || states[report.AgentDone] != 1 {
		t.Errorf("the rows at %s: %v", a1.addr(), states)
	}
}

// TestOneAgentTwoAddresses: one agent found under two addresses (a
// dual-stack pod) is followed once: the second is refused by name, and
// its requests are in the merge once. Both must answer for that: at
// follow's durations of old (a poll cut at 300 ms, unreachable at
// 600 ms) one address's polls slowed past the cut on a busy machine,
// and it was unreachable, never found the same agent (a handler held
// 350 ms did it every time).
func TestOneAgentTwoAddresses(t *testing.T) {
	a := newAgent(t, 0, 1, testWhole, time.Now(), result(t, 5, 3, 0))
	again := httptest.NewServer(a.srv.Config.Handler)
	defer again.Close()
	second := strings.TrimPrefix(again.URL, "http://")
	f := follow(t, a.addr()+","+second, nil)
	a.set(func(s *agent.State) { s.Final, s.Done = true, true })
	v := waitView(t, f, "the fleet over", func(v View) bool { return v.Done })
	refused := 0
	for _, ag := range v.Agents {
		if ag.Status == report.AgentRefused && strings.Contains(ag.Why, "the same agent as") {
			refused++
		}
	}
	m, err := Merge(v)
	if err != nil {
		t.Fatal(err)
	}
	if refused != 1 || m.Result.Run.Sent != 5 {
		t.Errorf("%d refused as the same agent, merged sent %d", refused, m.Result.Run.Sent)
		for _, ag := range v.Agents {
			t.Logf("%s: %s (%s), last error %q", ag.Addr, ag.Status, ag.Why, ag.LastErr)
		}
	}
}

// TestAgentRowCounters: a running agent's row counts from its state,
// newer than its last result so far (which counted what was in flight
// then as incomplete); once it no longer runs, from its last result.
func TestAgentRowCounters(t *testing.T) {
	var res report.InfertopJSON
	res.Run.Sent, res.Run.Completed, res.Run.Incomplete = 12, 8, 4
	a := Agent{Status: report.AgentRunning, HasState: true, State: agent.State{Sent: 24, Completed: 20, InFlight: 4},
		Result: &merge.Input{Result: res}}
	if r := AgentRow(a); r.Sent != 24 || r.Completed != 20 || r.Incomplete != 0 || r.InFlight != 4 {
		t.Errorf("running: %+v", r)
	}
	a.Status = report.AgentLost
	if r := AgentRow(a); r.Sent != 12 || r.Completed != 8 || r.Incomplete != 4 {
		t.Errorf("lost: %+v", r)
	}
}

// TestLateFollower: a follower that comes after the agents' load began
// counts its time from their start (its view's Started), once, at the
// first agent's word; one before their start keeps its own.
func TestLateFollower(t *testing.T) {
	st := state(0, 2)
	st.Started = time.Now().Add(-20 * time.Second)
	early := newFake(t, testToken, st, nil)
	f := follow(t, early.addr(), nil)
	v := waitView(t, f, "the agent's state", func(v View) bool { return len(v.Agents) == 1 && v.Agents[0].HasState })
	if d := v.Started.Sub(st.Started); d < -time.Second || d > time.Second {
		t.Errorf("the follower's start %v, the agents' %v", v.Started, st.Started)
	}
	waiting := state(0, 1)
	waiting.Started = time.Time{} // waiting for --start-at
	w := newFake(t, testToken, waiting, nil)
	f2 := follow(t, w.addr(), nil)
	before := f2.Latest().Started
	waitView(t, f2, "the waiting agent's state", func(v View) bool { return len(v.Agents) == 1 && v.Agents[0].HasState })
	w.set(func(s *agent.State) { s.Started = time.Now().Add(-time.Hour) }) // an odd start, but the clock was set at the first word
	v = waitView(t, f2, "the agent started", func(v View) bool { return !v.Agents[0].State.Started.IsZero() })
	if !v.Started.Equal(before) {
		t.Errorf("moved from %v to %v after the first word", before, v.Started)
	}
	// A start of year 1 is not believed: the follower's own clock.
	odd := state(0, 1)
	odd.Started = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	f3 := follow(t, newFake(t, testToken, odd, nil).addr(), nil)
	v = waitView(t, f3, "the odd agent's state", func(v View) bool { return len(v.Agents) == 1 && v.Agents[0].HasState })
	if time.Since(v.Started) > time.Minute {
		t.Errorf("a start of year 1 believed: %v", v.Started)
	}
}
