package main

import (
	"regexp"
	"testing"
)

// TestMaskAgents: the agents' lines are masked by the rule of the
// README: in a run the clock ends, the agents' table's counts and a
// comparison's requests column; in every run, a search's progress
// down to its step, load and state, its settling state dropped; the
// addresses by name, any other port of 127.0.0.1 as PORT, the version
// as a word of its own.
func TestMaskAgents(t *testing.T) {
	for _, c := range []struct {
		in, want string
		timed    bool
	}{
		{"  0      127.0.0.1:AGENT0  done   62    61         1       0           38.00ms   +0.1ms",
			"  0 127.0.0.1:AGENT0 done <n> <n> <n> 0 <dur> <delta>", true},
		{"  0      127.0.0.1:AGENT0  done   20    20         0       0           38.00ms   +0.1ms",
			"  0 127.0.0.1:AGENT0 done 20 20 0 0 <dur> <delta>", false},
		{"  TTFT p50    12.1ms    25.0ms  +107%  +98%…+115%  188/81  worse",
			"  TTFT p50 <dur> <dur> <delta> <delta>…<delta> <n>/<n> worse", true},
		{"  error rate  0.00%     0.00%   +0.00pp  +0.00pp…+0.00pp  184/0  no difference",
			"  error rate 0.00% 0.00% <delta> <delta>…<delta> <n>/0 no difference", true},
		{"  TTFT p50    12.1ms    25.0ms  +107%  +98%…+115%  240/240  worse",
			"  TTFT p50 <dur> <dur> <delta> <delta>…<delta> 240/240 worse", false},
	} {
		if got := normText(c.in, c.timed, false); got != c.want {
			t.Errorf("normText(%q, timed %v):\n got %q\nwant %q", c.in, c.timed, got, c.want)
		}
	}

	progress := "infertop: step 1 · concurrency 2 · warming up 0s more\n" +
		"infertop: step 1 · concurrency 2 · warming up\n" +
		"infertop: step 1 · concurrency 2 · holding 1s more (5 of 10 requests; at most 3s)\n" +
		"infertop: step 1 · concurrency 2 · settling\n" +
		"infertop: step 1 · concurrency 2 · held\n" +
		"infertop: step 2 · concurrency 4 · holding 1s more (0 of 10 requests; at most 3s) · held at 2, broke at —\n"
	want := "infertop: step 1 · concurrency 2 · warming up\n" +
		"infertop: step 1 · concurrency 2 · holding <dur> more (<n> of <n> requests; at most <dur>)\n" +
		"infertop: step 1 · concurrency 2 · held\n" +
		"infertop: step 2 · concurrency 4 · holding <dur> more (<n> of <n> requests; at most <dur>) · held at 2, broke at —\n"
	if got := normText(progress, true, true); got != want {
		t.Errorf("progress:\n got %q\nwant %q", got, want)
	}

	m := masker{repl: []string{"2026-12-03T09:23:20.5Z", "<start-at>"},
		version: regexp.MustCompile(`(^|[^\w/.-])` + regexp.QuoteMeta("dev") + `($|[^\w.-])`),
		addrs:   map[string]string{"127.0.0.1:41234": "127.0.0.1:AGENT0", "127.0.0.1:41235": "127.0.0.1:SIM1"}}
	in := `infertop dev · http://127.0.0.1:41235/v1 · control 1 from 127.0.0.1:55120 · 127.0.0.1:412345 · start 2026-12-03T09:23:20.5Z · /dev/null, "dev", devices`
	want = `infertop <version> · http://127.0.0.1:SIM1/v1 · control 1 from 127.0.0.1:PORT · 127.0.0.1:PORT · start <start-at> · /dev/null, "<version>", devices`
	if got := m.replace(in); got != want {
		t.Errorf("replace:\n got %q\nwant %q", got, want)
	}
}
