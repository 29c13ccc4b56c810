package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
)

func testReport() *Report {
	ms := time.Millisecond
	lat := func(scale time.Duration) [load.NumMetrics]load.Dist {
		var l [load.NumMetrics]load.Dist
		for m := range load.NumMetrics {
			l[m] = load.Dist{Count: 100, Mean: 10 * scale, Std: scale, Min: 5 * scale, P50: 9 * scale, P90: 12 * scale, P95: 13 * scale, P99: 15 * scale, P999: 16 * scale, Max: 17 * scale}
		}
		return l
	}
	p1 := load.Phase{ID: 1, Knobs: load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128}, End: 30 * time.Second, Duration: 30 * time.Second,
		Completed: 100, Good: 90, OutTokens: 12800, InTokens: 25600, ReqPerSec: 3.3, OutTokPerSec: 426, InTokPerSec: 853, GoodPerSec: 3, Latency: lat(ms)}
	p2 := load.Phase{ID: 2, Knobs: load.Knobs{Concurrency: 64, PromptTokens: 256, OutputTokens: 128}, Start: 30 * time.Second, Duration: 30 * time.Second,
		Completed: 100, Failed: 4, OutTokens: 12800, ReqPerSec: 3.3, OutTokPerSec: 426, Latency: lat(40 * ms)}
	p2.ByClass[probe.HTTP5xx] = 4
	run := load.Phase{Duration: time.Minute, Completed: 200, Failed: 4, Good: 90, OutTokens: 25600, InTokens: 25600, ReqPerSec: 3.3, OutTokPerSec: 426, GoodPerSec: 1.5, Latency: lat(20 * ms)}
	run.ByClass = p2.ByClass
	m := NewManifest("v1.2.3")
	m.URL, m.API, m.Model, m.Stream, m.Seed = "http://127.0.0.1:8000/v1/chat/completions", "openai-chat", "sim", true, 1
	m.Knobs = KnobsJSON{Mode: "closed", Concurrency: 8, PromptTokens: 256, OutputTokens: 128}
	m.Start = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	m.End = m.Start.Add(time.Minute)
	final := load.Snapshot{Phases: []load.Phase{p1, {ID: 3}, p2}, Run: run}
	objs, _ := slo.ParseAll([]string{"ttft_p99<=500ms", "error_rate<1%", "itl_p50<1ms"})
	return &Report{Manifest: m, Final: final, Verdicts: Verdicts(objs, final, nil)}
}

func TestVerdicts(t *testing.T) {
	r := testReport()
	// 3 objectives over the run and the two phases with requests.
	if len(r.Verdicts) != 9 || Held(r.Verdicts) {
		t.Fatalf("%d verdicts, held %v", len(r.Verdicts), Held(r.Verdicts))
	}
	var broken []string
	for _, v := range r.Verdicts {
		if !v.Held {
			broken = append(broken, v.Expr+"@"+v.Scope)
		}
	}
	want := "error_rate<1%@run itl_p50<1ms@run itl_p50<1ms@phase 1 ttft_p99<=500ms@phase 2 error_rate<1%@phase 2 itl_p50<1ms@phase 2"
	if got := strings.Join(broken, " "); got != want {
		t.Fatalf("breaches %q, want %q", got, want)
	}
}

func TestJSONMatchesSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	var doc map[string]any
	json.Unmarshal(buf.Bytes(), &doc)
	for key, want := range map[string]float64{"completed": 200, "failed": 4, "mean_ttft_ms": 200, "median_ttft_ms": 180, "p99_ttft_ms": 300, "p99.9_e2el_ms": 320, "std_itl_ms": 20} {
		if got, _ := doc[key].(float64); got != want {
			t.Errorf("%s = %v, want %v", key, doc[key], want)
		}
	}
	// A document that breaks the schema is caught: the test can fail.
	delete(doc, "completed")
	broken, _ := json.Marshal(doc)
	if err := compile(t).Validate(mustUnmarshal(t, broken)); err == nil {
		t.Fatal("a result without completed passed the schema")
	}
}

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("result.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustUnmarshal(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// validate holds a written result to the schema.
func validate(t *testing.T, b []byte) {
	t.Helper()
	if err := compile(t).Validate(mustUnmarshal(t, b)); err != nil {
		t.Fatalf("result does not match result.schema.json: %v", err)
	}
}

// ValidateFile is used by the command's end-to-end test.
func TestSchemaFileIsTheEmbeddedOne(t *testing.T) {
	b, err := os.ReadFile("result.schema.json")
	if err != nil || !bytes.Equal(b, Schema()) {
		t.Fatal("embedded schema differs from the file")
	}
}

func TestText(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"infertop v1.2.3 · http://127.0.0.1:8000/v1/chat/completions · openai-chat · sim",
		"Phase 1: concurrency 8, prompt 256, output 128 tokens",
		"Phase 2: concurrency 64", "requests 100 ok, 4 failed (5xx 4)", "Whole run · 1m0s",
		"ttft_p99<=500ms BREACHED in phase 2: 600ms (off by 100ms, 20%)", "an SLO was breached",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Phase 3") {
		t.Error("a phase without requests is listed")
	}
	if strings.Contains(out, "cache busted") {
		t.Error("a run without --cache-bust said busted")
	}
	r := testReport()
	r.Manifest.Settings = map[string]string{"cache-bust": "true"}
	buf.Reset()
	if err := r.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "cache busted") {
		t.Errorf("--cache-bust not said (%v):\n%s", err, buf.String())
	}
}

func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport().WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[1][0] != "1" || rows[2][0] != "2" || rows[3][0] != "run" {
		t.Fatalf("rows %v", rows)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	if rows[2][col["errors_5xx"]] != "4" || rows[1][col["p99_ttft_ms"]] != "15.000" || rows[2][col["concurrency"]] != "64" {
		t.Fatalf("row 2: %v", rows[2])
	}
}

// TestSchemaKnowsEveryAPI: a result's manifest.api is any kind the client
// speaks (a result of --api anthropic once failed its own schema).
func TestSchemaKnowsEveryAPI(t *testing.T) {
	var s struct {
		Defs struct {
			Manifest struct {
				Properties struct {
					API struct {
						Enum []string `json:"enum"`
					} `json:"api"`
				} `json:"properties"`
			} `json:"manifest"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range probe.Kinds() {
		kinds = append(kinds, string(k))
	}
	if got := strings.Join(s.Defs.Manifest.Properties.API.Enum, " "); got != strings.Join(kinds, " ") {
		t.Errorf("the schema's manifest.api is one of %s; the client speaks %s", got, strings.Join(kinds, " "))
	}
}
