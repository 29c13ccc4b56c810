package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/fleet"
	"github.com/infertop/infertop/fleet/fleetflag"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/schematest"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// agentProc is an agent run as a process of its own (this test binary as
// infertop), on 127.0.0.1 at a port of its own.
type agentProc struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
	addr   string
	json   string
	log    string
	exited chan error
}

// startAgents starts n agents sharing load (the whole's flags) against
// url, with the token in tokenFile, and waits until each serves.
func startAgents(t *testing.T, dir, tokenFile string, n int, load ...string) []*agentProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	startAt := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var out []*agentProc
	for i := range n {
		p := &agentProc{json: filepath.Join(dir, fmt.Sprintf("agent%d.json", i)), log: filepath.Join(dir, fmt.Sprintf("agent%d.jsonl", i)),
			exited: make(chan error, 1)}
		args := append([]string{"agent", "--index", fmt.Sprint(i), "--of", fmt.Sprint(n), "--start-at", startAt, "--listen", "127.0.0.1:0",
			"--plain-http-loopback", "--token-file", tokenFile, "--linger", "30s", "--server-metrics", "off", "--json", p.json,
			"--requests-log", p.log}, load...)
		p.cmd = exec.Command(self, args...)
		p.cmd.Env = append(os.Environ(), "INFERTOP_TEST_MAIN=1")
		p.cmd.Stderr = &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.exited <- p.cmd.Wait() }()
		t.Cleanup(func() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		})
		out = append(out, p)
	}
	re := regexp.MustCompile(`serving on (127\.0\.0\.1:\d+)`)
	for i, p := range out {
		m := re.FindStringSubmatch(waitText(t, fmt.Sprintf("agent %d serving", i), &p.stderr, re))
		p.addr = m[1]
	}
	return out
}

func addrsOf(ps []*agentProc) string {
	var as []string
	for _, p := range ps {
		as = append(as, p.addr)
	}
	return strings.Join(as, ",")
}

// tokenIn writes a token file into dir.
func tokenIn(t *testing.T, dir string) (string, string) {
	t.Helper()
	token := "a-token-of-more-than-sixteen-bytes"
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, token
}

// mergedFile is a run --agents' JSON, read with the writer's types.
type mergedFile struct {
	Sent     int64 `json:"sent"`
	Infertop report.InfertopJSON
}

