package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/slo"
)

// TestValidate: a configuration that cannot be right is refused before
// anything starts, each error in its owner's terms: the runner's own, the
// probe's, the engine's, the sim's.
func TestValidate(t *testing.T) {
	var (
		re *SettingError
		pe *probe.SettingError
		le *load.SettingError
		se *sim.ParamError
	)
	is := func(target any, setting func() string, want string) func(error) bool {
		return func(err error) bool { return errors.As(err, target) && setting() == want }
	}
	tests := []struct {
		name string
		edit func(*Config)
		ok   func(error) bool
	}{
		{"sim and ollama", func(c *Config) { c.API = probe.Ollama }, is(&re, func() string { return re.Setting }, SettingAPI)},
		{"bad URL", func(c *Config) { c.URL = "localhost:8000" }, is(&pe, func() string { return pe.Setting }, probe.SettingURL)},
		{"unknown API", func(c *Config) { c.URL, c.API = "http://127.0.0.1:1/v1", "grpc" }, is(&pe, func() string { return pe.Setting }, probe.SettingAPI)},
		{"negative timeout", func(c *Config) { c.Probe.Timeout = -time.Second }, is(&pe, func() string { return pe.Setting }, probe.SettingTimeout)},
		{"generic stream, no chunk path", func(c *Config) { c.API, c.Probe.Generic.Stream = probe.Generic, "sse" }, is(&pe, func() string { return pe.Setting }, probe.SettingChunkPath)},
		{"negative concurrency", func(c *Config) { c.Load.Knobs.Concurrency = -1 }, is(&le, func() string { return le.Setting }, load.SettingConcurrency)},
		{"no slots", func(c *Config) { c.Sim.Slots = 0 }, is(&se, func() string { return se.Param }, sim.ParamSlots)},
		{"scrape too fast", func(c *Config) { c.Telemetry.Every = time.Millisecond }, is(&re, func() string { return re.Setting }, SettingScrapeEvery)},
		{"negative scrape", func(c *Config) { c.Telemetry.Every = -time.Second }, is(&re, func() string { return re.Setting }, SettingScrapeEvery)},
		{"negative info timeout", func(c *Config) { c.InfoTimeout = -time.Second }, is(&re, func() string { return re.Setting }, SettingInfoTimeout)},
		{"GPUs two ways", func(c *Config) { c.Telemetry.GPULocal, c.Telemetry.GPUMetrics = true, "http://127.0.0.1:1/metrics" }, is(&re, func() string { return re.Setting }, SettingGPUs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simConfig(t)
			tt.edit(&cfg)
			if err := cfg.Validate(); !tt.ok(err) {
				t.Fatalf("Validate: %v", err)
			}
			r, err := Start(context.Background(), cfg)
			if err == nil {
				r.Stop()
			}
			if !tt.ok(err) {
				t.Fatalf("Start: %v", err)
			}
			if strings.Contains(err.Error(), "--") {
				t.Fatalf("%q names a flag", err)
			}
		})
	}
	cfg := simConfig(t)
	cfg.URL, cfg.Sim = "http://127.0.0.1:1/v1", sim.Params{} // the sim's parameters are not the URL's concern
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestUnmeasurable: an objective the configuration cannot measure is
// refused at the start, typed: a stream objective without streaming, an
// energy one with no GPU read.
func TestUnmeasurable(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		why error
	}{
		{Config{URL: "http://127.0.0.1:9/v1", Probe: probe.Config{NoStream: true}, Objectives: mustObjectives(t, "ttft_p99<=1s")}, ErrNotStreamed},
		{Config{URL: "http://127.0.0.1:9/v1", Objectives: mustObjectives(t, "energy_per_token<=1J")}, ErrNoGPU},
	} {
		var ue *UnmeasurableError
		if err := c.cfg.measurable(); !errors.As(err, &ue) || !errors.Is(err, c.why) || ue.Expr != c.cfg.Objectives[0].Expr {
			t.Errorf("%+v: %v, want %v", c.cfg.Objectives, err, c.why)
		}
	}
	if err := (Config{Objectives: mustObjectives(t, "ttft_p99<=1s")}).measurable(); err != nil {
		t.Errorf("a streamed objective: %v", err)
	}
}

func mustObjectives(t *testing.T, exprs ...string) []slo.Objective {
	t.Helper()
	objs, err := slo.ParseAll(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
