package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

func TestCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--version"}, 0, "infertop ", ""},
		{[]string{"--help"}, 0, "--concurrency", ""},
		{[]string{"sim", "--help"}, 0, "--slots", ""},
		{[]string{"--bogus"}, 2, "", "unknown flag: --bogus"},
		{[]string{"-c", "0"}, 2, "", "infertop: --concurrency: 0 is not within 1..10000\n"},
		{[]string{"run", "-c", "-1"}, 2, "", "infertop: --concurrency: -1 is not within 1..10000\n"},
		{[]string{"run", "--rate", "0.001"}, 2, "", "--rate: 0.001 is under the open loop's least, 0.01 requests per second"},
		{[]string{"run", "--stages", "concurrency=20000,duration=1s"}, 2, "", "--stages: stage 1: concurrency 20000 is past the most, 10000"},
		{[]string{"run", "--ramp", "1:20000:10s"}, 2, "", "--ramp: bad ramp"},
		{[]string{"run", "--drain", "-1s"}, 2, "", "--drain: -1s is negative"},
		{[]string{"run", "--no-drain", "--drain", "5s"}, 2, "", "give --drain or --no-drain, not both"},
		{[]string{"run", "--timeout", "0"}, 2, "", "--timeout: 0s is not positive"},
		{[]string{"run", "--scrape-every", "10ms"}, 2, "", "--scrape-every: 10ms is under the least, 100ms"},
		{[]string{"run", "--otlp", "ftp://u:hunter22@collector:4318"}, 2, "", `infertop: --otlp: want a collector's http:// or https:// address, such as http://127.0.0.1:4318; got "ftp://collector:4318"` + "\n"},
		{[]string{"run", "--otlp", "http://collector:4318/?token=hunter22"}, 2, "", `--otlp: "http://collector:4318/?token=REDACTED": the exporters send no query`},
		{[]string{"run", "--otlp-spans"}, 2, "", "infertop: --otlp-spans needs --otlp URL, the collector's\n"},
		{[]string{"run", "--slo-window", "20s"}, 2, "", "--slo-window: 20s is not one of 10s, 30s, 1m, 5m"},
		{[]string{"run", "--url", "foo"}, 2, "", `infertop: --url: "foo" is not http(s)://host[:port][/path]` + "\n"},
		{[]string{"run", "--url", "http://u:hunter22@%zz/v1"}, 2, "", `--url: "http://%zz/v1" is no URL`},
		{[]string{"run", "--dataset", "/nonexistent/p.jsonl"}, 2, "", "--dataset: open /nonexistent/p.jsonl"},
		{[]string{"run", "--url", "http://127.0.0.1:9/v1", "--api", "generic", "--stream-format", "sse"}, 2, "", "--chunk-path: sse streaming needs one"},
		{[]string{"--prompt-tokens", "40000"}, 2, "", "--prompt-tokens: bad length"},
		{[]string{"--output-tokens", "uniform:9-3"}, 2, "", "--output-tokens: bad length"},
		{[]string{"--window", "7s"}, 2, "", "--window: 7s is not one of 10s, 30s, 1m, 5m"},
		{[]string{"--theme", "pink"}, 2, "", "unknown theme"},
		{[]string{"--api", "nope"}, 2, "", `--api: unknown API "nope" (want openai-chat,`},
		{[]string{"--api", "tgi"}, 2, "", "--api: the embedded sim speaks openai-chat, openai-completions, openai-responses, anthropic, generic, openai-embeddings and ollama-embed, not tgi; pass --url"},
		{[]string{"--extra-body", "[1]"}, 2, "", "must be a JSON object"},
		{[]string{"--max-tokens-field", "n"}, 2, "", `--max-tokens-field: "n" is neither max_tokens nor max_completion_tokens`},
		{[]string{"--ttft", "soon"}, 2, "", `--ttft: unknown TTFT mode "soon" (want first-output or first-chunk)`},
		{[]string{"extra"}, 2, "", `unknown command "extra"`},
		{[]string{"--url", "http://127.0.0.1:9/v1"}, 2, "", "needs a terminal"},
		{[]string{"sim", "--preset", "huge"}, 2, "", `--preset: unknown sim preset "huge"`},
		{[]string{"sim", "--slots", "0"}, 2, "", "infertop: --slots: 0 is under the least, 1\n"},
		{[]string{"run", "--sim-jitter", "3"}, 2, "", "infertop: --sim-jitter: 3 is not within 0..1\n"},
		{[]string{"sim", "--addr", "256.0.0.1:1"}, 2, "", "sim:"},
		{[]string{"sim", "--help"}, 0, "--canary string", ""},
		{[]string{"sim", "--canary", "2:1.5"}, 2, "", `--canary: bad canary "2:1.5": the fraction must be within (0,1]`},
		{[]string{"run", "--sim-canary", "0.25:1.5:0:soon"}, 2, "", `--sim-canary: bad canary "0.25:1.5:0:soon": the delay "soon" is not a duration`},
		{[]string{"--help"}, 0, "--sim-canary string", ""},
		{[]string{"run", "--slo", "latency<1s"}, 2, "", `--slo: bad SLO "latency<1s"`},
		{[]string{"run", "--goodput", "ttft"}, 2, "", `--goodput: bad goodput limits "ttft": want positive times`},
		{[]string{"run", "--fail-fast"}, 2, "", "--fail-fast needs"},
		{[]string{"run", "--no-stream", "--slo", "ttft_p99<=1s"}, 2, "", "--no-stream there are no stream messages"},
		{[]string{"run", "--json", "/nonexistent/dir/r.json"}, 2, "", "--json: open /nonexistent/dir/r.json"},
		{[]string{"run", "--json", "same.out", "--csv", "same.out"}, 2, "", "are the same file"},
		{[]string{"run", "-H", "Bearer hunter22"}, 2, "", "bad --header: want 'Name: value'"},
		{[]string{"--rate", "abc"}, 2, "", `invalid argument "abc" for "--rate" flag: want a number of requests per second`},
		{[]string{"-c", "many"}, 2, "", `invalid argument "many" for "-c, --concurrency" flag: want a number`},
		{[]string{"run", "--url", "http://127.0.0.1:9/v1", "--slo", "energy_per_token<=1J"}, 2, "", "no GPU is read"},
		{[]string{"run", "--sim-gpus", "0", "--slo", "energy_per_token<=1J"}, 2, "", "no GPU is read"},
		{[]string{"run", "--slo-window", "1s"}, 2, "", "--slo-window must be"},
		{[]string{"run", "--help"}, 0, "--requests-log", ""},
		{[]string{"ssh", "--help"}, 0, "--authorized-keys", ""},
		{[]string{"ssh", "--max-sessions", "0"}, 2, "", "--max-sessions must be"},
		{[]string{"ssh", "--local"}, 2, "", "--local needs a terminal"},
		{[]string{"ssh", "--authorized-keys", "/nonexistent/keys", "--host-key", "/tmp/infertop-test-hk"}, 2, "", "--authorized-keys"},
		{[]string{"ssh", "--compare", "http://127.0.0.1:9/v1", "--split-by", "header:X-Backend"}, 2, "", "--split-by does not work with --compare"},
		{[]string{"ssh", "--baseline-group", "old"}, 2, "", "--baseline-group needs --split-by"},
		{[]string{"ssh", "--compare-model", "m"}, 2, "", "--compare-model and --regression need --compare URL"},
		{[]string{"ssh", "--split-by", "cookie:x"}, 2, "", "--split-by: "},
		{[]string{"rnu", "--duration", "1s"}, 2, "", `unknown command "rnu": did you mean "run"?`},
		{[]string{"bogus"}, 2, "", `unknown command "bogus" (commands: agent, compare, merge, report, run, sim, ssh, watch`},
		{[]string{"help"}, 0, "infertop report RUN.json", ""},
		{[]string{"ssh", "--regression", "ttft_p99<+10%"}, 2, "", "unknown flag: --regression"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.err) {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out.String(), errb.String(), tt.code, tt.out, tt.err)
		}
		if tt.code == 2 && strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: error is not one line: %q", tt.args, errb.String())
		}
	}
}

