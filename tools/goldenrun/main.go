// Command goldenrun records what the infertop command line writes for a
// fixed set of short headless runs against the embedded sim, with only the
// timing-dependent figures masked, so that two builds (before and after a
// refactor of the command layer) can be compared with diff -r.
//
//	go run ./tools/goldenrun -bin /tmp/infertop-before -out /work/golden-before
//	go run ./tools/goldenrun -bin /tmp/infertop-after -out /tmp/golden-after
//	diff -r /work/golden-before /tmp/golden-after
//
// Every run gets a fresh sim (its request ids, and so the canary's share
// and its text, start again), a fixed seed and fixed prompt and output
// lengths; the prompts are sent uncalibrated (--no-calibrate), since the
// calibration learns from answers in the order they arrive. The agents'
// runs start two `infertop agent` processes on 127.0.0.1 and follow them
// with `infertop run --agents`, recording the agents' files beside the
// follower's. The masking rule is in README.md beside this file and in
// the comments below. It uses the standard library only.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// runSpec is one headless run: the sims it needs (each a list of extra
// flags to `infertop sim`), its arguments given the sims' base URLs (or,
// over agents, the follower's given theirs), and whether the clock ends it
// (then its request counts are masked too).
type runSpec struct {
	name   string
	sims   [][]string
	args   func(urls []string) []string
	agents *agentSpec
	timed  bool
}

// agentSpec is a run over `infertop agent` processes: n of them share the
// load of the flags load gives (with common's), given the sims' base URLs,
// and `infertop` follows them with follow's arguments, given their
// addresses (host:port, comma-separated). The token file ("token", in the
// run's folder) and the plain HTTP on loopback are given to both sides.
// timed is the agents' own: whether the clock ends their runs (the
// follower's is the run's). late, when it is not 0, starts the follower
// only once every side of every agent has completed that many requests
// (see waitRunning); else it follows them from before their start.
type agentSpec struct {
	n      int
	load   func(urls []string) []string
	follow func(agents string) []string
	timed  bool
	late   int64
}

// common are the flags every run shares: a fixed seed, short fixed
// lengths, prompts as asked (the calibration depends on the order answers
// arrive in), and no periodic progress line (it depends on the clock).
var common = []string{"--seed", "1", "--prompt-tokens", "64", "--no-calibrate", "--progress-every", "1h"}

