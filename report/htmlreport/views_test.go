package htmlreport

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/report"
)

// TestCommand: the settings become the command line that reproduces the
// run: repeatable flags once a value, values quoted for a shell, the
// target first, and what the manifest redacted still redacted.
func TestCommand(t *testing.T) {
	r := pageRun{res: &report.File{Infertop: report.InfertopJSON{Manifest: report.Manifest{Settings: map[string]string{
		"url":        "http://host:8000/v1",
		"slo":        "[ttft_p99<=500ms,error_rate<1%]",
		"regression": `["ttft_p99<+10%","a,b"]`,
		"header":     "Authorization: <redacted>; X-Team: <redacted>",
		"no-stream":  "true",
		"stages":     "concurrency=8,duration=30s;rate=50,duration=1m",
		"extra-body": `{"api_key":"<redacted>"}`,
		"model":      "it's",
	}}}}}
	got := r.Command()
	want := `infertop run --url http://host:8000/v1 --extra-body '{"api_key":"<redacted>"}' --header 'Authorization: <redacted>' --header 'X-Team: <redacted>' ` +
		`--model 'it'\''s' --no-stream --regression 'ttft_p99<+10%' --regression a,b --slo 'ttft_p99<=500ms' --slo 'error_rate<1%' ` +
		`--stages 'concurrency=8,duration=30s;rate=50,duration=1m'`
	if got != want {
		t.Fatalf("command\n got %s\nwant %s", got, want)
	}
}

// TestServer: the models the server lists are named with their context,
// anything else is short text, sanitised.
func TestServer(t *testing.T) {
	r := pageRun{res: &report.File{Infertop: report.InfertopJSON{Manifest: report.Manifest{Server: map[string]json.RawMessage{
		"models":  json.RawMessage(`{"object":"list","data":[{"id":"llama","max_model_len":8192,"owned_by":"vllm"}]}`),
		"version": json.RawMessage(`"0.6.1\u001b]0;x\u0007"`),
		"other":   json.RawMessage(`{"k":"` + strings.Repeat("v", 1000) + `"}`),
	}}}}}
	got := r.Server()
	if len(got) != 3 || got[0] != "models: llama (context 8192 tokens, from vllm)" || strings.ContainsAny(got[2], "\x1b\x07") ||
		got[2] != `version: 0.6.1\x1b]0;x\a` || len(got[1]) > maxServerText+20 {
		t.Fatalf("server says %q", got)
	}
}

// TestUnmeasuredStepIsAGap: a capacity step with nothing measured (null
// in the JSON) is "—" in the steps table and a gap in the curves, never
// a fall to zero past the knee.
func TestUnmeasuredStepIsAGap(t *testing.T) {
	v := 10.2
	s := report.SearchJSON{Steps: []report.StepJSON{{N: 1, Load: 8, ReqPerSec: &v, OutTokPerSec: &v, P99TTFT: &v}, {N: 2, Load: 16, ReqPerSec: &v}}}
	view := search("-0", capacity.Concurrency, nil, s)
	row := view.Steps[1]
	if row.Req != "10.2" || row.Out != "—" || row.Good != "—" || row.TTFT99 != "—" || row.E2E50 != "—" || row.Errors != "—" {
		t.Fatalf("step 2's row: %+v", row)
	}
	for _, c := range view.Charts {
		for _, l := range c.Lines {
			if l.Name == "req/s" {
				continue
			}
			if y := l.Y[1]; !math.IsNaN(y) {
				t.Errorf("%s: %s at step 2 is %v, want a gap", c.ID, l.Name, y)
			}
		}
	}
}

// TestNotJudgedOutcomeFails: a gate not judged (too few requests) is a
// failed gate, said first and in the colour of a failure (a split run
// that exited 1 said "no regression found, but 1 of 1 not judged" in
// bold green).
func TestNotJudgedOutcomeFails(t *testing.T) {
	c := compare.ComparisonJSON{Regressions: []compare.GateJSON{{Expr: "ttft_p99<+10%", Text: "ttft_p99<+10%: not judged: too few requests"}}}
	v := comparison(c, "Comparison", [2]string{"a", "b"}, "group 2")
	if !v.OutcomeBad || !strings.HasPrefix(v.Outcome, "gate not passed: 1 of 1 not judged") {
		t.Fatalf("outcome %q (bad %v)", v.Outcome, v.OutcomeBad)
	}
	var b strings.Builder
	if err := pageTmpl.ExecuteTemplate(&b, "comparison", v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if o, tab := strings.Index(out, `class="outcome bad"`), strings.Index(out, "<table"); o < 0 || o > tab {
		t.Fatalf("the outcome not first, or not marked a failure:\n%s", out)
	}
}

// TestOpenLoopOverTime: an open loop's report draws TTFT* and E2E* over
// time, and its charts over time span the same seconds, whatever the
// seconds their values start in (TTFT's and E2E's were on different x
// ranges: the first E2E comes seconds after the first TTFT).
func TestOpenLoopOverTime(t *testing.T) {
	var res struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	if err := json.Unmarshal([]byte(minimal), &res); err != nil {
		t.Fatal(err)
	}
	n := 20
	s := &report.SeriesJSON{Sec: make([]int64, n), Completed: make([]int32, n), Failed: make([]int32, n), OutputTokens: make([]int32, n),
		InputTokens: make([]int32, n), InFlight: make([]int32, n), Latency: map[string][]*float64{}}
	for _, k := range []string{"ttft", "e2el", "ttft_intended", "e2el_intended"} {
		for _, q := range []string{"p50", "p95", "p99"} {
			s.Latency[k+"_"+q] = make([]*float64, n)
		}
	}
	for i := range n {
		s.Sec[i] = int64(i)
		v := float64(100 + i)
		if i >= 2 { // the first TTFTs come at second 2, the first E2Es at 8
			s.Latency["ttft_p99"][i], s.Latency["ttft_intended_p99"][i] = &v, &v
		}
		if i >= 8 && i < 15 {
			s.Latency["e2el_p99"][i], s.Latency["e2el_intended_p99"][i] = &v, &v
		}
	}
	res.Infertop.Series = s
	doc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Write(&out, []Run{{Name: "a", JSON: doc}}); err != nil {
		t.Fatal(err)
	}
	xs := map[string]string{}
	for _, id := range []string{"ttft-time", "e2e-time", "ttft-intended-time", "e2e-intended-time"} {
		at := strings.Index(out.String(), `id="`+id+`"`)
		if at < 0 {
			t.Fatalf("no chart %s", id)
		}
		rest := out.String()[at:]
		x := rest[strings.Index(rest, `data-x="`)+8:]
		xs[id] = x[:strings.Index(x, `"`)]
	}
	if xs["ttft-time"] != xs["e2e-time"] || xs["ttft-time"] != xs["e2e-intended-time"] || !strings.HasPrefix(xs["ttft-time"], "0 19 ") {
		t.Fatalf("x axes: %v", xs)
	}
}