// TestRunHeadless runs `infertop run` against the embedded sim and holds its
// outputs: the exit code, the summary, the JSON (to its schema), the CSV and
// the requests log.
func TestRunHeadless(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonPath, csvPath, logPath := dir+"/r.json", dir+"/r.csv", dir+"/r.jsonl"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--requests", "24", "-c", "4", "--prompt-tokens", "16", "--output-tokens", "8",
		"--slo", "ttft_p99<=2s", "--slo", "error_rate<1%", "--goodput", "e2el:10s",
		"--json", jsonPath, "--csv", csvPath, "--requests-log", logPath}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	for _, want := range []string{"Phase 1: concurrency 4, prompt 16, output 8 tokens", "requests 24 ok, 0 failed", "every SLO held"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	doc, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, doc)
	var res map[string]any
	json.Unmarshal(doc, &res)
	if res["completed"] != 24.0 || res["total_output_tokens"] != 24.0*8 || res["request_goodput"].(float64) <= 0 {
		t.Errorf("result: completed %v, output tokens %v, goodput %v", res["completed"], res["total_output_tokens"], res["request_goodput"])
	}
	csvBytes, _ := os.ReadFile(csvPath)
	if n := strings.Count(string(csvBytes), "\n"); n != 3 { // header, phase 1, run
		t.Errorf("%d CSV lines:\n%s", n, csvBytes)
	}
	logBytes, _ := os.ReadFile(logPath)
	if n := strings.Count(string(logBytes), "\n"); n != 24 {
		t.Errorf("%d request lines, want 24", n)
	}

	// A breached SLO is exit code 1 and says which, in which phase.
	out.Reset()
	errb.Reset()
	code = run([]string{"run", "--requests", "8", "-c", "2", "--prompt-tokens", "8", "--output-tokens", "4", "--slo", "ttft_p50<=1us"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "SLO breached: ttft_p50<=1us in run; ttft_p50<=1us in phase 1") {
		t.Fatalf("breach: exit %d, stderr %q", code, errb.String())
	}
	// An endpoint unreachable from the start is exit code 2.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	errb.Reset()
	code = run([]string{"run", "--url", "http://" + addr + "/v1", "--api", "openai-chat", "--model", "m", "--requests", "5"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "unreachable") {
		t.Fatalf("unreachable: exit %d, stderr %q", code, errb.String())
	}
}

// TestRunStagesAndWarmup: a headless walk ends with its last stage, each
// stage a phase, and the warm-up stays out of the run's figures.
func TestRunStagesAndWarmup(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	path := t.TempDir() + "/r.json"
	code := run([]string{"run", "--stages", "concurrency=2,duration=600ms;concurrency=4,duration=600ms", "--warmup", "4",
		"--prompt-tokens", "8", "--output-tokens", "4", "--sim-preset", "fast", "--sim-step-base", "5ms", "--json", path}, &out, &errb)
	if code != 0 || !strings.Contains(errb.String(), "the last stage ended") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"Phase 1: concurrency 2", "(warm-up, not in the run's figures)", "Phase 2: concurrency 2", "Phase 3: concurrency 4"} {
		if strings.Contains(out.String(), "Phase 4") {
			t.Fatalf("more phases than the warm-up and two stages:\n%s", out.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	// Every phase in the JSON, the warm-up marked: to the schema.
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, doc)
	var res struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatal(err)
	}
	if ps := res.Infertop.Phases; len(ps) != 3 || !ps[0].Warmup || ps[1].Warmup || ps[2].Knobs.Concurrency != 4 {
		t.Errorf("phases %+v", ps)
	}
}

// TestRunEnergy: against the embedded sim's simulated GPUs the result has
// vLLM's energy keys, per phase too, and an energy objective is checked.
func TestRunEnergy(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/r.json"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--duration", "2500ms", "-c", "4", "--prompt-tokens", "16", "--output-tokens", "16",
		"--sim-gpus", "2", "--scrape-every", "200ms", "--slo", "energy_per_token<=100J", "--json", path}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	if !strings.Contains(out.String(), "GPU energy") || !strings.Contains(out.String(), "(DCGM, energy counter)") ||
		!strings.Contains(out.String(), "energy_per_token<=100J held in run") {
		t.Fatalf("summary:\n%s", out.String())
	}
	var res map[string]any
	b, _ := os.ReadFile(path)
	validate(t, b)
	json.Unmarshal(b, &res)
	j, _ := res["gpu_energy_j"].(float64)
	w, _ := res["gpu_avg_power_w"].(float64)
	jpt, _ := res["gpu_energy_per_output_token_j"].(float64)
	// Two GPUs at 90 W idle plus up to 610 W busy each.
	if j <= 0 || w < 180 || w > 1400 || jpt <= 0 {
		t.Fatalf("energy %v J, %v W, %v J/token", j, w, jpt)
	}
}