func runs() []runSpec {
	files := func(name string) []string {
		return []string{"--json", name + ".json", "--csv", name + ".csv"}
	}
	join := func(parts ...[]string) []string { return slices.Concat(parts...) }
	return []runSpec{
		{name: "plain", sims: [][]string{nil}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "-c", "4", "--requests", "40", "--output-tokens", "16"}, common, files("plain"))
		}},
		// Objectives: one held, one that cannot hold (exit 1), and goodput
		// limits every request meets.
		{name: "slo", sims: [][]string{nil}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "-c", "4", "--requests", "40", "--output-tokens", "16",
				"--slo", "error_rate<1%", "--slo", "ttft_p99<=1ms", "--goodput", "ttft:10s,e2el:20s"}, common, files("slo"))
		}},
		// Ended by the clock: the end message and the drain.
		{name: "duration", timed: true, sims: [][]string{nil}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "-c", "4", "--duration", "2s", "--output-tokens", "16"}, common, files("duration"))
		}},
		// A canary about twice as slow to the first token: TTFT p99
		// breaches +50 % (exit 1); 240 requests a side, over 2 s, are
		// enough for every statistic to be judged.
		{name: "compare", sims: [][]string{nil, {"--step-base", "12ms", "--prefill-rate", "4000"}}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "-c", "8", "--requests", "240", "--output-tokens", "8",
				"--compare", u[1], "--regression", "ttft_p99<+50%", "--compare-min-seconds", "2"}, common, files("compare"))
		}},
		// A rollout played by the sim: half the requests (drawn by request
		// id) go to a canary pod three times as slow, marked by the
		// X-Infertop-Backend header.
		{name: "split", sims: [][]string{{"--canary", "0.5:3"}}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "-c", "16", "--requests", "480", "--output-tokens", "8",
				"--split-by", "header:X-Infertop-Backend", "--regression", "ttft_p50<+10%", "--compare-min-seconds", "2"}, common, files("split"))
		}},
		// The search: every step up to 16 holds against the default sim,
		// so the walk (1, 2, 4, 8, 16) is the same whatever the machine.
		{name: "capacity", timed: true, sims: [][]string{nil}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "--output-tokens", "8", "--find-max", "ttft_p99<=500ms",
				"--step-min-requests", "10", "--step-min-time", "1s", "--step-max-time", "3s", "--step-warmup", "200ms", "--to", "16"}, common, files("capacity"))
		}},
		// A matrix measured at the load given (no search).
		{name: "matrix", timed: true, sims: [][]string{nil}, args: func(u []string) []string {
			return join([]string{"run", "--url", u[0], "-c", "2", "--matrix", "prompt=64,256;output=8",
				"--step-min-requests", "10", "--step-min-time", "1s", "--step-max-time", "3s", "--step-warmup", "200ms"}, common, files("matrix"))
		}},
		// Two agents share plain's load (2 in flight and 20 requests
		// each), followed to their end and merged from their final
		// results, which a request count makes exact.
		{name: "agents", sims: [][]string{nil}, agents: &agentSpec{n: 2,
			load: func(u []string) []string {
				return []string{"--url", u[0], "-c", "4", "--requests", "40", "--output-tokens", "16"}
			},
			follow: func(a string) []string { return join(follower(a), files("agents")) },
		}},
		// Two agents each loading both sides of compare's pair (80
		// requests a side each), the follower judging the canary over the
		// two merges. That comparison is of the merged seconds both sides
		// had sealed when it was made, whose counts depend on the clock
		// (the run is timed; the agents' own are not): too few for a p99
		// ever to be judged (200 a side), always enough for a p50 (30),
		// which the canary breaches twice over. The follower comes once
		// both sides of each agent run (late; see waitRunning).
		{name: "agents-compare", timed: true, sims: [][]string{nil, {"--step-base", "12ms", "--prefill-rate", "4000"}}, agents: &agentSpec{n: 2, late: 1,
			load: func(u []string) []string {
				return []string{"--url", u[0], "--compare", u[1], "-c", "8", "--requests", "160", "--output-tokens", "8"}
			},
			follow: func(a string) []string {
				return join(follower(a), []string{"--agents-compare", "--regression", "ttft_p50<+10%", "--compare-min-seconds", "2"},
					files("agents-compare"))
			},
		}},
		// The follower's search over two agents: every step up to 4 (2
		// and 4 in flight, split between them) holds, so the walk is the
		// same whatever the machine; the agents run until it ends them
		// (their --duration only a bound). The follower comes once each
		// has completed 5 requests at its own load (its phase 1; see
		// waitRunning).
		{name: "agents-capacity", timed: true, sims: [][]string{nil}, agents: &agentSpec{n: 2, timed: true, late: 5,
			load: func(u []string) []string {
				return []string{"--url", u[0], "-c", "2", "--duration", "1m", "--output-tokens", "8", "--drain", "5s"}
			},
			follow: func(a string) []string {
				return join(follower(a), []string{"--find-max", "ttft_p99<=500ms", "--to", "4", "--step-min-requests", "10",
					"--step-min-time", "1s", "--step-max-time", "3s", "--step-warmup", "200ms"}, files("agents-capacity"))
			},
		}},
	}
}

// follower is the start of `infertop run --agents` over the agents at
// addrs: the shared token, plain HTTP on loopback, polls and results
// often enough for a run of seconds, an agent lost only well after any
// pause of a loaded machine, and no periodic progress line.
func follower(addrs string) []string {
	return []string{"run", "--agents", addrs, "--agents-token-file", tokenFile, "--agents-plain-loopback", "--agents-poll", "100ms",
		"--agents-result-every", "500ms", "--agents-lost-after", "10s", "--progress-every", "1h"}
}

// tokenFile is the token the agents and their follower share, written in
// the run's folder (so the path in their settings is the same every time).
const tokenFile = "token"

func main() {
	bin := flag.String("bin", "", "the infertop binary to record")
	out := flag.String("out", "", "folder for the normalised files (created; must not exist unless -force)")
	raw := flag.String("raw", "", "also keep the raw files of each run under this folder")
	only := flag.String("only", "", "comma-separated runs to record (default: all)")
	force := flag.Bool("force", false, "replace -out if it exists")
	timeout := flag.Duration("timeout", 90*time.Second, "limit on one run")
	flag.Parse()
	if *bin == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: goldenrun -bin PATH -out DIR [-raw DIR] [-only plain,agents,...] [-force]")
		os.Exit(2)
	}
	if err := record(*bin, *out, *raw, *only, *force, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "goldenrun:", err)
		os.Exit(1)
	}
}

func record(bin, out, raw, only string, force bool, timeout time.Duration) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return err
	}
	if _, err := os.Stat(out); err == nil {
		if !force {
			return fmt.Errorf("%s exists: remove it or pass -force", out)
		}
		if err := os.RemoveAll(out); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	selected := runs()
	if only != "" {
		var names []string
		for _, r := range selected {
			names = append(names, r.name)
		}
		want := strings.Split(only, ",")
		selected = slices.DeleteFunc(selected, func(r runSpec) bool { return !slices.Contains(want, r.name) })
		if len(selected) != len(want) {
			return fmt.Errorf("-only %q: unknown run (have %s)", only, strings.Join(names, ", "))
		}
	}
	version, err := versionOf(bin)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, r := range selected {
		t := time.Now()
		code, err := recordRun(bin, out, raw, version, r, timeout)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		fmt.Fprintf(os.Stderr, "goldenrun: %-15s exit %d in %v\n", r.name, code, time.Since(t).Round(100*time.Millisecond))
	}
	fmt.Fprintf(os.Stderr, "goldenrun: %d runs in %v, written to %s\n", len(selected), time.Since(start).Round(100*time.Millisecond), out)
	return nil
}

