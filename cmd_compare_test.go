package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestRunCompare: the exit codes of a comparison: 2 for usage errors, 1
// when the canary (twice as slow) regressed with confidence, and the text
// holds both sides and the comparison table.
func TestRunCompare(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{
		{"run", "--regression", "ttft_p99<+10%"},
		{"run", "--compare", "http://127.0.0.1:1/v1", "--regression", "ttft_p99<10ms"},
		{"run", "--compare", "http://127.0.0.1:1/v1", "--regression", "error_rate<+1%"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	p, _ := sim.Preset("fast")
	p.StepBase, p.Jitter = 2*time.Millisecond, 0.05
	slow := p
	slow.StepBase = 4 * time.Millisecond
	b, c := simtest.Start(t, p), simtest.Start(t, slow)
	out.Reset()
	errb.Reset()
	code := run([]string{"run", "--url", b.URL, "--compare", c.URL, "--duration", "12s", "-c", "4", "--prompt-tokens", "16",
		"--output-tokens", "8", "--server-metrics", "off", "--regression", "tpot_p50<+10%", "--regression", "error_rate<+0.5pp"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"== baseline ==", "== canary ==", "Comparison · baseline", "tpot_p50<+10%: breached", "canary slower"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
