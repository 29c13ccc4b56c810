package sessionflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/runner"
)

// TestVerdict: --verdict picks the comparison's method, the confidence
// sequences by default; a bad value is refused as the flag is parsed, and a verdict
// with nothing to compare is refused by Spec.
func TestVerdict(t *testing.T) {
	parse := func(args ...string) (*Flags, error) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := Add(fs, true)
		return f, fs.Parse(args)
	}
	for _, tt := range []struct {
		args    []string
		anytime bool
	}{
		{nil, true},
		{[]string{"--verdict", "bootstrap"}, false},
		{[]string{"--verdict", "anytime"}, true},
	} {
		f, err := parse(append(tt.args, "--compare", "http://127.0.0.1:1/v1")...)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		sp, err := f.Spec(runner.Config{}, nil)
		if err != nil || sp.Pair == nil || sp.Pair.Options.Anytime != tt.anytime {
			t.Errorf("%q: %+v, %v; want Anytime %v", tt.args, sp.Pair, err, tt.anytime)
		}
	}
	if _, err := parse("--verdict", "sometimes"); err == nil || !strings.Contains(err.Error(), "want bootstrap or anytime") {
		t.Errorf("a bad --verdict: %v", err)
	}
	f, _ := parse("--verdict", "anytime")
	if _, err := f.Spec(runner.Config{}, nil); err == nil || !strings.Contains(err.Error(), "--verdict needs --compare") {
		t.Errorf("--verdict alone: %v", err)
	}
	f, _ = parse("--verdict", "anytime", "--split-by", "header:X-Backend")
	if sp, err := f.Spec(runner.Config{}, nil); err != nil || sp.Split == nil || !sp.Split.Options.Anytime {
		t.Errorf("--split-by: %+v, %v", sp.Split, err)
	}
}