func readMerged(t *testing.T, path string) mergedFile {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, doc)
	var f mergedFile
	if err := json.Unmarshal(doc, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFourAgents: four agents, each a process on 127.0.0.1 at its own
// port, share one load against one sim; run --agents follows them to
// their end and merges them: its TTFT and E2E p50/p99 are the union of
// the four requests logs' within the HDR precision, every request is
// counted, the concurrency is split four ways, and each agent's own
// result is inside.
func TestFourAgents(t *testing.T) {
	if os.Getenv("INFERTOP_AGENTS") == "" {
		t.Skip("a stage of its own: make test-agents")
	}
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	dir := t.TempDir()
	tokenFile, _ := tokenIn(t, dir)
	// 6 s: the knob change must reach all four before they end, after a
	// second follower polling every second has seen all four started; in
	// 3 s make test-agents once saw them end first.
	agents := startAgents(t, dir, tokenFile, 4, "--url", srv.URL, "-c", "8", "--duration", "6s", "--prompt-tokens", "16",
		"--output-tokens", "20")
	turned := turnKnobs(t, addrsOf(agents), tokenFile)
	all := filepath.Join(dir, "all.json")
	var out, errb bytes.Buffer
	code := run([]string{"run", "--agents", addrsOf(agents), "--agents-token-file", tokenFile, "--agents-plain-loopback", "--agents-poll", "100ms",
		"--agents-result-every", "2s", "--agents-lost-after", "10s", "--json", all, "--csv", filepath.Join(dir, "all.csv"),
		"--progress-every", "1s"}, &out, &errb)
	if code != 0 {
		t.Fatalf("run --agents: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if err := <-turned; err != nil {
		t.Fatal(err)
	}
	for i, a := range agents {
		if err := <-a.exited; err != nil { // each ends once its final result is fetched
			t.Errorf("agent %d: %v\n%s", i, err, a.stderr.String())
		}
		a.exited <- nil
	}
	f := readMerged(t, all)
	whole := f.Infertop.Run
	var logs []string
	for _, a := range agents {
		logs = append(logs, a.log)
	}
	lf := readLogs(t, logs...)
	if whole.Sent != whole.Completed+whole.Failed+whole.Incomplete || f.Sent != whole.Sent || whole.Completed == 0 {
		t.Errorf("merged: sent %d (top %d) = %d + %d + %d", whole.Sent, f.Sent, whole.Completed, whole.Failed, whole.Incomplete)
	}
	if whole.Completed != lf.completed || whole.Failed != lf.failed {
		t.Errorf("merged completed %d, failed %d; the logs %d, %d", whole.Completed, whole.Failed, lf.completed, lf.failed)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.001+0.002 }
	// Each agent's own result against its own log, then the merge against
	// the union of the logs, at HdrHistogram's rank (round(q×n): at a few
	// dozen requests a p99 is not the largest, which ceil(q×n) would take,
	// and a tail's neighbours are far apart; ceil made them part by
	// 125 ms against 732 ms at load average 12).
	for i, a := range agents {
		own := readMerged(t, a.json).Infertop.Run.Latency
		lg := readLogs(t, a.log)
		t.Logf("agent %d: TTFT p99 %.3f ms in its result, %.3f ms in its log; E2E p99 %.3f / %.3f ms", i, own["ttft"].P99,
			exactQuantile(lg.ttft, 0.99), own["e2el"].P99, exactQuantile(lg.e2e, 0.99))
		if !near(own["ttft"].P99, exactQuantile(lg.ttft, 0.99)) || !near(own["e2el"].P99, exactQuantile(lg.e2e, 0.99)) {
			t.Errorf("agent %d: its result and its requests log part", i)
		}
	}
	for _, m := range []struct {
		key string
		all []float64
	}{{"ttft", lf.ttft}, {"e2el", lf.e2e}} {
		d := whole.Latency[m.key]
		if d.Count != int64(len(m.all)) {
			t.Errorf("%s: merged count %d, the logs %d", m.key, d.Count, len(m.all))
			continue
		}
		for _, q := range []struct {
			name string
			got  float64
			q    float64
		}{{"p50", d.P50, 0.50}, {"p99", d.P99, 0.99}} {
			want := exactQuantile(m.all, q.q)
			t.Logf("%s %s: merged %.3f ms, union of the four logs %.3f ms", m.key, q.name, q.got, want)
			if !near(q.got, want) {
				t.Errorf("%s %s: merged %.3f ms, the union of the logs %.3f ms", m.key, q.name, q.got, want)
			}
		}
	}
	t.Logf("merged: sent %d = %d completed + %d failed + %d incomplete", whole.Sent, whole.Completed, whole.Failed, whole.Incomplete)
	// The follower's merge is infertop merge's of the agents' own files.
	var jsons []string
	for _, a := range agents {
		jsons = append(jsons, a.json)
	}
	mergedFiles := filepath.Join(dir, "files.json")
	var mout, merr bytes.Buffer
	if code := run(append(append([]string{"merge"}, jsons...), "-o", mergedFiles), &mout, &merr); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, merr.String())
	}
	byFiles := readMerged(t, mergedFiles).Infertop.Run
	for _, key := range []string{"ttft", "e2el"} {
		if a, b := whole.Latency[key], byFiles.Latency[key]; a != b {
			t.Errorf("%s: run --agents %+v, infertop merge of the agents' files %+v", key, a, b)
		}
	}

	ag := f.Infertop.Agents
	if ag == nil || ag.Of != 4 || len(ag.Agents) != 4 || len(ag.Missing) != 0 {
		t.Fatalf("infertop.agents: %+v", ag)
	}
	var sum int64
	for i, a := range ag.Agents {
		var own mergedFile
		if err := json.Unmarshal(a.Result, &own); err != nil {
			t.Fatalf("agent %d's own result: %v", i, err)
		}
		sum += own.Infertop.Run.Sent
		t.Logf("agent %d: started %.1f ms after --start-at, clock offset %.1f ms, ran %.2f s, sent %d", i, a.StartOffsetMS, a.ClockOffsetMS,
			own.Infertop.Run.DurationS, own.Infertop.Run.Sent)
		if a.Index != i || a.State != report.AgentDone || a.Sent != own.Infertop.Run.Sent || own.Infertop.Manifest.Knobs.Concurrency != 2 {
			t.Errorf("agent %d: index %d, %s, sent %d (its own %d), its own concurrency %d", i, a.Index, a.State, a.Sent, own.Infertop.Run.Sent,
				own.Infertop.Manifest.Knobs.Concurrency)
		}
		if ph := own.Infertop.Phases; len(ph) < 2 || ph[len(ph)-1].Knobs.Concurrency != 3 || ph[len(ph)-1].Knobs.PromptTokens != 32 {
			t.Errorf("agent %d: its phases do not end at its share of the knob change (3, prompt 32): %+v", i, ph)
		}
		if !strings.Contains(agents[i].stderr.String(), "control 1 from") {
			t.Errorf("agent %d logged no control:\n%s", i, agents[i].stderr.String())
		}
		if a.StartOffsetMS < 0 || math.Abs(a.ClockOffsetMS) > 1000 {
			t.Errorf("agent %d started %.1f ms after --start-at, its clock %.1f ms off", i, a.StartOffsetMS, a.ClockOffsetMS)
		}
	}
	if sum != whole.Sent {
		t.Errorf("the agents sent %d, the merge %d", sum, whole.Sent)
	}
	if ph := f.Infertop.Phases; len(ph) < 2 || ph[len(ph)-1].Knobs.Concurrency != 12 || len(f.Infertop.Merged.Forced) != 0 {
		t.Errorf("the merged phases do not end at the whole's knob change (12): %+v, forced %q", ph, f.Infertop.Merged.Forced)
	}
	for _, s := range []string{"Agents (4 of a load split 4 ways", "done", fmt.Sprintf("sent %d = ", whole.Sent)} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the summary has no %q:\n%s", s, out.String())
		}
	}
	if !strings.Contains(errb.String(), "every agent over: 4 done") {
		t.Errorf("stderr: %s", errb.String())
	}
	t.Logf("summary:\n%s", out.String())
}

