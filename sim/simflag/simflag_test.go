package simflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/sim"
)

// TestCanary: --canary (with the prefix) reaches Params over any preset,
// and its error names the flag as the user spelled it.
func TestCanary(t *testing.T) {
	for _, prefix := range []string{"", "sim-"} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := Add(fs, prefix)
		if err := fs.Parse([]string{"--" + prefix + "preset", "fast", "--" + prefix + "canary", "0.25:1.5:0.01:30s"}); err != nil {
			t.Fatal(err)
		}
		p, err := f.Params()
		want := sim.Canary{Fraction: 0.25, Slowdown: 1.5, ErrorRate: 0.01, Delay: 30e9}
		if err != nil || p.Canary != want || p.Slots != 100000 {
			t.Errorf("prefix %q: canary %+v, slots %d, %v", prefix, p.Canary, p.Slots, err)
		}

		fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
		f = Add(fs, prefix)
		if err := fs.Parse([]string{"--" + prefix + "canary", "2:1.5"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Params(); err == nil || !strings.HasPrefix(err.Error(), "--"+prefix+"canary: bad canary \"2:1.5\"") {
			t.Errorf("prefix %q: %v", prefix, err)
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := Add(fs, "")
	if p, err := f.Params(); err != nil || !p.Canary.IsZero() {
		t.Errorf("no --canary: %+v, %v", p.Canary, err)
	}
}
