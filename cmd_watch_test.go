package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/watch"
)

// TestWatchEmbedded: with no target, a headless watch follows the
// embedded fleet (four sims, two groups, traffic of their own) and
// writes the last snapshot: both groups, every server up and counted,
// read with the writer's own type.
func TestWatchEmbedded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "watch.json")
	var out, errb bytes.Buffer
	page := filepath.Join(t.TempDir(), "watch.html")
	code := run([]string{"watch", "--headless", "--duration", "3s", "--every", "250ms", "--demo-slowdown", "1", "--json", path, "--html", page}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s, _ := readWatchJSON(t, path)
	if len(s.Groups) != 2 || s.Groups[0].Role != "baseline" || s.Groups[1].Role != "canary" || len(s.Servers) != 4 {
		t.Fatalf("groups %+v, %d servers", s.Groups, len(s.Servers))
	}
	for _, sv := range s.Servers {
		if sv.State != watch.StateUp || sv.Engine != "vllm" {
			t.Errorf("server %+v: want up, vllm", sv)
		}
	}
	if s.Groups[0].ReqPerSec <= 0 || s.Verdict.State == watch.Regressed || s.Verdict.State == watch.Unusable {
		t.Errorf("baseline %.1f req/s, verdict %s", s.Groups[0].ReqPerSec, s.Verdict.Line)
	}
	if !strings.Contains(out.String(), "verdict: ") || !strings.Contains(out.String(), "stable-0") {
		t.Errorf("summary:\n%s", out.String())
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "<polyline", "stable-0", "Howard &amp; Ramdas 2022"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML page lacks %q", want)
		}
	}
}

// TestWatchExitCodes: an objective breached ends a --fail-fast watch
// with 1 and the breach named; a fleet of one group (here one server
// not answering) has no verdict: 2; bad flags are one line and 2.
func TestWatchExitCodes(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run([]string{"watch", "--headless", "--duration", "60s", "--every", "250ms", "--fail-fast", "--slo", "ttft_p50<1us"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "ttft_p50<1us") {
		t.Fatalf("breached objective: exit %d, stderr %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"watch", "--headless", "--duration", "600ms", "--every", "200ms", "--target", "a=127.0.0.1:1"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no verdict") {
		t.Fatalf("one group: exit %d, stderr %s", code, errb.String())
	}
	errb.Reset()
	// The targets as arguments, as the usage line gives them, before
	// the flags or after.
	if code := run([]string{"watch", "a=127.0.0.1:1", "--headless", "--duration", "600ms", "--every", "200ms"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no verdict") {
		t.Fatalf("a target as an argument: exit %d, stderr %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "down") {
		t.Errorf("the server not answering is not shown down:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"watch", "--every", "1ms"},
		{"watch", "--target", "a=nothing"},
		{"watch", "--regression", "ttfb_p99<+10%", "--headless"},
		{"watch", "--regression", "invalid_rate<+1pp", "--headless"}, // a server's metrics judge no answers
		{"watch", "--target", "a=http://user:hunter2@127.0.0.1:1/metrics", "--headless", "--duration", "300ms", "--every", "100ms"},
	} {
		errb.Reset()
		out.Reset()
		code := run(args, &out, &errb)
		if code != 2 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if strings.Contains(errb.String()+out.String(), "hunter2") {
			t.Errorf("%v: the URL's password reached the output: %s", args, errb.String()+out.String())
		}
	}
}

// TestWatchProbe: --probe-url sends a trickle of real requests through
// an endpoint beside the watched fleet's metrics: the summary and the
// JSON carry the client's figures, its requests counted once (the
// probe's sent holds every request the sim answered), the URL's password
// nowhere; a probe rate past a trickle, or a URL of no HTTP, is one line
// and exit 2.
func TestWatchProbe(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	u := strings.Replace(srv.URL, "http://", "http://probe:hunter2@", 1)
	path := filepath.Join(t.TempDir(), "watch.json")
	var out, errb bytes.Buffer
	code := run([]string{"watch", "--headless", "--duration", "3s", "--every", "250ms", "--demo-slowdown", "1",
		"--probe-url", u, "--probe-rate", "10", "--json", path}, &out, &errb)
	if code == 2 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s, b := readWatchJSON(t, path)
	srv.Close() // every request answered or cut before its records are read
	answered := int64(0)
	for _, r := range srv.Sim.Records() {
		if r.Status == 200 && !r.Cancelled {
			answered++
		}
	}
	pr := s.Probe
	if pr == nil || pr.WindowCompleted == 0 || pr.TTFTP50 <= 0 || pr.TTFTP99 < pr.TTFTP50 || pr.Rate != 10 {
		t.Fatalf("probe %+v", pr)
	}
	// Every request once: the probe stopped before the last word, its
	// cut requests incomplete; the sim answered every completed one (and
	// may have finished one the stop cut on its way back).
	if pr.Sent != pr.Completed+pr.Failed+pr.Incomplete || answered < pr.Completed || answered > pr.Completed+pr.Incomplete || pr.Failed != 0 || pr.WindowCompleted > pr.Completed {
		t.Errorf("probe sent %d = %d completed + %d failed + %d incomplete (window %d); the sim answered %d", pr.Sent, pr.Completed, pr.Failed, pr.Incomplete, pr.WindowCompleted, answered)
	}
	if !strings.Contains(out.String(), "probe (client side, ") {
		t.Errorf("no probe line in the summary:\n%s", out.String())
	}
	if all := string(b) + out.String() + errb.String(); strings.Contains(all, "hunter2") {
		t.Errorf("the probe URL's password reached the output:\n%s", all)
	}
	// A Service down: the probe starts (its API and model given), counts
	// its failures and says why; the watch goes on.
	down := filepath.Join(t.TempDir(), "down.json")
	out.Reset()
	errb.Reset()
	if code := run([]string{"watch", "--headless", "--duration", "2s", "--every", "250ms", "--demo-slowdown", "1",
		"--probe-url", "http://127.0.0.1:1/v1", "--probe-api", "openai-chat", "--probe-model", "m", "--probe-rate", "10", "--json", down}, &out, &errb); code == 2 {
		t.Fatalf("a probe of a Service down: exit %d: %s", code, errb.String())
	}
	if s, _ := readWatchJSON(t, down); s.Probe == nil || s.Probe.Failed == 0 || s.Probe.Completed != 0 || !strings.Contains(s.Probe.LastError, "refused") ||
		!strings.Contains(out.String(), "last failure: ") {
		t.Errorf("a probe of a Service down: %+v\n%s", s.Probe, out.String())
	}
	for _, args := range [][]string{
		{"watch", "--headless", "--probe-url", srv.URL, "--probe-rate", "100"},
		{"watch", "--headless", "--probe-url", srv.URL, "--probe-model", "nosuch"},
		{"watch", "--headless", "--probe-url", "ftp://probe:hunter2@127.0.0.1/v1"},
		{"watch", "--headless", "--probe-rate", "1"},                         // no --probe-url
		{"watch", "--headless", "--authorized-keys", "/nonexistent/hunter2"}, // no --ssh
	} {
		errb.Reset()
		if code := run(args, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 || strings.Contains(errb.String(), "hunter2") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

// readWatchJSON reads a watch's --json with the writer's own type, and
// returns its bytes too.
func readWatchJSON(t *testing.T, path string) (watch.Snapshot, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s watch.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s, b
}
