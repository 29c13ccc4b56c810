package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/infertop/infertop/report"
)

// validate holds doc against the result's schema.
func validate(t *testing.T, doc []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, _ := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema()))
	if err := c.AddResource("s.json", sch); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("result does not match the schema: %v", err)
	}
}

// fastSearch are the flags of a search of a few seconds against the
// small sim: short outputs, short holds.
var fastSearch = []string{"--sim-preset", "small", "--prompt-tokens", "64", "--output-tokens", "8", "--drain", "5s",
	"--step-warmup", "200ms", "--step-min-requests", "10", "--step-min-time", "700ms", "--step-max-time", "5s"}

// TestRunFindMax: a search's summary (the curve, the knee marked), its
// JSON (to the schema, infertop.capacity), its CSV (a row per step) and
// its exit code when found, 0 (TestRunFindMaxNoneHeld has 1, not even
// the lowest held; TestRunFindMaxUsage 2, usage). Its resolution is
// coarse (50 %): the small sim's knee lies between 8 and 16 (its 8
// slots), so the search doubles 4, 8, 16 and bisects once (12), where
// the default 5 % walks two steps more to 9 and 10. Serial: its
// objective is a latency, which a parallel test's load would move. Its
// sim's steps are five times the small preset's (50 ms), its objective
// a p90 of 400 ms: idle, TTFT p99 is about 210 ms at 8 and 940 ms at
// 16. At 10 ms a step and a p99 of 150 ms, a busy machine's scheduling
// (load average 10, the suite beside a CPU hog) broke the objective at
// 4 (TTFT p99 264 ms) and the search found 1; a p99 of a few dozen
// requests is their few stalled ones (searchSim).
func TestRunFindMax(t *testing.T) {
	dir := t.TempDir()
	jsonPath, csvPath := dir+"/r.json", dir+"/r.csv"
	var out, errb bytes.Buffer
	args := append([]string{"run", "--find-max", "ttft_p90<=400ms", "--find-max", "error_rate<1%", "--from", "4", "--to", "32",
		"--resolution", "50%", "--json", jsonPath, "--csv", csvPath, "--sim-step-base", "50ms"}, fastSearch...)
	code := run(args, &out, &errb)
	t.Logf("%s\n%s", errb.String(), out.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Capacity · prompt 64, output 8 tokens · concurrency: the most at which ttft_p90<=400ms and error_rate<1% held", "◀ knee", "step 1: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	doc, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, doc)
	var res struct {
		Infertop struct {
			Capacity struct {
				Over       string
				MaxLoad    *float64 `json:"max_load"`
				Objectives []string
				Found      bool
				Steps      []map[string]any
			}
		}
	}
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatal(err)
	}
	c := res.Infertop.Capacity
	if c.Over != "concurrency" || !c.Found || c.MaxLoad == nil || *c.MaxLoad < 4 || len(c.Objectives) != 2 || len(c.Steps) < 2 {
		t.Fatalf("capacity: %+v", c)
	}
	csvBytes, _ := os.ReadFile(csvPath)
	if n := strings.Count(string(csvBytes), "\n"); n != len(c.Steps)+1 {
		t.Errorf("%d CSV lines for %d steps:\n%s", n, len(c.Steps), csvBytes)
	}
}

// TestRunFindMaxNoneHeld: a search in which not even the lowest load
// holds exits 1, saying so. Parallel: no load can hold 1 µs, however
// busy the machine.
func TestRunFindMaxNoneHeld(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(append([]string{"run", "--find-max", "ttft_p99<=1us", "--from", "2"}, fastSearch...), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no load held") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// TestRunMatrix: a matrix without --find-max measures every cell at the
// load given; the JSON carries every cell.
func TestRunMatrix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run(append([]string{"run", "--matrix", "prompt=16,64;output=4", "-c", "4", "--json", dir + "/m.json"}, fastSearch...), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	if !strings.Contains(out.String(), "Throughput at the load given") {
		t.Errorf("no matrix table:\n%s", out.String())
	}
	doc, _ := os.ReadFile(dir + "/m.json")
	validate(t, doc)
	var res struct {
		Infertop struct {
			Capacity struct{ Matrix struct{ Cells []any } }
		}
	}
	json.Unmarshal(doc, &res)
	if n := len(res.Infertop.Capacity.Matrix.Cells); n != 2 {
		t.Fatalf("%d cells", n)
	}
}

// TestRunFindMaxUsage: what does not go with a search is refused, exit 2.
func TestRunFindMaxUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--find-max", "ttft_p99<=1s", "--slo", "ttft_p99<=1s"},
		{"run", "--find-max", "ttft_p99<=1s", "--duration", "10s"},
		{"run", "--find-max", "ttft_p99<=1s", "--stages", "concurrency=2,duration=1s"},
		{"run", "--find-max", "ttft_p99<=1s", "--over", "size"},
		{"run", "--find-max", "ttft_p99<=1s", "--from", "10", "--to", "5"},
		{"run", "--find-max", "ttft_p99<=1s", "--resolution", "2"},
		{"run", "--find-max", "bogus<1"},
		{"run", "--find-max", "ttft_p99<=1s", "--no-stream"},
		{"run", "--matrix", "prompt=0"},
		{"run", "--from", "3", "--duration", "1s"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args, code, errb.String())
		}
	}
}