// versionOf is what `bin --version` says the binary is: "dev" for a
// build with no version set and no VCS stamp (go build with
// -buildvcs=false), else a version or a revision, which the two builds
// being compared differ by.
func versionOf(bin string) (string, error) {
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || f[0] != "infertop" {
		return "", fmt.Errorf("%s --version: %q", bin, b)
	}
	return f[1], nil
}

// recordRun starts the run's sims (and agents), runs infertop in a fresh
// folder (so the file names in its settings are relative and the same
// every time), and writes the normalised stdout, stderr, exit code, JSON
// and CSV of infertop and of each agent. The binary's version (a word of
// its own: "dev" in /dev or devices is not it) is <version> in every file.
func recordRun(bin, out, raw, version string, r runSpec, timeout time.Duration) (int, error) {
	dir, err := os.MkdirTemp("", "goldenrun-"+r.name)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	// Each sim's address is replaced by SIMn, each agent's by AGENTi (its
	// index), in every file: the ports are whatever was free.
	var urls []string
	m := masker{addrs: map[string]string{}, repl: []string{dir, "WORKDIR"},
		version: regexp.MustCompile(`(^|[^\w/.-])` + regexp.QuoteMeta(version) + `($|[^\w.-])`)}
	for i, extra := range r.sims {
		addr, err := freeAddr()
		if err != nil {
			return 0, err
		}
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("sim%d.log", i+1)))
		if err != nil {
			return 0, err
		}
		defer logf.Close()
		sim, err := startServer(ctx, bin, slices.Concat([]string{"sim", "--addr", addr, "--seed", "1"}, extra), addr, "/health", logf, logf)
		if err != nil {
			log, _ := os.ReadFile(logf.Name())
			return 0, fmt.Errorf("%w\n%s", err, log)
		}
		defer sim.end(0, 5*time.Second)
		urls = append(urls, "http://"+addr+"/v1")
		m.addrs[addr] = fmt.Sprintf("127.0.0.1:SIM%d", i+1)
	}
	args := r.args
	var agents []*server
	if r.agents != nil {
		if agents, err = startAgents(ctx, bin, dir, r, urls, &m); err != nil {
			return 0, err
		}
		var addrs []string
		for _, a := range agents {
			defer a.end(0, 5*time.Second) // a failed run's: they have ended otherwise
			addrs = append(addrs, a.addr)
		}
		if r.agents.late > 0 {
			if err := waitRunning(ctx, agents, filepath.Join(dir, tokenFile), r.agents.late); err != nil {
				return 0, err
			}
		}
		args = func([]string) []string { return r.agents.follow(strings.Join(addrs, ",")) }
	}
	cmd := exec.CommandContext(ctx, bin, args(urls)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ctx.Err() != nil {
			return 0, fmt.Errorf("infertop %s: %w\n%s", strings.Join(cmd.Args[1:], " "), err, stderr.String())
		}
		code = ee.ExitCode()
	}
	if err := m.write(out, raw, dir, r.name, stdout.Bytes(), stderr.Bytes(), strconv.Itoa(code), r.timed); err != nil {
		return code, err
	}
	// Each agent ends once its follower has fetched its final result (or
	// once the follower has ended its run): one still running well after
	// is stopped, and its exit file says so.
	for i, a := range agents {
		exit := ""
		if !a.end(agentEnd, 5*time.Second) {
			exit = fmt.Sprintf("(goldenrun: still running %v after the follower ended: interrupted) ", agentEnd)
		}
		exit += strconv.Itoa(a.cmd.ProcessState.ExitCode())
		if err := m.write(out, raw, dir, agentBase(r.name, i), a.stdout.Bytes(), a.stderr.Bytes(), exit, r.agents.timed); err != nil {
			return code, err
		}
	}
	return code, nil
}

// agentEnd is how long an agent may run on after its follower ended: it
// ends once its final result is fetched (or, past --linger, its own).
const agentEnd = 15 * time.Second

// agentBase is the name of agent i's files: its --json and --csv in the
// run's folder, and what is recorded of it.
func agentBase(run string, i int) string { return fmt.Sprintf("%s.agent%d", run, i) }

