package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// savedRun is run --json of the embedded sim: 200 requests of 8 output
// tokens at concurrency 16, its decode steps 60 ms (long beside a busy
// machine's scheduling delays, which add to both sides alike), and
// extra, the run's own flags. About 7 s a run.
func savedRun(t *testing.T, path string, extra ...string) {
	t.Helper()
	args := append([]string{"run", "--requests", "200", "--duration", "90s", "-c", "16", "--prompt-tokens", "16", "--output-tokens", "8",
		"--sim-step-base", "60ms", "--sim-jitter", "0.05", "--json", path}, extra...)
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Errorf("%q: exit %d: %s", args, code, errb.String())
	}
}

// compareCmd runs infertop compare and returns its exit code, stdout
// and stderr.
func compareCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"compare"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestCompareSavedRuns: saved runs of the embedded sim judged by
// infertop compare: a canary 20 % slower (--sim-canary 1:1.2, every
// request) breaches tpot_p50<+10%, exit 1 with the breach named; a run
// of the same load with other draws holds it, exit 0; a capacity
// search's result is refused by name, exit 2. Serial, its three runs
// at once: their latencies are compared, and a parallel test's load
// would weigh on one more than another.
func TestCompareSavedRuns(t *testing.T) {
	dir := t.TempDir()
	base, same, slow, search := filepath.Join(dir, "base.json"), filepath.Join(dir, "same.json"), filepath.Join(dir, "slow.json"),
		filepath.Join(dir, "search.json")
	var wg sync.WaitGroup
	for _, r := range []struct {
		path  string
		extra []string
	}{{base, nil}, {same, []string{"--sim-seed", "2", "--seed", "2"}}, {slow, []string{"--sim-canary", "1:1.2"}}} {
		wg.Go(func() { savedRun(t, r.path, r.extra...) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	gate := []string{"--regression", "tpot_p50<+10%", "--slo", "error_rate<1%"}

	code, out, errb := compareCmd(append([]string{base, slow}, gate...)...)
	t.Logf("base against slow:\n%s%s", out, errb)
	switch {
	case code == 1 || !raceDetector:
		if code != 1 {
			t.Errorf("a 20%% slower canary: exit %d, want 1", code)
		}
		if want := "infertop: compare: slow regressed against base: regression tpot_p50<+10%: breached: worse beyond the margin: +"; !strings.HasPrefix(errb, want) || strings.Count(errb, "\n") != 1 {
			t.Errorf("stderr %q, want one line starting %q", errb, want)
		}
	case code != 0:
		t.Errorf("a 20%% slower canary: exit %d, want 1 (or 0 under the race detector)", code)
	default:
		// At a load average of 25 on two cores the detector's cost made
		// the canary's +20 % a +2 % to +13 % (TPOT p50, at steps of 10
		// to 500 ms): make test-compare holds the exit code without it.
		t.Log("under the race detector the canary's breach is not held (make test-compare holds it)")
	}
	for _, want := range []string{"Comparison · base base (sim-llama-8b openai-chat", "TPOT p50", "error_rate<1% held in run"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}

	md := filepath.Join(dir, "comment.md")
	code, out, errb = compareCmd(append([]string{base, same, "--markdown", md}, gate...)...)
	t.Logf("base against same:\n%s%s", out, errb)
	if code != 0 || errb != "" {
		t.Errorf("the same load: exit %d, stderr %q; want 0 and none", code, errb)
	}
	if !strings.Contains(out, "tpot_p50<+10%: held") || !strings.HasSuffix(out, "every gate held\n") {
		t.Errorf("table of the same load:\n%s", out)
	}
	if b, err := os.ReadFile(md); err != nil || !strings.HasPrefix(string(b), "### ✅ infertop compare: every gate held") {
		t.Errorf("markdown: %v\n%s", err, b)
	}
	// No gate: nothing held, so no tick (the table may say worse).
	if code, out, _ := compareCmd(base, slow, "--markdown", "-"); code != 0 || !strings.HasPrefix(out, "### ℹ️ infertop compare: no gate given") {
		t.Errorf("no gate: exit %d\n%s", code, out)
	}

	args := append([]string{"run", "--find-max", "ttft_p99<=150ms", "--from", "4", "--to", "8", "--resolution", "50%", "--json", search}, fastSearch...)
	var sOut, sErr bytes.Buffer
	if code := run(args, &sOut, &sErr); code != 0 && code != 1 {
		t.Fatalf("the search: exit %d: %s", code, sErr.String())
	}
	code, _, errb = compareCmd(base, search)
	if want := "infertop: compare: base and search cannot be compared: search is a capacity search's result"; code != 2 || !strings.HasPrefix(errb, want) || strings.Count(errb, "\n") != 1 {
		t.Errorf("a search's result: exit %d, stderr %q; want 2 and one line starting %q", code, errb, want)
	}
}

// TestCompareSavedUsage: what infertop compare refuses before judging,
// each with one line and exit 2, no escape of a file's reaching the
// terminal.
func TestCompareSavedUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	evil := filepath.Join(dir, "evil\x1b]0;owned\x07.json")
	if err := os.WriteFile(evil, []byte(`{"infertop":{"manifest":{"tool":"\u001b[2J"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"a.json"}, "compare: give two JSON results, BASE and NEW, not 1"},
		{[]string{"a.json", "b.json", "--regression", "ttft_p99<10ms"}, "--regression: bad regression"},
		{[]string{"a.json", "b.json", "--slo", "ttft_p99<10"}, "--slo: bad SLO"},
		{[]string{"a.json", "b.json", "--slo", "energy_per_token<1J"}, "a saved result's energy is not judged"},
		{[]string{filepath.Join(dir, "none.json"), evil}, "no such file"},
		{[]string{evil, evil}, `compare: evil\x1b]0;owned\a: not an infertop result`},
		{[]string{evil, "b.json", "--markdown", evil}, "--markdown: " + dir + `/evil\x1b]0;owned\a.json is one of the results`},
		{[]string{"a.json", "b.json", "--markdown", filepath.Join(dir, "none", "c.md")}, "--markdown: open " + dir + "/none/c.md: no such file"},
		{[]string{evil, evil, "--markdown", filepath.Join(dir, "c.md")}, "not an infertop result"},
	} {
		code, out, errb := compareCmd(tc.args...)
		if code != 2 || !strings.Contains(errb, tc.want) || strings.Count(errb, "\n") != 1 || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line with %q", tc.args, code, out, errb, tc.want)
		}
		if strings.ContainsAny(errb, "\x1b\x07") {
			t.Errorf("%q: stderr holds a raw escape: %q", tc.args, errb)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c.md")); err == nil {
		t.Error("a comparison refused left its --markdown file behind")
	}
	if b, err := os.ReadFile(evil); err != nil || !strings.Contains(string(b), "infertop") {
		t.Errorf("--markdown onto a result overwrote it: %q, %v", b, err)
	}
}
