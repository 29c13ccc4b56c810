package load

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestValidate: what cannot be right is refused, naming the setting in
// the engine's terms, and New refuses it too (instead of clamping it).
func TestValidate(t *testing.T) {
	k := Knobs{Concurrency: 4, PromptTokens: 8, OutputTokens: 4}
	open := Knobs{Mode: OpenLoop, Rate: 5, PromptTokens: 8, OutputTokens: 4}
	tests := []struct {
		name    string
		cfg     Config
		setting string
		msg     string
	}{
		{"negative concurrency", Config{Knobs: Knobs{Concurrency: -1, PromptTokens: 8, OutputTokens: 4}}, SettingConcurrency, "-1 is not within 1..10000"},
		{"closed loop of none", Config{Knobs: Knobs{PromptTokens: 8, OutputTokens: 4}}, SettingConcurrency, "0 is not within 1..10000"},
		{"concurrency past the most", Config{Knobs: Knobs{Concurrency: MaxConcurrency + 1, PromptTokens: 8, OutputTokens: 4}}, SettingConcurrency, "10001 is not within"},
		{"no prompt", Config{Knobs: Knobs{Concurrency: 1, OutputTokens: 4}}, SettingPromptTokens, "0 is not within 1..32768"},
		{"output past the most", Config{Knobs: Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 40000}}, SettingOutputTokens, "40000 is not within 1..32768"},
		{"negative rate", Config{Knobs: Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 4, Rate: -1}}, SettingRate, "-1 is not within 0..100000"},
		{"NaN rate", Config{Knobs: Knobs{Mode: OpenLoop, Rate: math.NaN(), PromptTokens: 8, OutputTokens: 4}}, SettingRate, "NaN"},
		{"open loop at no rate", Config{Knobs: Knobs{Mode: OpenLoop, PromptTokens: 8, OutputTokens: 4}}, SettingRate, "0 is under the open loop's least, 0.01"},
		{"open loop too slow", Config{Knobs: Knobs{Mode: OpenLoop, Rate: 0.001, PromptTokens: 8, OutputTokens: 4}}, SettingRate, "0.001 is under"},
		{"unknown mode", Config{Knobs: Knobs{Mode: 7, Concurrency: 1, PromptTokens: 8, OutputTokens: 4}}, SettingMode, "neither"},
		{"negative tick", Config{Knobs: k, Tick: -time.Second}, SettingTick, "-1s is under the least, 10ms"},
		{"tick too short", Config{Knobs: k, Tick: time.Millisecond}, SettingTick, "1ms is under the least, 10ms"},
		{"odd window", Config{Knobs: k, Window: 7 * time.Second}, SettingWindow, "7s is not one of 10s, 30s, 1m, 5m"},
		{"negative window", Config{Knobs: k, Window: -time.Minute}, SettingWindow, "-1m0s is not one of"},
		{"negative duration", Config{Knobs: k, Duration: -time.Second}, SettingDuration, "-1s is negative"},
		{"negative request limit", Config{Knobs: k, MaxRequests: -3}, SettingMaxRequests, "-3 is negative"},
		{"negative drain", Config{Knobs: k, Drain: -time.Second}, SettingDrain, "-1s is negative"},
		{"a drain and none", Config{Knobs: k, Drain: time.Second, NoDrain: true}, SettingDrain, "1s given with no drain"},
		{"negative goodput", Config{Knobs: k, Goodput: Goodput{TTFT: -time.Second}}, SettingGoodput, "negative"},
		{"prefix past the most", Config{Knobs: k, PrefixTokens: MaxPromptTokens + 1}, SettingPrefixTokens, "32769 is not within 0..32768"},
		{"negative warm-up", Config{Knobs: k, Warmup: Warmup{Requests: -1}}, SettingWarmup, "-1 requests is negative"},
		{"negative in-flight cap", Config{Knobs: open, MaxInFlight: -1}, SettingMaxInFlight, "-1 is negative"},
		{"unknown length shape", Config{Knobs: k, PromptLength: Length{Kind: "zipf"}}, SettingPromptLength, `unknown kind "zipf"`},
		{"uniform below zero", Config{Knobs: k, OutputLength: Length{Kind: "uniform", Spread: 1.5}}, SettingOutputLength, "reaches below zero"},
		{"negative spread", Config{Knobs: k, OutputLength: Length{Kind: "normal", Spread: -1}}, SettingOutputLength, "-1 is not a fraction"},
		{"unknown arrivals", Config{Knobs: open, Arrivals: Arrivals{Kind: "bursty"}}, SettingArrivals, `unknown arrival process "bursty"`},
		{"gamma of no shape", Config{Knobs: open, Arrivals: Arrivals{Kind: "gamma"}}, SettingBurstiness, "0 is not positive"},
		{"stage past the most", Config{Knobs: k, Stages: []Stage{{Duration: time.Second}, {Duration: time.Second, Concurrency: 20000}}}, SettingStages, "stage 2: concurrency 20000 is past the most, 10000"},
		{"stage of no time", Config{Knobs: k, Stages: []Stage{{Concurrency: 2}}}, SettingStages, "stage 1: needs a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, err := range []error{tt.cfg.Validate(), func() error { c := tt.cfg; c.Do = fakeDo(0); _, err := New(c); return err }()} {
				var se *SettingError
				if !errors.As(err, &se) || se.Setting != tt.setting || !strings.Contains(se.Err.Error(), tt.msg) {
					t.Fatalf("got %v, want a %s error saying %q", err, tt.setting, tt.msg)
				}
				if want := tt.setting + ": "; !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("%q does not start with %q", err, want)
				}
			}
		})
	}
}

