package htmlreport

import (
	"encoding/json"
	"strings"
	"testing"

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
