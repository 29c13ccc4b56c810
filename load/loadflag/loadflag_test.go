package loadflag

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/load"
)

func parsed(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := Add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestConfigReadsTheShape: the specs become the load's configuration.
func TestConfigReadsTheShape(t *testing.T) {
	c, err := parsed(t, "--rate", "5", "--prompt-tokens", "uniform:10-20", "--drain", "0", "--stages", "concurrency=2,duration=1s").Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Knobs.Mode != load.OpenLoop || c.Knobs.PromptTokens != 15 || !c.NoDrain || c.Drain != 0 || len(c.Stages) != 1 || c.MaxInFlight == 0 {
		t.Errorf("config %+v", c)
	}
}

// TestFlagErrorNamesTheFlag: a setting's error is named by its flag, a
// walk by the flag that gave it, anything else left as it is.
func TestFlagErrorNamesTheFlag(t *testing.T) {
	why := errors.New("too many")
	f := parsed(t, "--ramp", "1:4:4s")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&load.SettingError{Setting: load.SettingConcurrency, Err: why}, "--concurrency: too many"},
		{&load.SettingError{Setting: load.SettingStages, Err: why}, "--ramp: too many"},
		{why, "too many"},
	} {
		if got := f.FlagError(c.err).Error(); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
	if got := FlagError(&load.SettingError{Setting: load.SettingStages, Err: why}).Error(); got != "--stages: too many" {
		t.Errorf("without the flags: %q", got)
	}
}

// TestHeadlessWindow: --window is the SLOs' window in a headless run,
// one of the dashboard's, and not another --slo-window.
func TestHeadlessWindow(t *testing.T) {
	if w, err := parsed(t).HeadlessWindow(45*time.Second, true); err != nil || w != 45*time.Second {
		t.Errorf("no --window: %v %v", w, err)
	}
	if w, err := parsed(t, "--window", "1m").HeadlessWindow(30*time.Second, false); err != nil || w != time.Minute {
		t.Errorf("--window 1m: %v %v", w, err)
	}
	if _, err := parsed(t, "--window", "1m").HeadlessWindow(30*time.Second, true); err == nil {
		t.Error("two windows taken")
	}
	if _, err := parsed(t, "--window", "45s").HeadlessWindow(30*time.Second, false); err == nil || !strings.Contains(err.Error(), "10s, 30s, 1m, 5m") {
		t.Errorf("--window 45s: %v", err)
	}
}

// TestSeedSeedsTraces: --seed given makes the trace ids repeatable; the
// default seed leaves them random.
func TestSeedSeedsTraces(t *testing.T) {
	c, err := parsed(t).Config()
	if err != nil || c.TraceSeed != nil {
		t.Fatalf("no --seed: trace seed %v, %v", c.TraceSeed, err)
	}
	c, err = parsed(t, "--seed", "1").Config()
	if err != nil || c.TraceSeed == nil || *c.TraceSeed != 1 {
		t.Fatalf("--seed 1: trace seed %v, %v", c.TraceSeed, err)
	}
}
