package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// TestAnthropicKeyEnv: --api anthropic (or a URL ending in /v1/messages)
// reads ANTHROPIC_API_KEY, unless --api-key-env names another; the other
// kinds read OPENAI_API_KEY.
func TestAnthropicKeyEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai-key")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-key")
	t.Setenv("OTHER_KEY", "sk-other-key")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", "anthropic"}, "sk-ant-key"},
		{[]string{"--url", "http://127.0.0.1:1/v1/messages"}, "sk-ant-key"},
		{[]string{"--api", "anthropic", "--api-key-env", "OTHER_KEY"}, "sk-other-key"},
		{[]string{"--api", "openai-responses"}, "sk-openai-key"},
	} {
		f := addLoadFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
		if _, err := f.parse(tt.args, io.Discard); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config()
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if cfg.Probe.APIKey != tt.want {
			t.Errorf("%v: key %q, want %q", tt.args, cfg.Probe.APIKey, tt.want)
		}
	}
}

// TestEmbeddingsGoodput: a goodput limit that needs a stream is refused
// for an embeddings API at the start, an e2el one taken.
func TestEmbeddingsGoodput(t *testing.T) {
	t.Parallel()
	for args, ok := range map[string]bool{"ttft:1s": false, "ttfo:1s": false, "e2el:1s": true} {
		f := addLoadFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
		if _, err := f.parse([]string{"--api", "openai-embeddings", "--goodput", args}, io.Discard); err != nil {
			t.Fatal(err)
		}
		if _, err := f.config(); (err == nil) != ok {
			t.Errorf("--goodput %s: %v", args, err)
		}
	}
}

// TestAnthropicSecretsStayOut: an Anthropic key, from ANTHROPIC_API_KEY
// or -H x-api-key, reaches no report, summary or error, against the sim.
func TestAnthropicSecretsStayOut(t *testing.T) {
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-envsecret1")
	path := t.TempDir() + "/r.json"
	var out, errb bytes.Buffer
	code := run([]string{"run", "--url", srv.URL, "--api", "anthropic", "-H", "x-api-key: sk-ant-hdrsecret2", "--requests", "4", "-c", "2",
		"--prompt-tokens", "8", "--output-tokens", "4", "--json", path}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	b, _ := os.ReadFile(path)
	for _, secret := range []string{"envsecret1", "hdrsecret2"} {
		for where, text := range map[string]string{"JSON": string(b), "summary": out.String(), "stderr": errb.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s holds %q", where, secret)
			}
		}
	}
	if !strings.Contains(string(b), `"backend": "anthropic"`) && !strings.Contains(string(b), `"backend":"anthropic"`) {
		t.Errorf("the JSON does not say the API:\n%.400s", b)
	}
}
