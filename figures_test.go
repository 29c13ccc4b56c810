package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"testing"
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
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Duration   float64 `json:"duration"`
		Completed  float64 `json:"completed"`
		Throughput float64 `json:"request_throughput"`
		Sent       float64 `json:"sent"`
		Infertop   struct {
			SentRate  float64 `json:"sent_rate"`
			Scheduled float64 `json:"arrivals_scheduled"`
			Phases    []struct {
				Warmup    bool    `json:"warmup"`
				StartS    float64 `json:"start_s"`
				DurationS float64 `json:"duration_s"`
			} `json:"phases"`
		} `json:"infertop"`
	}
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Infertop.Phases) != 2 || !res.Infertop.Phases[0].Warmup {
		t.Fatalf("phases %+v", res.Infertop.Phases)
	}
	m := res.Infertop.Phases[1]
	if res.Duration != m.DurationS || res.Completed == 0 || res.Throughput != res.Completed/res.Duration {
		t.Errorf("%v completed at %.2f req/s over %.3f s; the measured phase lasted %.3f s from %.3f s", res.Completed, res.Throughput, res.Duration, m.DurationS, m.StartS)
	}
	r := res.Infertop.SentRate
	if r <= 0 {
		t.Fatalf("sent rate %v\n%s", r, out.String())
	}
	// The drain out: the sending time ends at the stop, the phase at its
	// last completion, at least 0.4 s after its last send.
	sending := res.Sent / r
	if math.Abs(m.StartS-1) > 1e-6 || math.Abs(sending-2) > 1e-3 || sending > m.DurationS-0.1 {
		t.Errorf("sent %v at %.1f req/s: %.3f s of sending, in a measured phase of %.3f s from %.3f s: want 2 s from 1 s, the drain out\n%s",
			res.Sent, r, sending, m.DurationS, m.StartS, out.String())
	}
	t.Logf("sent %v at %.1f req/s (%.3f s of sending; %v scheduled), the measured phase %.3f s from %.3f s", res.Sent, r, sending, res.Infertop.Scheduled, m.DurationS, m.StartS)
	if res.Infertop.Scheduled < 36 {
		t.Logf("the dispatcher was starved (%v arrivals of 40 scheduled): the pace is not judged", res.Infertop.Scheduled)
		return
	}
	if r < 15 || r > 25 {
		t.Errorf("sent %v at %.1f req/s over %.3f s at a rate of 20 for 2 s\n%s", res.Sent, r, sending, out.String())
	}
}