// TestRunHungServer: against a server that accepts and never answers, the
// requests still out after the drain are incomplete, every report counts
// them (sent = completed + failed + incomplete), no SLO passes, and a run
// where nothing completed is a failed run: exit 2, saying why.
func TestRunHungServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hs.Close()
	defer close(release)
	path := t.TempDir() + "/r.json"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--url", hs.URL + "/v1", "--api", "openai-chat", "--model", "m", "-c", "4", "--duration", "1s", "--drain", "300ms",
		"--server-metrics", "off", "--slo", "error_rate<1%", "--slo", "ttft_p99<=500ms", "--json", path}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "nothing completed: 4 requests sent, none finished") {
		t.Fatalf("exit %d, want 2 and why: %s\n%s", code, errb.String(), out.String())
	}
	for _, want := range []string{"sent 4 = 0 completed + 0 failed + 4 incomplete", "4 requests were still in flight after the drain",
		"error_rate<1% BREACHED in run: 100.00%", "ttft_p99<=500ms BREACHED in run: nothing measured"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	var res map[string]any
	b, _ := os.ReadFile(path)
	validate(t, b)
	json.Unmarshal(b, &res)
	if res["sent"] != 4.0 || res["incomplete"] != 4.0 || res["completed"] != 0.0 || res["failed"] != 0.0 {
		t.Errorf("JSON: sent %v, incomplete %v, completed %v, failed %v", res["sent"], res["incomplete"], res["completed"], res["failed"])
	}
}

