package probeflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/probe"
)

// TestSecretsStayOut: the key comes from the environment the API names,
// and a header's value never reaches the stored setting.
func TestSecretsStayOut(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := Add(fs)
	if err := fs.Parse([]string{"-H", "X-Token: s3cret", "--temperature", "0.5"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}
	c, err := f.Config(probe.Anthropic, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKey != "sk-a" || c.Body.Temperature == nil || *c.Body.Temperature != 0.5 || c.Header.Get("X-Token") != "s3cret" {
		t.Errorf("config %+v", c)
	}
	v, ok := f.Setting(fs.Lookup("header"))
	if !ok || strings.Contains(v, "s3cret") || !strings.Contains(v, "X-Token") {
		t.Errorf("stored header %q", v)
	}
}