// turnKnobs follows the agents at addrs as the dashboard does (the
// merged agents' session) and, once all four run, turns the whole
// load's knobs with its controller (concurrency 8 to 12, the prompt
// 16 to 32): the change must reach all four before their next poll
// (the pollers wake for it). It starts following once the agents say
// they have started, polling every 30 s: its first polls see them
// running, and a change that waited for the next poll would come after
// their run. (At 1 s a poll, held to a second, the change took 1.7-3.3 s
// in three of four runs beside make test-compare.) The channel says how
// it went.
func turnKnobs(t *testing.T, addrs, tokenFile string) <-chan error {
	t.Helper()
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	agf := fleetflag.Flags{Agents: addrs, TokenFile: tokenFile, PlainLoopback: true, PollEvery: 30 * time.Second, ResultEvery: 30 * time.Second,
		LostAfter: 60 * time.Second}
	cfg, err := agf.Config(versionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for _, addr := range strings.Split(addrs, ",") {
			if err := waitStarted(addr, strings.TrimSpace(string(token))); err != nil {
				done <- err
				return
			}
		}
		f, err := fleet.Start(cfg)
		if err != nil {
			done <- err
			return
		}
		turn(t, f, cfg.PollEvery, done)
	}()
	return done
}

// waitStarted polls the agent at addr until its state says its load
// started (a bound of 30 s on a hang).
func waitStarted(addr, token string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+"/state", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("the agent at %s: %w", addr, err)
		}
		var st agent.State
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if !st.Started.IsZero() {
			return nil
		}
	}
	return fmt.Errorf("the agent at %s did not start within 30 s", addr)
}