// TestRunNoDrain: with --no-drain the requests in flight at the end are
// cancelled at once, not after the default drain, and counted incomplete
// (nothing completed: a failed run, exit 2).
func TestRunNoDrain(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hs.Close()
	defer close(release)
	var out, errb bytes.Buffer
	start := time.Now()
	code := run([]string{"run", "--url", hs.URL + "/v1", "--api", "openai-chat", "--model", "m", "-c", "3", "--duration", "300ms", "--no-drain",
		"--server-metrics", "off"}, &out, &errb)
	if d := time.Since(start); d > 10*time.Second { // the default drain is 30 s
		t.Fatalf("the run took %v", d)
	}
	if code != 2 || !strings.Contains(out.String(), "sent 3 = 0 completed + 0 failed + 3 incomplete") {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
}

// TestRunEveryRequestFails: a run in which every request failed exits 2
// with the most frequent message, and the summary lists it.
func TestRunEveryRequestFails(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run([]string{"run", "--model", "nosuchmodel", "--requests", "6", "-c", "2", "--sim-preset", "fast"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "every request failed: 6 sent, 6 failed; the most frequent reason (6 of them): 4xx: HTTP 404") || !strings.Contains(errb.String(), "nosuchmodel") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "6 × 4xx: HTTP 404") {
		t.Errorf("summary lacks the error's count:\n%s", out.String())
	}
}

// TestSecretsStayOut: credentials in the URL and header values reach
// neither the JSON's settings nor the summary.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	u := strings.Replace(srv.URL, "http://", "http://user:pa55word@", 1) + "?api_key=sekrit1"
	path := t.TempDir() + "/r.json"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--url", u, "--api", "openai-chat", "-H", "X-Secret: hunter22", "--requests", "4", "-c", "2",
		"--prompt-tokens", "8", "--output-tokens", "4", "--extra-body", `{"api_key": "xk3yz9"}`, "--json", path}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	b, _ := os.ReadFile(path)
	for _, secret := range []string{"pa55word", "sekrit1", "hunter22", "xk3yz9"} {
		for where, text := range map[string]string{"JSON": string(b), "summary": out.String(), "stderr": errb.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s holds %q", where, secret)
			}
		}
	}
	if !strings.Contains(string(b), "X-Secret: <redacted>") {
		t.Errorf("the JSON's settings do not name the header:\n%s", b)
	}
}

// TestHelpOnce: every help text is printed once.
func TestHelpOnce(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"run", "--help"}, {"sim", "--help"}, {"ssh", "--help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || strings.Count(out.String(), "Usage:") != 1 || errb.Len() != 0 {
			t.Errorf("%v: exit %d, %d usage texts, stderr %q", args, code, strings.Count(out.String(), "Usage:"), errb.String())
		}
	}
}