// TestValidateZero: zero keeps meaning the default, or no limit; an open
// loop needs no concurrency; the first stage sets where the run starts.
func TestValidateZero(t *testing.T) {
	for name, cfg := range map[string]Config{
		"zeros":          {Knobs: Knobs{Concurrency: 1, PromptTokens: 1, OutputTokens: 1}},
		"open loop":      {Knobs: Knobs{Mode: OpenLoop, Rate: MinRate, PromptTokens: 8, OutputTokens: 4}},
		"limits":         {Knobs: Knobs{Concurrency: MaxConcurrency, PromptTokens: MaxPromptTokens, OutputTokens: MaxOutputTokens, Rate: MaxRate}},
		"first stage":    {Knobs: Knobs{PromptTokens: 8, OutputTokens: 4}, Stages: []Stage{{Duration: time.Second, Rate: 3}}},
		"no drain":       {Knobs: Knobs{Concurrency: 1, PromptTokens: 8, OutputTokens: 4}, NoDrain: true},
		"every setting":  {Knobs: Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: MinTick, Window: 5 * time.Minute, Duration: time.Second, MaxRequests: 3, Drain: time.Second, Arrivals: Arrivals{Kind: "gamma", Burstiness: 0.5}, PromptLength: Length{Kind: "uniform", Spread: 1}},
		"closed, a rate": {Knobs: Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4, Rate: 7}},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	e, err := New(Config{Do: fakeDo(0), Knobs: Knobs{Mode: OpenLoop, Rate: 1, PromptTokens: 8, OutputTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if e.cfg.Tick != DefaultTick || e.cfg.Window != DefaultWindow || e.cfg.Drain != DefaultDrain || e.cfg.Arrivals.Kind != "constant" {
		t.Fatalf("defaults: tick %v, window %v, drain %v, arrivals %q", e.cfg.Tick, e.cfg.Window, e.cfg.Drain, e.cfg.Arrivals.Kind)
	}
	if k := e.Knobs(); k.Concurrency != 1 { // where a later closed loop starts
		t.Fatalf("open loop's concurrency %d, want 1", k.Concurrency)
	}
}

// TestParseRefusesPastLimits: a walk past a knob's limit is refused where
// it is read, not clamped when it is walked.
func TestParseRefusesPastLimits(t *testing.T) {
	for _, spec := range []string{"concurrency=20000,duration=1s", "rate=0.001,duration=1s", "prompt=40000,duration=1s", "rate=NaN,duration=1s"} {
		if _, err := ParseStages(spec); err == nil {
			t.Errorf("ParseStages(%q) accepted", spec)
		}
	}
	for _, tc := range []struct {
		spec string
		open bool
	}{{"1:20000:10s", false}, {"0.5:4:10s", false}, {"0.05:5:10s", true}, {"1:200000:10s", true}, {"NaN:2:10s", false}} {
		if _, err := Ramp(tc.spec, tc.open); err == nil {
			t.Errorf("Ramp(%q, %v) accepted", tc.spec, tc.open)
		}
	}
	if _, err := Ramp("1:10000:2s", false); err != nil {
		t.Errorf("a ramp to the most: %v", err)
	}
}

// TestNoDrain: with no drain, what is in flight when the run ends is
// cancelled at once and counted incomplete. In a synctest bubble's
// virtual time: on the real clock a busy machine could start none of the
// three requests within the run's 100 ms (it did: incomplete 0, at a
// load average of 5 on two cores).
func TestNoDrain(t *testing.T) { synctest.Test(t, testNoDrain) }

func testNoDrain(t *testing.T) {
	start := time.Now()
	s := runFor(t, Config{Do: fakeDo(-1), Knobs: Knobs{Concurrency: 3, PromptTokens: 8, OutputTokens: 4}, Duration: 100 * time.Millisecond, NoDrain: true}, 10*time.Second)
	if s.Incomplete != 3 || s.InFlight != 0 {
		t.Fatalf("incomplete %d, in flight %d; want 3, 0", s.Incomplete, s.InFlight)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the run took %v to end with no drain", d)
	}
}
