package main

import (
	"io"
	"testing"

	"github.com/spf13/pflag"
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
