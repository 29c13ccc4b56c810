package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infertop/infertop/report"
)

// TestRunMix: a 70/20/10 mix of the embedded sim's model and two adapters
// (one of them three times slower), split by the model each request asked
// for: each model's share exact over whole blocks, each model a group of
// the split with its TTFT p99 in the table and the result JSON, the slow
// adapter's TTFT the longest.
func TestRunMix(t *testing.T) {
	t.Parallel()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	var out, errb bytes.Buffer
	code := run([]string{"run", "--sim-preset", "fast", "--sim-step-base", "2ms", "--sim-adapters", "slow-lora:3",
		"--model", "sim-llama-8b:70,sql-lora:20,slow-lora:10", "--split-by", "model", "--baseline-group", "sim-llama-8b",
		"--requests", "300", "-c", "8", "--prompt-tokens", "8", "--output-tokens", "4", "--json", jsonPath}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, w := range []string{"Split by model", "group 1 (sim-llama-8b)", "group 2 (", "group 3 (", "TTFT p99"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("no %q in\n%s", w, out.String())
		}
	}
	j := readSplitJSON(t, jsonPath)
	if j.SplitBy != "model" || j.BaselineGroup.Group != "sim-llama-8b" || j.BaselineGroup.Requests != 210 || len(j.Groups) != 2 {
		t.Fatalf("infertop.compare: %+v", j)
	}
	for _, g := range j.Groups {
		want := map[string]int{"sql-lora": 60, "slow-lora": 30}[g.Group]
		if g.Requests != want {
			t.Errorf("%s: %d requests, want %d", g.Group, g.Requests, want)
		}
	}
}

// TestRunInvalidGate: the sim breaking 2 % of its tool calls breaches
// invalid_rate<1% (exit 1), the summary and the result JSON say how many
// answers were invalid; the objective without anything judged is refused.
func TestRunInvalidGate(t *testing.T) {
	t.Parallel()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	var out, errb bytes.Buffer
	code := run([]string{"run", "--sim-preset", "fast", "--sim-invalid", "0.02", "--tools", "builtin", "--slo", "invalid_rate<1%",
		"--requests", "1000", "-c", "16", "--prompt-tokens", "8", "--output-tokens", "8", "--json", jsonPath}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out.String(), errb.String())
	}
	for _, w := range []string{"invalid_rate<1% BREACHED in run", "answers judged: "} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("no %q in\n%s", w, out.String())
		}
	}
	if o := readInfertop(t, jsonPath).Run.Output; o == nil || o.Valid+o.Invalid != 1000 || o.Invalid == 0 || o.InvalidRate < 0.01 {
		t.Errorf("infertop.run.output: %+v", o)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"run", "--slo", "invalid_rate<1%", "--requests", "10"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "pass --response-format or --tools") {
		t.Errorf("nothing judged: exit %d\n%s", code, errb.String())
	}
}

// readInfertop holds the run's result at path to the schema and reads
// its infertop part with report's types.
func readInfertop(t *testing.T, path string) report.InfertopJSON {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, raw)
	var j struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	return j.Infertop
}

// TestRunImages: two 56×56 images a request reach the sim as image parts
// (8 prompt tokens more a request, 2×2 patches each), and the manifest
// says what each request carried.
func TestRunImages(t *testing.T) {
	t.Parallel()
	runWith := func(images ...string) report.InfertopJSON {
		t.Helper()
		jsonPath := filepath.Join(t.TempDir(), "run.json")
		var out, errb bytes.Buffer
		args := append([]string{"run", "--sim-preset", "fast", "--requests", "20", "-c", "2", "--prompt-tokens", "8", "--output-tokens", "2",
			"--no-calibrate", "--json", jsonPath}, images...)
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
		}
		return readInfertop(t, jsonPath)
	}
	plain, j := runWith(), runWith("--images", "2", "--image-size", "56x56")
	if im := j.Manifest.Images; im == nil || im.PerRequest != 2 || im.Width != 56 || im.Bytes <= 0 {
		t.Fatalf("manifest images %+v", im)
	}
	// The same prompts (the same seed) and two images of 2×2 patches each.
	if r := j.Run; r.Completed != 20 || r.InputTokens != plain.Run.InputTokens+20*8 {
		t.Errorf("%d completed, %d input tokens, %d without the images", r.Completed, r.InputTokens, plain.Run.InputTokens)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--images", "1", "--image-size", "9x", "--requests", "1"}, &out, &errb); code != 2 {
		t.Errorf("a bad size: exit %d", code)
	}
}