// turn is turnKnobs' follower: the knobs turned once all four run, and
// the change seen at all four within tick.
func turn(t *testing.T, f *fleet.Fleet, tick time.Duration, done chan<- error) {
	s := fleet.NewMerging(f, nil)
	defer s.Stop()
	views, stop := s.Fleet().Subscribe()
	defer stop()
	all := func(v fleet.View, ok func(fleet.Agent) bool) bool {
		n := 0
		for _, a := range v.Agents {
			if a.Status == report.AgentRunning && ok(a) {
				n++
			}
		}
		return n == 4
	}
	var asked time.Time
	for v := range views {
		switch {
		case asked.IsZero() && all(v, func(a fleet.Agent) bool { return !a.State.Started.IsZero() && a.State.Whole != nil }):
			asked = time.Now()
			if k := s.Controller().Update(func(k *load.Knobs) { k.Concurrency, k.PromptTokens = 12, 32 }); k.Concurrency != 12 {
				done <- fmt.Errorf("the controller's whole: %+v", k)
				return
			}
		case !asked.IsZero() && all(v, func(a fleet.Agent) bool { return a.State.ControlSeq >= 1 && a.State.Concurrency == 3 }):
			took := time.Since(asked)
			t.Logf("the knob change reached all four agents in %v (a poll: %v)", took, tick)
			if took >= tick {
				done <- fmt.Errorf("the knob change took %v to reach all four, past a poll (%v)", took, tick)
				return
			}
			done <- nil
			return
		}
	}
	done <- fmt.Errorf("the agents ended before the knob change reached all four (asked: %t)", !asked.IsZero())
}

