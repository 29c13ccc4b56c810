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

// TestServerTimingsAsked: --server-timings reaches the client's
// configuration, which asks once the API is known (probe.New); without
// it nothing is asked.
func TestServerTimingsAsked(t *testing.T) {
	for _, args := range [][]string{{"--server-timings"}, nil} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := Add(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c, err := f.Config("", func(string) string { return "" })
		if err != nil || c.ServerTimings != (args != nil) || c.Body.Extra != nil {
			t.Errorf("%v: server timings %v, extra %v, %v", args, c.ServerTimings, c.Body.Extra, err)
		}
	}
}
