package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// TestWatchSSH: `infertop watch --headless --ssh` serves the fleet's
// dashboard to an SSH client (the embedded fleet: its groups, servers
// and verdict, on the client's own screen) while its progress lines go
// on; at SIGINT the session reads that the server stopped and the watch
// ends with its summary, exit 0 or 1 (the verdict's), never 2.
func TestWatchSSH(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServing(t, regexp.MustCompile(`serving the dashboard over SSH on (127\.0\.0\.1:\d+)`), func(gossh.Signer) []string {
		return []string{"watch", "--headless", "--every", "250ms", "--ssh", "127.0.0.1:0", "--allow-any-key",
			"--host-key", filepath.Join(dir, "host_ed25519")}
	})
	client, sess, keys, out := sshTerminal(t, srv.addr, srv.signer, 140, 40)
	waitText(t, "the fleet's dashboard", out, regexp.MustCompile(`(?s)GROUP.*stable\s+baseline\s+3/3.*canary\s+canary\s+1/1.*verdict: .*stable-0`))
	keys("K") // a load's key: the watch has no knobs, and nothing changes
	if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { defer close(ended); sess.Wait() }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatalf("the session still open 10 s after SIGINT\n%s", srv.stderr.String())
	}
	client.Close()
	if !strings.Contains(out.String(), "the server stopped") {
		t.Errorf("the session never read that the server stopped")
	}
	select {
	case <-srv.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("infertop watch still running 10 s after SIGINT\n%s", srv.stderr.String())
	}
	var exit *exec.ExitError
	if srv.waitErr != nil && (!errors.As(srv.waitErr, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("infertop watch: %v\n%s", srv.waitErr, srv.stderr.String())
	}
	if !strings.Contains(srv.stdout.String(), "verdict: ") || !strings.Contains(srv.stderr.String(), "connected") {
		t.Errorf("no summary on stdout, or no connection line on stderr:\n%s\n%s", srv.stdout.String(), srv.stderr.String())
	}
}
