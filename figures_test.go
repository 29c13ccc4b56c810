package main

import (
	"bytes"
	"math"
	"testing"

	"github.com/infertop/infertop/report"
)

// TestRunFigures holds a headless run's headline figures to the spans
// they describe (issue 24): the throughput over the measured time alone,
// the warm-up out of it, and the open loop's sent rate over the time
// requests were being sent, the drain out of it. The edges are exact
// whatever the machine: the warm-up of 1 s ends at 1 s, the run stops
// sending at its duration (no request starts after it), so the sending
// time (sent over the sent rate) is 2 s; the measured phase lasts to its
// last completion (64 tokens of the sim's 6 ms steps after the last send,
// at least 0.4 s). The rate itself moves with the machine: a dispatcher
// starved in the measured phase schedules fewer arrivals than 2 s owe
// (those not sent by the duration are never sent), and its pace is not
// judged.
func TestRunFigures(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/r.json"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--rate", "20", "--warmup", "1s", "--duration", "3s", "--prompt-tokens", "16", "--output-tokens", "64",
		"--json", path}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	doc, err := report.ReadResult(path, report.MaxResultBytes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := report.DecodeFile("r", doc)
	if err != nil {
		t.Fatal(err)
	}
	// The top level's vLLM keys are the run's figures (report.WriteJSON).
	res, run := f.Infertop, f.Infertop.Run
	if len(res.Phases) != 2 || !res.Phases[0].Warmup {
		t.Fatalf("phases %+v", res.Phases)
	}
	m := res.Phases[1]
	if run.DurationS != m.DurationS || run.Completed == 0 || run.RequestThroughput != float64(run.Completed)/run.DurationS {
		t.Errorf("%v completed at %.2f req/s over %.3f s; the measured phase lasted %.3f s from %.3f s", run.Completed, run.RequestThroughput, run.DurationS, m.DurationS, m.StartS)
	}
	if res.SentRate == nil {
		t.Fatalf("no sent rate\n%s", out.String())
	}
	r, sent, scheduled := *res.SentRate, float64(run.Sent), res.ArrivalsScheduled
	if r <= 0 {
		t.Fatalf("sent rate %v\n%s", r, out.String())
	}
	// The drain out: the sending time ends at the stop, the phase at its
	// last completion, at least 0.4 s after its last send.
	sending := sent / r
	if math.Abs(m.StartS-1) > 1e-6 || math.Abs(sending-2) > 1e-3 || sending > m.DurationS-0.1 {
		t.Errorf("sent %v at %.1f req/s: %.3f s of sending, in a measured phase of %.3f s from %.3f s: want 2 s from 1 s, the drain out\n%s",
			sent, r, sending, m.DurationS, m.StartS, out.String())
	}
	t.Logf("sent %v at %.1f req/s (%.3f s of sending; %v scheduled), the measured phase %.3f s from %.3f s", sent, r, sending, scheduled, m.DurationS, m.StartS)
	if scheduled < 36 {
		t.Logf("the dispatcher was starved (%v arrivals of 40 scheduled): the pace is not judged", scheduled)
		return
	}
	if r < 15 || r > 25 {
		t.Errorf("sent %v at %.1f req/s over %.3f s at a rate of 20 for 2 s\n%s", sent, r, sending, out.String())
	}
}
