package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// lockedBuffer is a buffer safe for a writer's goroutine and the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitText waits up to 10 s for what the buffer holds (its escapes
// stripped) to match re, and returns it.
func waitText(t *testing.T, what string, b *lockedBuffer, re *regexp.Regexp) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := ansi.Strip(b.String())
		if re.MatchString(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s (%s); the last 600 bytes: %q", what, re, s[max(0, len(s)-600):])
		}
	}
}

// sshTerminal connects to addr with signer, asks for a PTY of cols×rows
// and a shell, and returns the connection, the session, its input and
// everything it prints.
func sshTerminal(t *testing.T, addr string, signer gossh.Signer, cols, rows int) (*gossh.Client, *gossh.Session, func(string), *lockedBuffer) {
	t.Helper()
	client, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{User: "demo", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		Timeout: 5 * time.Second, HostKeyCallback: gossh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", rows, cols, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	sess.Stdout, sess.Stderr = out, out
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	// Answer the renderer's queries (the background colour, the device
	// attributes) as a terminal would.
	in.Write([]byte("\x1b]11;rgb:1c1c/1c1c/1c1c\x1b\\\x1b[?62;22c"))
	return client, sess, func(keys string) { in.Write([]byte(keys)) }, out
}

// sshServer is `infertop ssh` run by the test: the test binary as
// infertop, listening on a free port of 127.0.0.1, any key let in and the
// test's key a controller.
type sshServer struct {
	addr           string
	signer         gossh.Signer
	stdout, stderr lockedBuffer
	cmd            *exec.Cmd
	exited         chan struct{}
	waitErr        error
}

// startSSH starts `infertop ssh` with args after its own, and waits for
// its serving line to match serving, whose first group is the address.
func startSSH(t *testing.T, serving *regexp.Regexp, args ...string) *sshServer {
	t.Helper()
	dir := t.TempDir()
	return startServing(t, serving, func(signer gossh.Signer) []string {
		controllers := filepath.Join(dir, "controllers")
		if err := os.WriteFile(controllers, gossh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
			t.Fatal(err)
		}
		own := []string{"ssh", "--listen", "127.0.0.1:0", "--allow-any-key", "--controllers", controllers, "--host-key", filepath.Join(dir, "host_ed25519"),
			"--report-dir", dir}
		if !slices.Contains(args, "--agents") { // else the load's flags are the agents'
			own = append(own, "--tick", "100ms", "--server-metrics", "off")
		}
		return append(own, args...)
	})
}

// startServing starts the test binary as infertop with the arguments
// args gives for the test's key, and waits for its stderr to match
// serving, whose first group is the address it serves SSH on.
func startServing(t *testing.T, serving *regexp.Regexp, args func(gossh.Signer) []string) *sshServer {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := &sshServer{exited: make(chan struct{})}
	if srv.signer, err = gossh.NewSignerFromKey(priv); err != nil {
		t.Fatal(err)
	}
	srv.cmd = exec.Command(self, args(srv.signer)...)
	srv.cmd.Env = append(os.Environ(), "INFERTOP_TEST_MAIN=1")
	srv.cmd.Stdout, srv.cmd.Stderr = &srv.stdout, &srv.stderr
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { defer close(srv.exited); srv.waitErr = srv.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-srv.exited:
		default:
			srv.cmd.Process.Kill()
			<-srv.exited
		}
	})
	srv.addr = serving.FindStringSubmatch(waitText(t, "the serving line", &srv.stderr, serving))[1]
	return srv
}

