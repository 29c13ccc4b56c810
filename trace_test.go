package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A trace replays headless against the embedded sim, and the summary
// says how the replay went; bad trace flags are usage errors.
func TestRunTrace(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	jsonPath, htmlPath := t.TempDir()+"/r.json", t.TempDir()+"/r.html"
	code := run([]string{"run", "--trace", "load/testdata/trace/mooncake.jsonl", "--trace-speed", "2", "--sim-preset", "fast", "--json", jsonPath, "--html", htmlPath}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	if page, _ := os.ReadFile(htmlPath); !strings.Contains(string(page), `<section id="trace"><h2>Trace replay</h2>`) || !strings.Contains(string(page), "5 arrivals of 5 entries") {
		t.Errorf("the HTML report lacks the replay:\n%s", page)
	}
	doc, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, doc)
	if tr := readResult(t, jsonPath).Infertop.Trace; tr == nil || tr.Arrivals != 5 || tr.Speed != 2 || tr.Format != "mooncake" {
		t.Errorf("the JSON's trace: %+v", tr)
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
		{[]string{"--trace", "load/testdata/trace/plain.jsonl", "--find-max", "ttft_p99<=1s"}, "--trace and --sessions do not go with --find-max"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"run"}, c.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.err) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", c.args, code, errb.String(), c.err)
		}
	}
}

// Sessions run headless: the summary's table of turns, the JSON's.
func TestRunSessions(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	jsonPath, htmlPath := t.TempDir()+"/r.json", t.TempDir()+"/r.html"
	code := run([]string{"run", "--sessions", "2", "--turns", "3", "--think", "1ms", "--requests", "12", "--prompt-tokens", "20", "--output-tokens", "4",
		"--sim-preset", "fast", "--json", jsonPath, "--html", htmlPath}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	page, _ := os.ReadFile(htmlPath)
	for _, want := range []string{"Sessions, turn by turn", "Sessions of 3 turns (think 1 ms)", "A whole session", `id="turns-ttft"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	for _, want := range []string{"Sessions of 3 turns (think 1ms)", "turn  done  failed  prompt tok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	doc, _ := os.ReadFile(jsonPath)
	validate(t, doc)
	ss := readResult(t, jsonPath).Infertop.Sessions
	if ss == nil {
		t.Fatal("the JSON has no sessions")
	}
	turns, done := ss.Turns, int64(0)
	for _, tr := range turns {
		done += tr.Completed
	}
	if len(turns) != 3 || turns[2].Turn != 3 || done != 12 {
		t.Errorf("the JSON's turns: %+v", turns)
	}
	// A ShareGPT file's conversations: as many turns as the longest has
	// human turns, unless --turns says fewer.
	for _, c := range []struct {
		args  []string
		turns int
	}{{nil, 4}, {[]string{"--turns", "2"}, 2}} {
		var out, errb bytes.Buffer
		args := append([]string{"run", "--sessions", "1", "--dataset", "load/testdata/sharegpt-sessions.json", "--requests", "8", "--output-tokens", "3", "--sim-preset", "fast"}, c.args...)
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), fmt.Sprintf("Sessions of up to %d turns", c.turns)) {
			t.Errorf("%v: exit %d, %s\n%s", c.args, code, errb.String(), out.String())
		}
	}
	// A context cap of 1500 bytes holds two turns of 100 words.
	out.Reset()
	if code := run([]string{"run", "--sessions", "1", "--session-bytes", "1500", "--prompt-tokens", "100", "--output-tokens", "3", "--requests", "5", "--sim-preset", "fast"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "0 sessions done · 2 started again at the context's cap") {
		t.Errorf("--session-bytes 1500: exit %d\n%s", code, out.String())
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--turns", "3"}, "--turns needs --sessions N"},
		{[]string{"--sessions", "2", "-c", "4"}, "--sessions sets the concurrency and the prompts: it does not go with --concurrency"},
		{[]string{"--sessions", "2", "--turns", "0"}, "--turns: 0 is not within 1..100"},
		{[]string{"--sessions", "2", "--dataset", "load/testdata/prompts.jsonl"}, "a JSONL dataset is single prompts"},
		{[]string{"--sessions", "2", "--session-bytes", "-1"}, "the context cap -1 bytes is negative"},
		{[]string{"--session-bytes", "100"}, "--session-bytes needs --sessions N"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"run"}, c.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.err) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errb.String(), c.err)
		}
	}
}