// startAgents starts the run's agents, each `infertop agent` on a free
// port of 127.0.0.1 against the sims at urls, and waits until each
// serves. They start their load together 2 s on (--start-at): time for
// all to be up, and for a follower to be there from before the start.
func startAgents(ctx context.Context, bin, dir string, r runSpec, urls []string, m *masker) (agents []*server, err error) {
	if err := os.WriteFile(filepath.Join(dir, tokenFile), []byte("a-token-of-more-than-sixteen-bytes\n"), 0o600); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, a := range agents {
				a.end(0, 5*time.Second)
			}
			agents = nil
		}
	}()
	startAt := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	m.repl = append(m.repl, startAt, "<start-at>")
	for i := range r.agents.n {
		addr, err := freeAddr()
		if err != nil {
			return agents, err
		}
		base := agentBase(r.name, i)
		args := slices.Concat([]string{"agent", "--index", strconv.Itoa(i), "--of", strconv.Itoa(r.agents.n), "--start-at", startAt,
			"--listen", addr, "--plain-http-loopback", "--token-file", tokenFile, "--linger", "10s",
			"--json", base + ".json", "--csv", base + ".csv"}, common, r.agents.load(urls))
		a, err := startAgent(ctx, bin, dir, addr, args)
		if err != nil {
			return agents, fmt.Errorf("agent %d: %w", i, err)
		}
		agents = append(agents, a)
		m.addrs[addr] = fmt.Sprintf("127.0.0.1:AGENT%d", i)
	}
	return agents, nil
}

// startAgent starts one agent in dir and waits for its /healthz.
func startAgent(ctx context.Context, bin, dir, addr string, args []string) (*server, error) {
	var stdout, stderr bytes.Buffer
	a, err := startServer(ctx, bin, args, addr, "/healthz", &stdout, &stderr, func(c *exec.Cmd) { c.Dir = dir })
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, stderr.String())
	}
	a.stdout, a.stderr = &stdout, &stderr
	return a, nil
}

// waitRunning waits until every agent's /state, and a comparison's
// /canary/state, says its share's prompt length and n requests completed:
// its load runs, and the follower comes after its start. A follower there
// from before the start sees what depends on when the start falls
// between its polls:
//   - an agent comparing a canary says its knobs only from its first
//     snapshot, a tick (250 ms) after its start, and until then a zero
//     start and zero knobs; a follower that sees that refuses the other
//     agents as another load until the next poll, and says so on stderr;
//   - a control sent before the start (a search's first step) is applied
//     once the load has started, after its first requests or not: the
//     agent's phase 1, at its own knobs, has requests or is left out.
//
// After the start, a search's first control makes phase 2 on every
// agent, phase 1 holding at least n requests.
func waitRunning(ctx context.Context, agents []*server, tokenPath string, n int64) error {
	token, err := os.ReadFile(tokenPath)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, a := range agents {
		paths := []string{"/state"}
		for i := 0; i < len(paths); i++ {
			for {
				st, err := stateOf(ctx, "http://"+a.addr+paths[i], strings.TrimSpace(string(token)))
				if err == nil && st.PromptTokens > 0 && st.Completed >= n {
					if st.Compare && i == 0 {
						paths = append(paths, "/canary/state")
					}
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return fmt.Errorf("agent on %s: its %s says no knobs or fewer than %d requests completed in 15 s (%v)", a.addr, paths[i], n, err)
				}
				time.Sleep(20 * time.Millisecond) // polling for the event: the agent's snapshot
			}
		}
	}
	return nil
}

// agentState is what waitRunning reads of an agent's /state.
type agentState struct {
	PromptTokens int   `json:"prompt_tokens"`
	Completed    int64 `json:"completed"`
	Compare      bool  `json:"compare"`
}

