package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestRunFigures holds a headless run's headline figures to the spans
// they describe (issue 24): the throughput over the measured time alone,
// the warm-up out of it, and the open loop's sent rate over the time
// requests were being sent, the drain out of it.
func TestRunFigures(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/r.json"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--rate", "20", "--warmup", "1s", "--duration", "2s", "--prompt-tokens", "16", "--output-tokens", "32",
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
		Infertop   struct {
			SentRate float64 `json:"sent_rate"`
			Phases   []struct {
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
	if r := res.Infertop.SentRate; r < 16 || r > 24 {
		t.Errorf("sent at %.1f req/s at a rate of 20\n%s", r, out.String())
	}
}