// interrupt sends SIGINT, as Ctrl+C does, and waits for sess to end (it
// reads that the server stopped), then for a clean exit. The comparison's
// table is on stdout then.
func (srv *sshServer) interrupt(t *testing.T, client *gossh.Client, sess *gossh.Session, out *lockedBuffer) {
	t.Helper()
	stopped := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sessionEnded := make(chan struct{})
	go func() { defer close(sessionEnded); sess.Wait() }()
	select {
	case <-sessionEnded:
	case <-time.After(10 * time.Second):
		t.Fatalf("the session still open 10 s after SIGINT\n%s", srv.stderr.String())
	}
	t.Logf("the session ended %v after SIGINT", time.Since(stopped).Round(time.Millisecond))
	client.Close() // as ssh does when its one session ends
	if !strings.Contains(out.String(), "the server stopped") {
		t.Errorf("the session never read that the server stopped")
	}
	select {
	case <-srv.exited:
		if srv.waitErr != nil {
			t.Fatalf("infertop ssh: %v\n%s", srv.waitErr, srv.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("infertop ssh still running 10 s after SIGINT\n%s", srv.stderr.String())
	}
	// Under -race a tenth of a second of this is the race runtime's own
	// wait at exit (GORACE's atexit_sleep_ms, set by TestMain).
	t.Logf("infertop ssh exited %v after SIGINT", time.Since(stopped).Round(time.Millisecond))
}

// TestSSHCompare runs `infertop ssh --compare` as an operator would (the
// embedded sim the baseline, a second sim the canary) and connects as a
// controller with an SSH client: the session shows the comparison's view
// (both sides, Δ, the verdict line), K doubles the concurrency on both
// sides, and at SIGINT the session reads that the server stopped and the
// comparison's table is printed on stdout, exit 0.
func TestSSHCompare(t *testing.T) {
	t.Parallel()
	// Both sims with a 5 ms step: at the fast preset's no cost the two
	// loads take every core (TestCompareDashboardInTmux).
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	p.StepBase = 5 * time.Millisecond
	canary := simtest.Start(t, p)
	srv := startSSH(t, regexp.MustCompile(`serving \S+ against the canary \S+ on (127\.0\.0\.1:\d+)`),
		"--sim-preset", "fast", "--sim-step-base", "5ms", "--compare", canary.URL)
	client, sess, keys, out := sshTerminal(t, srv.addr, srv.signer, 100, 30)
	// The verdict line, from the comparison's first computation on.
	s := waitText(t, "a verdict line", out, regexp.MustCompile(`canary (slower|faster|failing)|no difference found yet`))
	for _, want := range []string{"Latency", "base", "canary", "Δ", "In flight"} {
		if !strings.Contains(s, want) {
			t.Errorf("the session's screen lacks %q", want)
		}
	}
	keys("K")
	waitText(t, "the canary at concurrency 16", out, regexp.MustCompile(`canary +\d+ of 16`))
	waitText(t, "the baseline at concurrency 16", out, regexp.MustCompile(`base +\d+ of 16`))
	srv.interrupt(t, client, sess, out)
	for _, want := range []string{"Comparison · baseline", "canary " + canary.URL, "statistic", "verdict"} {
		if !strings.Contains(srv.stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, srv.stdout.String())
		}
	}
}

// TestSSHSplit runs `infertop ssh --split-by` against one URL alternating
// two backends (rollingServer, the new one three times as slow): a session sees
// the groups' panel, a row for each, and at SIGINT the groups' tables are
// printed on stdout.
func TestSSHSplit(t *testing.T) {
	t.Parallel()
	backends := rollingServer(t, 3)
	srv := startSSH(t, regexp.MustCompile(`serving \S+, its answers split by header:X-Backend on (127\.0\.0\.1:\d+)`),
		"--url", backends.URL+"/v1", "--api", "openai-chat", "--model", "m", "-c", "8", "--prompt-tokens", "8", "--output-tokens", "4",
		"--split-by", "header:X-Backend", "--compare-min-seconds", "3")
	client, sess, _, out := sshTerminal(t, srv.addr, srv.signer, 100, 30)
	waitText(t, "the groups' panel", out, regexp.MustCompile(`Groups · by header X-Backend`))
	waitText(t, "the baseline group's row", out, regexp.MustCompile(`(?m)^ 1 old \(base`))
	waitText(t, "the new group's row", out, regexp.MustCompile(`(?m)^ 2 new +\d+ `))
	srv.interrupt(t, client, sess, out)
	for _, want := range []string{"Split by header:X-Backend", "baseline: group 1 (old)", "Comparison · group 1 (old) · group 2 (new)"} {
		if !strings.Contains(srv.stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, srv.stdout.String())
		}
	}
}

// TestSSHAgents runs `infertop ssh --agents` over two agents (in this
// process, on 127.0.0.1, plain HTTP) sharing one load on a sim: a
// controller's session and a watcher's each see the agents' panel, both
// agents done with their shares of the 40 requests, and the merged
// figures; a controller's K doubles the whole load's concurrency (the
// agents take their shares), a watcher's is locked; at SIGINT the server
// stops, exit 0.
func TestSSHAgents(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	sm := simtest.Start(t, p)
	dir := t.TempDir()
	tokenFile, _ := tokenIn(t, dir)
	startAt := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	logs := make([]*lockedBuffer, 2)
	for i := range logs {
		logs[i] = &lockedBuffer{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			run([]string{"agent", "--index", fmt.Sprint(i), "--of", "2", "--start-at", startAt, "--listen", "127.0.0.1:0", "--plain-http-loopback",
				"--token-file", tokenFile, "--linger", "20s", "--url", sm.URL, "--server-metrics", "off", "-c", "4", "--requests", "40",
				"--duration", "30s", "--prompt-tokens", "16", "--output-tokens", "8"}, &out, logs[i])
		}()
	}
	// Each agent ends once a follower has its final result, within its
	// --linger at the latest.
	t.Cleanup(wg.Wait)
	serving := regexp.MustCompile(`serving on (127\.0\.0\.1:\d+)`)
	var addrs []string
	for i, l := range logs {
		addrs = append(addrs, serving.FindStringSubmatch(waitText(t, fmt.Sprintf("agent %d serving", i), l, serving))[1])
	}
	srv := startSSH(t, regexp.MustCompile(`serving agents \S+ on (127\.0\.0\.1:\d+)`), "--agents", strings.Join(addrs, ","),
		"--agents-token-file", tokenFile, "--agents-plain-loopback", "--agents-poll", "50ms", "--agents-result-every", "100ms")
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	client, sess, keys, out := sshTerminal(t, srv.addr, srv.signer, 120, 40)
	watcherClient, _, watcherKeys, watched := sshTerminal(t, srv.addr, watcher, 120, 40)
	for _, o := range []*lockedBuffer{out, watched} {
		waitText(t, "the agents' panel", o, regexp.MustCompile(`Agents · 2 followed of 2 shares`))
		for _, a := range addrs {
			waitText(t, a+" done with its 20", o, regexp.MustCompile(`(?m)^ +[01] `+regexp.QuoteMeta(a)+` +done +20 +20 `))
		}
	}
	watcherKeys("K")
	waitText(t, "the watcher's knobs locked", watched, regexp.MustCompile(`knobs are locked`))
	keys("K")
	waitText(t, "the whole at concurrency 8", out, regexp.MustCompile(`concurrency 8 `))
	watcherClient.Close() // the server would wait for it
	srv.interrupt(t, client, sess, out)
}