// TestAgentLost: an agent killed mid-run is lost: its requests are
// counted up to its last result, the other's figures are whole, the run
// ends without waiting for it, and every report names its absence; a
// follower with the wrong token is refused by every agent.
func TestAgentLost(t *testing.T) {
	if os.Getenv("INFERTOP_AGENTS") == "" {
		t.Skip("a stage of its own: make test-agents")
	}
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	dir := t.TempDir()
	tokenFile, token := tokenIn(t, dir)
	agents := startAgents(t, dir, tokenFile, 2, "--url", srv.URL, "-c", "4", "--duration", "4s", "--prompt-tokens", "16", "--output-tokens", "20")
	// The wrong token: refused, by name.
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("another-token-of-sixteen-bytes!!"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--agents", addrsOf(agents), "--agents-token-file", wrong, "--agents-plain-loopback", "--agents-poll", "50ms",
		"--agents-result-every", "50ms", "--agents-lost-after", "1s"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "refused the token") {
		t.Errorf("the wrong token: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// Kill agent 1 once it has completed requests.
	killed := make(chan agent.State, 1)
	go func() {
		for {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+agents[1].addr+"/state", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				close(killed)
				return
			}
			var st agent.State
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Completed >= 4 {
				time.Sleep(600 * time.Millisecond) // a result fetched after it (every 200 ms)
				_ = agents[1].cmd.Process.Kill()
				killed <- st
				return
			}
			time.Sleep(20 * time.Millisecond) // polling for the event: completions
		}
	}()
	all := filepath.Join(dir, "all.json")
	out.Reset()
	errb.Reset()
	code := run([]string{"run", "--agents", addrsOf(agents), "--agents-token-file", tokenFile, "--agents-plain-loopback", "--agents-poll", "100ms",
		"--agents-result-every", "200ms", "--agents-lost-after", "3s", "--json", all}, &out, &errb)
	st, ok := <-killed
	if !ok {
		t.Fatal("agent 1 ended before it was killed")
	}
	if code != 0 {
		t.Fatalf("run --agents: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	f := readMerged(t, all)
	whole, ag := f.Infertop.Run, f.Infertop.Agents
	if ag == nil || len(ag.Agents) != 2 || ag.Agents[0].State != report.AgentDone || ag.Agents[1].State != report.AgentLost {
		for _, a := range ag.Agents {
			t.Logf("agent %d: %s %s", a.Index, a.State, a.Why)
		}
		t.Fatalf("agents: %d", len(ag.Agents))
	}
	var own mergedFile
	if err := json.Unmarshal(ag.Agents[0].Result, &own); err != nil {
		t.Fatal(err)
	}
	lost := ag.Agents[1]
	if whole.Sent != whole.Completed+whole.Failed+whole.Incomplete || whole.Completed != own.Infertop.Run.Completed+lost.Completed ||
		whole.Sent != own.Infertop.Run.Sent+lost.Sent || lost.InFlight != 0 || lost.Result == nil {
		t.Errorf("merged sent %d = %d + %d + %d; agent 0 %d completed of %d, the lost one sent %d = %d + %d + %d + %d in flight", whole.Sent,
			whole.Completed, whole.Failed, whole.Incomplete, own.Infertop.Run.Completed, own.Infertop.Run.Sent, lost.Sent, lost.Completed,
			lost.Failed, lost.Incomplete, lost.InFlight)
	}
	t.Logf("killed at %d completed by its state; its last result fetched: sent %d = %d + %d + %d (its in flight incomplete); merged sent %d = %d + %d + %d",
		st.Completed, lost.Sent, lost.Completed, lost.Failed, lost.Incomplete, whole.Sent, whole.Completed, whole.Failed, whole.Incomplete)
	if !strings.Contains(out.String(), "lost: silent") || !strings.Contains(errb.String(), "1 done, 1 lost") {
		t.Errorf("the summary:\n%s\n%s", out.String(), errb.String())
	}
}

// TestAgentsBadInput: run --agents (and ssh --agents) refuses the load's
// flags, a missing token, a bad address and the follower's flags without
// --agents, a comparison's judging without --agents-compare, and it and
// infertop agent a search (infertop agent a split), each in one line; agents that never answer end the run (exit 2) within the
// bound, naming them.
func TestAgentsBadInput(t *testing.T) {
	dir := t.TempDir()
	tokenFile, _ := tokenIn(t, dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "-c", "4"}, "--concurrency is the load's"},
		{[]string{"--agents", "127.0.0.1:1"}, "needs --agents-token-file"},
		{[]string{"--agents-token-file", tokenFile, "--duration", "1s"}, "--agents-token-file needs --agents"},
		{[]string{"--agents", "no-port", "--agents-token-file", tokenFile}, "--agents \"no-port\""},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", filepath.Join(dir, "none")}, "token file"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--matrix", "prompt=64;output=8", "--over", "rate"}, "--matrix over the rate with --agents measures at a rate"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--matrix", "prompt=64,128", "--find-max", "ttft_p99<=1s"}, "give both prompt= and output="},
		{[]string{"agent", "--index", "0", "--of", "2", "--matrix", "prompt=64;output=8"}, "agent: --matrix does not go with agents"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--find-max", "ttft_p99<=1s", "--slo", "e2e_p99<=1s"}, "give --find-max or --slo, not both"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--step-min-time", "1s"}, "--step-min-time belongs to a capacity search"},
		{[]string{"agent", "--index", "0", "--of", "2", "--find-max", "ttft_p99<=1s"}, "agent: --find-max does not go with agents: a search judges"},
		{[]string{"agent", "--index", "0", "--of", "2", "--split-by", "header:x"}, "agent: --split-by does not go with agents"},
		// A comparison: the agents load both sides, the follower judges.
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--regression", "ttft_p99<+10%"}, "--regression judges a comparison: give --agents-compare"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--agents-compare", "--find-max", "ttft_p99<=1s"}, "--find-max does not work with a comparison yet"},
		{[]string{"--agents-compare", "--duration", "1s"}, "--agents-compare needs --agents"},
		{[]string{"--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--agents-compare", "--regression", "ttft_p99<10ms"}, "--regression"},
		// infertop ssh takes the same flags, and its server's beside them.
		{[]string{"ssh", "--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--listen", "127.0.0.1:0", "-c", "4"}, "--concurrency is the load's"},
		{[]string{"ssh", "--agents", "127.0.0.1:1", "--agents-token-file", tokenFile, "--compare", "http://127.0.0.1:1/v1"}, "--compare is the load's, which the agents run"},
		{[]string{"ssh", "--agents-token-file", tokenFile, "--allow-any-key"}, "--agents-token-file needs --agents"},
	} {
		var out, errb bytes.Buffer
		args := c.args
		if args[0] != "agent" && args[0] != "ssh" {
			args = append([]string{"run"}, args...)
		}
		code := run(args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and %q in one line", c.args, code, errb.String(), c.want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errb bytes.Buffer
	code := run([]string{"run", "--agents", ln.Addr().String(), "--agents-token-file", tokenFile, "--agents-plain-loopback", "--agents-poll", "50ms",
		"--agents-result-every", "50ms", "--agents-lost-after", "400ms"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "1 unreachable") || !strings.Contains(errb.String(), "nothing completed") ||
		!strings.Contains(errb.String(), "no agent's result came: "+ln.Addr().String()+" unreachable") {
		t.Errorf("an agent that never answers: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}
