package main

import (
	"bytes"
	"strings"
	"testing"
)

// A trace replays headless against the embedded sim, and the summary
// says how the replay went; bad trace flags are usage errors.
func TestRunTrace(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run([]string{"run", "--trace", "load/testdata/trace/mooncake.jsonl", "--trace-speed", "2", "--sim-preset", "fast"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	for _, want := range []string{"requests 5 ok, 0 failed", "trace mooncake.jsonl (mooncake), 2× speed: 5 arrivals of 5", "the trace ended"} {
		if !strings.Contains(out.String()+errb.String(), want) {
			t.Errorf("summary lacks %q:\n%s%s", want, out.String(), errb.String())
		}
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--trace", "load/testdata/trace/bad-plain.jsonl"}, `--trace: load/testdata/trace/bad-plain.jsonl: line 2: want one of "prompt" and "prompt_tokens"` + "\n"},
		{[]string{"--trace", "load/testdata/trace/plain.jsonl", "-c", "3"}, "--trace sets the arrivals and the lengths: it does not go with --concurrency\n"},
		{[]string{"--trace", "load/testdata/trace/plain.jsonl", "--trace-speed", "0"}, "--trace-speed: 0 is not within 0.01..1000\n"},
		{[]string{"--trace", "load/testdata/trace/plain.jsonl", "--trace-window", "5"}, "--trace-window: bad trace window"},
		{[]string{"--trace-window", "1m-2m"}, "--trace-window needs --trace\n"},
		{[]string{"--trace", "load/testdata/trace/azure.csv", "--trace-format", "csv"}, `unknown trace format "csv"`},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"run"}, c.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.err) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", c.args, code, errb.String(), c.err)
		}
	}
}