// stateOf is the agent's /state at url, asked with the token.
func stateOf(ctx context.Context, url, token string) (agentState, error) {
	var st agentState
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// server is an infertop process serving HTTP on addr: a sim or an agent.
type server struct {
	addr           string
	cmd            *exec.Cmd
	done           chan struct{} // closed once it has exited and its output is copied
	stdout, stderr *bytes.Buffer // an agent's, read once done
}

// end waits up to wait for the process to exit by itself, then interrupts
// it (a sim stops, an agent ends its run and reports) and kills it if it
// is still running grace later. It says whether it exited by itself.
func (s *server) end(wait, grace time.Duration) bool {
	select {
	case <-s.done:
		return true
	case <-time.After(wait):
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return false
}

// freeAddr is a port of 127.0.0.1 free a moment ago, for a server to
// listen on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startServer starts `infertop args...` (with the options applied to its
// command) and waits for health on addr to answer 200, for at most 15 s;
// a process that exits before is an error.
func startServer(ctx context.Context, bin string, args []string, addr, health string, stdout, stderr io.Writer, opts ...func(*exec.Cmd)) (*server, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	for _, o := range opts {
		o(cmd)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+health, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("infertop %s on %s exited", args[0], addr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.end(0, 5*time.Second)
			return nil, fmt.Errorf("infertop %s on %s: no %s in 15 s", args[0], addr, health)
		}
	}
}

// masker normalises what a run's processes wrote: the run's folder and
// the agents' --start-at replaced (repl: old, new, ...), the binary's
// version (a match of version: before, the version, after), each address
// of 127.0.0.1 by its name (addrs: a sim's or an agent's; anything else, a
// client's port, 127.0.0.1:PORT), then the figures masked by the rule.
type masker struct {
	repl    []string
	version *regexp.Regexp
	addrs   map[string]string
}

// reLoopback is an address of 127.0.0.1 with its port.
var reLoopback = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// replace names what depends on the machine and the moment in s: the
// folder, the start, the version, the ports.
func (m *masker) replace(s string) string {
	s = strings.NewReplacer(m.repl...).Replace(s)
	s = m.version.ReplaceAllString(s, "${1}<version>${2}")
	return reLoopback.ReplaceAllStringFunc(s, func(a string) string {
		if name, ok := m.addrs[a]; ok {
			return name
		}
		return "127.0.0.1:PORT"
	})
}

// write records one process of a run under base: its stdout, stderr and
// exit, and the JSON and CSV it wrote in dir (base.json, base.csv),
// normalised in out, and as written in raw when it is set.
func (m *masker) write(out, raw, dir, base string, stdout, stderr []byte, exit string, timed bool) error {
	files := map[string][]byte{
		".txt":    stdout,
		".stderr": stderr,
		".exit":   []byte(exit + "\n"),
	}
	for _, ext := range []string{".json", ".csv"} {
		b, err := os.ReadFile(filepath.Join(dir, base+ext))
		if errors.Is(err, os.ErrNotExist) {
			b = []byte(notWritten)
		} else if err != nil {
			return err
		}
		files[ext] = b
	}
	if raw != "" {
		if err := os.MkdirAll(raw, 0o755); err != nil {
			return err
		}
		for ext, b := range files {
			if err := os.WriteFile(filepath.Join(raw, base+ext), b, 0o644); err != nil {
				return err
			}
		}
	}
	for ext, b := range files {
		s := m.replace(string(b))
		norm := s
		var err error
		switch {
		case s == notWritten:
		case ext == ".json":
			norm, err = normJSON(s, timed)
		case ext == ".csv":
			norm, err = normCSV(s, timed)
		case ext == ".txt":
			norm = normText(s, timed, false)
		case ext == ".stderr":
			norm = normText(canaryLast(s), timed, true)
		}
		if err != nil {
			return fmt.Errorf("%s%s: %w", base, ext, err)
		}
		if err := os.WriteFile(filepath.Join(out, base+ext), []byte(norm), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// notWritten stands for a JSON or CSV file the run did not write.
const notWritten = "(not written)\n"

// Placeholders of the masked values.
const (
	maskTime  = "<time>"  // a timestamp
	maskDur   = "<dur>"   // a duration
	maskRate  = "<rate>"  // a rate (req/s, tok/s)
	maskDelta = "<delta>" // a signed difference (+38%, -6.4%, +0.5pp)
	maskPct   = "<pct>"   // an unsigned percentage other than 0
	maskNum   = "<num>"   // any other measured figure
	maskCount = "<n>"     // a count of requests or tokens in a run the clock ends
	maskHist  = "<hdr>"   // an encoded HdrHistogram
	maskSer   = "<series>"
)

// countKeys are the JSON keys and CSV columns holding counts of requests
// or tokens: exact when the run is ended by --requests, masked (unless 0)
// when the clock ends it. Keys under errors_by_class, and CSV columns
// errors_*, are counts too.
var countKeys = set("sent", "completed", "failed", "incomplete", "retried", "good", "pending", "requests",
	"count", "n_baseline", "n_canary", "total_input_tokens", "total_output_tokens")

// labelKeys are the JSON keys and CSV columns holding settings, knob values,
// identifiers and the search's result at a fixed walk: kept as they are.
// Everything under "knobs" and "settings" is kept as well.
var labelKeys = set("id", "index", "phase", "step", "warmup_phase", "tail_phase", "drain_phase", "load", "max_load",
	"concurrency", "rate", "prompt_tokens", "output_tokens", "max_concurrency", "max_model_len", "seed", "cpus",
	"resamples", "confidence", "family_confidence", "tolerance", "prompts", "outputs", "mode", "over")

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// A node is one JSON value with its object keys in the writer's order.
type node struct {
	kind   byte // '{', '[', '"', 'n' (number), 'b' (true/false), '0' (null)
	keys   []string
	vals   []*node
	scalar string // the number's text, the string, "true" or "false"
}

func parseJSON(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := parseJSON(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &node{kind: '"', scalar: t}, nil
	case json.Number:
		return &node{kind: 'n', scalar: t.String()}, nil
	case bool:
		return &node{kind: 'b', scalar: strconv.FormatBool(t)}, nil
	case nil:
		return &node{kind: '0'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// normJSON keeps every key, in order, every array's length (but a time
// series'), every string but timestamps and the figures inside text, every
// bool and null, and masks numbers by their key (see maskNumber).
func normJSON(s string, timed bool) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	root, err := parseJSON(dec)
	if err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("data after the top-level value")
	}
	var b strings.Builder
	writeJSON(&b, root, nil, timed, 0)
	b.WriteByte('\n')
	return b.String(), nil
}

func writeJSON(b *strings.Builder, n *node, path []string, timed bool, depth int) {
	ind := strings.Repeat("  ", depth+1)
	key := ""
	if len(path) > 0 {
		key = path[len(path)-1]
	}
	switch n.kind {
	case '{':
		if len(n.vals) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range n.keys {
			b.WriteString(ind + quote(k) + ": ")
			writeJSON(b, n.vals[i], append(path, k), timed, depth+1)
			if i < len(n.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(ind[2:] + "}")
	case '[':
		if len(n.vals) == 0 {
			b.WriteString("[]")
			return
		}
		// A time series (a value a second, a scrape a second) is as long
		// as the run was: only that it had values is kept.
		if slices.Contains(path, "series") || slices.Contains(path, "telemetry") {
			b.WriteString(`["` + maskSer + `"]`)
			return
		}
		b.WriteString("[\n")
		for i, v := range n.vals {
			b.WriteString(ind)
			writeJSON(b, v, path, timed, depth+1) // an element has its array's key
			if i < len(n.vals)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(ind[2:] + "]")
	case '"':
		switch {
		case slices.Contains(path, "settings"):
			b.WriteString(quote(n.scalar)) // the command line, as given
		case strings.HasPrefix(n.scalar, "HISTF"):
			b.WriteString(quote(maskHist))
		default:
			b.WriteString(quote(maskText(n.scalar, timed)))
		}
	case 'n':
		parent := ""
		if len(path) > 1 {
			parent = path[len(path)-2]
		}
		if m := maskNumber(n.scalar, key, parent, slices.Contains(path, "settings"), timed); m != n.scalar {
			b.WriteString(quote(m))
		} else {
			b.WriteString(m)
		}
	case 'b':
		b.WriteString(n.scalar)
	case '0':
		b.WriteString("null")
	}
}

// maskNumber is the rule for a number under key (parent the key above):
// settings, knobs and labelKeys are kept; counts are kept when the run is
// ended by a request count, and masked unless zero when the clock ends it;
// a unix time (created) is masked; every other number is a measurement,
// masked unless it is zero (a zero is a figure not measured, such as the
// queue time of a closed loop, or an error rate with no errors).
func maskNumber(v, key, parent string, inSettings, timed bool) string {
	switch {
	case inSettings || parent == "knobs" || labelKeys[key]:
		return v
	case countKeys[key] || parent == "errors_by_class" || strings.HasPrefix(key, "errors_"):
		if timed && !isZero(v) {
			return maskCount
		}
		return v
	case key == "created":
		return maskTime
	case isZero(v):
		return v
	}
	return maskNum
}

func isZero(v string) bool {
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	return err == nil && f == 0
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// normCSV keeps the header and the number of rows; each cell is masked by
// its column's name as a JSON number is by its key; text cells as text.
func normCSV(s string, timed bool) (string, error) {
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	for i, row := range rows {
		if i > 0 {
			for j, cell := range row {
				col := ""
				if j < len(rows[0]) {
					col = rows[0][j]
				}
				if _, err := strconv.ParseFloat(cell, 64); err == nil {
					row[j] = maskNumber(cell, col, "", false, timed)
				} else {
					row[j] = maskText(cell, timed)
				}
			}
		}
		if err := w.Write(row); err != nil {
			return "", err
		}
	}
	w.Flush()
	return b.String(), w.Error()
}

var (
	// timestamps: RFC 3339 (2026-12-01T19:40:37.80543105Z) and the
	// report's compact date (20261201-194037).
	reTime = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?|\b\d{8}-\d{6}\b`)
	// a row of a latency table: its label, then the count of values.
	reTableCount = regexp.MustCompile(`^(\s*(?:TTFT|TPOT|ITL|E2E|TTFB|TTFO|TTFT\*|E2E\*|Queue|queue)\s+)(\d+)\b`)
	// a row of the agents' table: index, address, state, then the counts
	// sent, completed, failed and incomplete (groups 2 to 5).
	reAgentRow = regexp.MustCompile(`^(\s*\d+\s+\S+\s+(?:running|done|lost|replaced|unreachable|refused)\s+)(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\b`)
	// a comparison table's requests column (baseline/canary), before the
	// verdict that ends the row.
	reCompareCount = regexp.MustCompile(`\b(\d+)/(\d+)(\s+(?:worse|better|no difference|not enough data)\s*)$`)
	// a capacity search's progress line: its warm-up's time left (absent
	// once none is), and its hold's time left and requests so far.
	reWarmupLeft = regexp.MustCompile(`^(infertop: step \d+ · .* · warming up) [^·]*more\b`)
	reHoldLeft   = regexp.MustCompile(`^(infertop: step \d+ · .* · holding) [^·(]*more \(\d+ of`)
	// a capacity search's progress line of the settling state.
	reSettling = regexp.MustCompile(`^infertop: step \d+ · .* · settling\b`)
	// a Go duration's units, longest first.
	durUnits = []string{"ns", "µs", "us", "ms", "h", "m", "s"}
	// words after an integer that make it a count of requests.
	countWords = []string{"ok", "failed", "completed", "incomplete", "requests", "request", "pending", "arrivals", "sent", "group", "baseline", "canary", "still", "more"}
	spaces     = regexp.MustCompile(`  +`)
)

// canaryPrefix marks the lines the canary's runner writes on stderr.
const canaryPrefix = "infertop: canary: "

// canaryLast moves the canary's lines on stderr after all the others, in
// their own order: the canary's runner starts beside the baseline's and
// writes at the same time, so how their lines interleave depends on the
// scheduler (its detection line came before the baseline's in one run,
// after it in the next).
func canaryLast(s string) string {
	var own, canary []string
	for l := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		if strings.HasPrefix(l, canaryPrefix) {
			canary = append(canary, l)
		} else {
			own = append(own, l)
		}
	}
	if len(canary) == 0 {
		return s
	}
	lines := append(own, "(goldenrun: the canary's lines, in their order, written beside the lines above)")
	return strings.Join(append(lines, canary...), "\n") + "\n"
}

// normText masks a text report line by line (maskText), collapses the
// runs of spaces inside a line (a column is as wide as its widest figure)
// and drops trailing spaces. For stderr (progress), a line equal to the one
// before once masked is dropped: how often a state is reported depends on
// the clock; and a search's progress line keeps its step, load and state,
// but not how far the state had gone when it was written (the time left
// in a warm-up, or that none was; the requests a hold had so far, 0
// included): over agents the follower sees a state first at a poll. Its
// settling state is dropped: whether a hold's last requests are still
// coming back when it is judged depends on the clock (over agents, on
// when the agents' phases were merged).
func normText(s string, timed, dedupe bool) string {
	lines := strings.Split(s, "\n")
	var out []string
	for _, l := range lines {
		if dedupe {
			if reSettling.MatchString(l) {
				continue
			}
			l = reWarmupLeft.ReplaceAllString(l, "$1")
			l = reHoldLeft.ReplaceAllString(l, "$1 "+maskDur+" more ("+maskCount+" of")
		}
		l = maskText(l, timed)
		lead := len(l) - len(strings.TrimLeft(l, " "))
		l = l[:lead] + spaces.ReplaceAllString(strings.TrimRight(l[lead:], " "), " ")
		if dedupe && len(out) > 0 && out[len(out)-1] == l {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// maskText masks the timing figures in one line of text, keeping words,
// labels, settings and counts:
//   - a timestamp is <time>;
//   - a number with a unit of time (1.46s, 252ms, 1m30s, "2 s") is <dur>,
//     with a unit of rate (27.4 req/s, 438 tok/s) <rate>, unless it is 0;
//   - a signed number (+201%, -6.4%, +0.00pp) is a difference: <delta>;
//   - an unsigned percentage (3598%, 99%) is <pct> unless it is 0 (0.00%);
//   - any other number with a fraction (16.5, 0.25) is <num> unless it is 0;
//   - an integer (a count, a label, a setting) is kept, except, when the
//     clock ends the run,
//     a count of requests (an integer before ok, failed, requests, ... or
//     in the count column of a latency table), which is <n> unless 0.
//
// A number right after <, > or = is a limit in an expression
// (ttft_p99<=500ms, ttft_p99<+50%) and is kept; a number glued to a letter,
// '_', '.' or '/' (p99, go1.26.8, HTTP/1.1, llama-8b) is part of a word.
func maskText(s string, timed bool) string {
	s = reTime.ReplaceAllString(s, maskTime)
	if timed {
		if m := reTableCount.FindStringSubmatchIndex(s); m != nil && s[m[4]:m[5]] != "0" {
			s = s[:m[4]] + maskCount + s[m[5]:]
		}
		s = maskGroups(s, reAgentRow, 2, 3, 4, 5)
		s = maskGroups(s, reCompareCount, 1, 2)
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isDigit(r) || gluedBefore(s, i) {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		// the number: digits, a fraction; a dotted run (127.0.0.1) is a word
		j := i
		for j < len(s) && isDigit(rune(s[j])) {
			j++
		}
		if j+1 < len(s) && s[j] == '.' && isDigit(rune(s[j+1])) {
			j++
			for j < len(s) && isDigit(rune(s[j])) {
				j++
			}
			if j+1 < len(s) && s[j] == '.' && isDigit(rune(s[j+1])) {
				for j < len(s) && (isDigit(rune(s[j])) || s[j] == '.') {
					j++
				}
				b.WriteString(s[i:j])
				i = j
				continue
			}
		}
		num := s[i:j]
		// the sign before it, and what comes before the sign
		sign, before := "", prevRune(s, i)
		if before == '+' || before == '-' || before == '−' {
			sb := i - utf8.RuneLen(before)
			if p := prevRune(s, sb); !unicode.IsLetter(p) && !isDigit(p) && p != '_' {
				sign = string(before)
				before = p
			}
		}
		end, unit := unitAfter(s, j)
		if end < len(s) {
			if r, _ := utf8.DecodeRuneInString(s[end:]); unicode.IsLetter(r) || r == '_' {
				// glued to a word (3xx, 8b, 2nd): not a figure
				b.WriteString(s[i:end])
				i = end
				continue
			}
		}
		tok := s[i:end]
		var repl string
		switch {
		case before == '<' || before == '>' || before == '=':
			repl = tok
		case sign != "":
			repl = maskDelta
		case unit == "dur":
			repl = ifZero(num, tok, maskDur)
		case unit == "rate":
			repl = ifZero(num, tok, maskRate)
		case unit == "pct":
			repl = ifZero(num, tok, maskPct)
		case strings.Contains(num, "."):
			repl = ifZero(num, tok, maskNum)
		case timed && num != "0" && isCount(s, end):
			repl = maskCount
		default:
			repl = tok
		}
		if sign != "" && repl == maskDelta {
			// the sign is already written: take it back
			out := b.String()
			b.Reset()
			b.WriteString(strings.TrimSuffix(out, sign))
		}
		b.WriteString(repl)
		i = end
	}
	return b.String()
}

// maskGroups masks the counts in the groups of re's match in s (their
// numbers, in order), each <n> unless it is 0; the rest is kept.
func maskGroups(s string, re *regexp.Regexp, groups ...int) string {
	m := re.FindStringSubmatchIndex(s)
	if m == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, g := range groups {
		start, end := m[2*g], m[2*g+1]
		b.WriteString(s[last:start])
		b.WriteString(ifZero(s[start:end], s[start:end], maskCount))
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

func ifZero(num, tok, mask string) string {
	if isZero(num) {
		return tok
	}
	return mask
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// gluedBefore says whether the digit at i continues a word or a number.
func gluedBefore(s string, i int) bool {
	p := prevRune(s, i)
	return unicode.IsLetter(p) || isDigit(p) || p == '_' || p == '.' || p == '/'
}

func prevRune(s string, i int) rune {
	if i <= 0 {
		return 0
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}

// unitAfter reads the unit after a number ending at j: a Go duration's
// (1m30s: the further components are taken in too), a rate's (req/s,
// tok/s, after a space or not), a percentage's or percentage points'.
func unitAfter(s string, j int) (int, string) {
	rest := s[j:]
	for _, u := range []string{" req/s", " tok/s", "req/s", "tok/s", "/s"} {
		if strings.HasPrefix(rest, u) {
			return j + len(u), "rate"
		}
	}
	if strings.HasPrefix(rest, "%") {
		return j + 1, "pct"
	}
	if strings.HasPrefix(rest, "pp") && !followedByLetter(s, j+2) {
		return j + 2, "pct"
	}
	k := j
	if strings.HasPrefix(rest, " ") {
		k++ // "2 s"
	}
	end := durEnd(s, k)
	if end == k {
		return j, ""
	}
	// further components: 1m30.5s, 2h0m0s
	for {
		d := end
		for d < len(s) && (isDigit(rune(s[d])) || s[d] == '.') {
			d++
		}
		if d == end {
			break
		}
		e := durEnd(s, d)
		if e == d {
			break
		}
		end = e
	}
	return end, "dur"
}

// durEnd is the end of a duration unit at k not followed by a letter, or k.
func durEnd(s string, k int) int {
	for _, u := range durUnits {
		if strings.HasPrefix(s[k:], u) && !followedByLetter(s, k+len(u)) {
			return k + len(u)
		}
	}
	return k
}

func followedByLetter(s string, k int) bool {
	if k >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[k:])
	return unicode.IsLetter(r) || r == '_'
}

// isCount says whether the integer ending at end counts requests: the word
// after it is one of countWords, or it is one side of "N / M", or it
// follows "sent ".
func isCount(s string, end int) bool {
	rest := strings.TrimLeft(s[end:], " ")
	for _, w := range countWords {
		if strings.HasPrefix(rest, w) && !followedByLetter(rest, len(w)) {
			return true
		}
	}
	if strings.HasPrefix(rest, "/ ") && len(rest) > 2 && isDigit(rune(rest[2])) {
		return true
	}
	start := end
	for start > 0 && isDigit(rune(s[start-1])) {
		start--
	}
	before := strings.TrimRight(s[:start], " ")
	return strings.HasSuffix(before, " /") || strings.HasSuffix(before, "sent") || strings.HasSuffix(before, "=")
}
