package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestBadInputInOneLine: a command line the run cannot take is told in
// one line of the command line's words, exit 2. On main: `run --window
// 7s` and `--burstiness` without gamma arrivals were taken and ignored,
// `--duration 10` printed Go's "time: missing unit in duration", a URL
// without its scheme got no hint, and --report-dir was first tried at the
// first s (runner.TestCheckDir holds the check itself; ssh checks it the
// same way).
func TestBadInputInOneLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--window", "7s"}, "--window: 7s is not one of 10s, 30s, 1m, 5m"},
		{[]string{"run", "--window", "1m", "--slo-window", "30s"}, "--window and --slo-window are one window"},
		{[]string{"run", "--rate", "5", "--burstiness", "0.5"}, "--burstiness shapes gamma arrivals only: add --arrivals gamma"},
		{[]string{"run", "--duration", "10"}, `--duration: "10" needs a unit; want e.g. 10s, 500ms or 2m`},
		{[]string{"run", "--timeout", "10x"}, `--timeout: "10x" has an unknown unit "x"`},
		{[]string{"run", "--url", "127.0.0.1:8000"}, "(did you mean http://127.0.0.1:8000?)"},
		{[]string{"run", "--metrics-linger", "-1s"}, "--metrics-linger must not be negative"},
		{[]string{"--report-dir", "/nonexistent-infertop"}, "--report-dir: /nonexistent-infertop: no such file or directory"},
	} {
		// Bounded, should a line be taken after all: a run of two requests.
		args := c.args
		if args[0] == "run" && !slices.Contains(args, "--duration") {
			args = append(args, "--requests", "2", "--prompt-tokens", "8", "--output-tokens", "2")
		}
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and %q in one line", c.args, code, errb.String(), c.want)
		}
	}
}

// TestDrainZero: --drain 0 is no drain, as --no-drain (on main it was
// refused: "0s is no time to finish").
func TestDrainZero(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run([]string{"run", "--drain", "0", "--requests", "4", "-c", "2", "--prompt-tokens", "8", "--output-tokens", "2"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "sent 4 = ") {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
}
