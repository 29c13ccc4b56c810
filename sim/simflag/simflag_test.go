package simflag

import (
	"slices"
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

// TestParamErrorsNameTheFlag: a parameter out of range is refused naming
// the flag it came from, with the prefix; the fault rates' sum names the
// flags given.
func TestParamErrorsNameTheFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--slots", "0"}, "--slots: 0 is under the least, 1"},
		{[]string{"--kv-tokens", "-5"}, "--kv-tokens: -5 is under the least, 1"},
		{[]string{"--jitter", "2"}, "--jitter: 2 is not within 0..1"},
		{[]string{"--step-base", "-1ms"}, "--step-base: -1ms is negative"},
		{[]string{"--gpus", "2000"}, "--gpus: 2000 is not within 0..1024"},
		{[]string{"--model", ""}, "--model: the name is empty"},
		{[]string{"--error-rate", "0.7", "--rate-limit-rate", "0.7"}, "--error-rate, --rate-limit-rate: the rates add up to 1.4, past 1"},
		{[]string{"--faults", "reset=0.6", "--error-rate", "0.6"}, "--faults, --error-rate: the rates add up to 1.2"},
		{[]string{"--preset", "huge"}, `--preset: unknown sim preset "huge"`},
	} {
		for _, prefix := range []string{"", "sim-"} {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			f := Add(fs, prefix)
			args := slices.Clone(tt.args)
			for i, a := range args {
				if strings.HasPrefix(a, "--") {
					args[i] = "--" + prefix + a[2:]
				}
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tt.want, "--", "--"+prefix)
			if _, err := f.Params(); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%v: %v, want %q", args, err, want)
			}
		}
	}
}
