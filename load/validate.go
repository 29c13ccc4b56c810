package load

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// SettingError is a setting of Config the engine cannot use. Setting names
// it in the engine's own terms (one of the Setting* constants), so that a
// command line can name its flag instead; Err says what is wrong with the
// value, in words that read after either name ("-1 is not within
// 1..10000").
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// The settings a SettingError names.
const (
	SettingConcurrency  = "concurrency"         // Knobs.Concurrency
	SettingPromptTokens = "prompt tokens"       // Knobs.PromptTokens
	SettingOutputTokens = "output tokens"       // Knobs.OutputTokens
	SettingRate         = "rate"                // Knobs.Rate
	SettingMode         = "mode"                // Knobs.Mode
	SettingTick         = "tick"                // Tick
	SettingWindow       = "window"              // Window
	SettingDuration     = "duration"            // Duration
	SettingMaxRequests  = "request limit"       // MaxRequests
	SettingDrain        = "drain"               // Drain, NoDrain
	SettingStages       = "stages"              // Stages
	SettingGoodput      = "goodput limits"      // Goodput
	SettingPromptLength = "prompt length shape" // PromptLength
	SettingOutputLength = "output length shape" // OutputLength
	SettingPrefixTokens = "prefix tokens"       // PrefixTokens
	SettingWarmup       = "warm-up"             // Warmup
	SettingArrivals     = "arrivals"            // Arrivals.Kind
	SettingBurstiness   = "burstiness"          // Arrivals.Burstiness
	SettingMaxInFlight  = "in-flight cap"       // MaxInFlight
	SettingDataset      = "dataset"             // LoadDataset's path
	SettingTrace        = "trace"               // Trace, LoadTrace's path
	SettingPrefixGroups = "prefix groups"       // PrefixGroups
	SettingSessions     = "sessions"            // Sessions
	SettingMix          = "model mix"           // Mix
	SettingCacheBust    = "cache bust"          // CacheBust
)

// MinTick is the shortest snapshot interval: every tick merges the
// window's histograms (about 1.75 ms), so a shorter one spends the
// aggregator on snapshots nobody can read.
const MinTick = 10 * time.Millisecond

// Validate reports the first setting of c the engine cannot use, as a
// *SettingError. Zero keeps meaning what the fields document (the default,
// or no limit); what cannot be right (a negative count, a knob past its
// limit, a window the engine does not keep) is refused here rather than
// quietly brought in range, so that a typo is not measured as if it were
// meant. The function to send requests (Do) is New's to check: a caller
// may validate a configuration before it has one.
func (c Config) Validate() error {
	if err := c.prepareTrace(); err != nil { // a replay's knobs are the trace's, whatever was given (an agent's share of -c may be 0)
		return err
	}
	if err := c.Mix.check(); len(c.Mix) > 0 && err != nil {
		return &SettingError{SettingMix, err}
	}
	k := c.Knobs
	for i, st := range c.Stages {
		if err := st.check(); err != nil {
			return &SettingError{SettingStages, fmt.Errorf("stage %d: %w", i+1, err)}
		}
	}
	if len(c.Stages) > 0 { // the first stage is where the run starts
		c.Stages[0].Apply(&k)
	}
	if err := k.check(); err != nil {
		return err
	}
	if err := c.checkOpenFiles(k.Concurrency, c.Stages); err != nil {
		return err
	}
	switch {
	case c.Tick < 0 || c.Tick > 0 && c.Tick < MinTick:
		return &SettingError{SettingTick, fmt.Errorf("%v is under the least, %v", c.Tick, MinTick)}
	case c.Window != 0 && !slices.Contains(Windows(), c.Window):
		return &SettingError{SettingWindow, fmt.Errorf("%v is not one of %s", c.Window, windowNames())}
	case c.Duration < 0:
		return &SettingError{SettingDuration, fmt.Errorf("%v is negative", c.Duration)}
	case c.MaxRequests < 0:
		return &SettingError{SettingMaxRequests, fmt.Errorf("%d is negative", c.MaxRequests)}
	case c.Drain < 0:
		return &SettingError{SettingDrain, fmt.Errorf("%v is negative", c.Drain)}
	case c.NoDrain && c.Drain != 0:
		return &SettingError{SettingDrain, fmt.Errorf("%v given with no drain", c.Drain)}
	case c.Goodput.TTFT < 0 || c.Goodput.TPOT < 0 || c.Goodput.E2E < 0 || c.Goodput.TTFO < 0:
		return &SettingError{SettingGoodput, errors.New("a limit is negative")}
	case c.PrefixTokens < 0 || c.PrefixTokens > MaxPromptTokens:
		return &SettingError{SettingPrefixTokens, fmt.Errorf("%d is not within 0..%d", c.PrefixTokens, MaxPromptTokens)}
	case c.PrefixGroups < 0 || c.PrefixGroups > MaxPrefixGroups:
		return &SettingError{SettingPrefixGroups, fmt.Errorf("%d is not within 0..%d", c.PrefixGroups, MaxPrefixGroups)}
	case c.CacheBust && c.PrefixTokens > 0:
		return &SettingError{SettingCacheBust, errors.New("each prompt's own marker would open it before the shared prefix and unshare it: give a marker or a shared prefix, not both")}
	case c.PrefixGroups > 1 && c.PrefixTokens == 0:
		return &SettingError{SettingPrefixGroups, errors.New("groups of prefixes need a prefix length (--prefix-tokens)")}
	case c.Warmup.Requests < 0:
		return &SettingError{SettingWarmup, fmt.Errorf("%d requests is negative", c.Warmup.Requests)}
	case c.Warmup.Duration < 0:
		return &SettingError{SettingWarmup, fmt.Errorf("%v is negative", c.Warmup.Duration)}
	case c.MaxInFlight < 0:
		return &SettingError{SettingMaxInFlight, fmt.Errorf("%d is negative", c.MaxInFlight)}
	}
	if err := c.PromptLength.check(); err != nil {
		return &SettingError{SettingPromptLength, err}
	}
	if err := c.OutputLength.check(); err != nil {
		return &SettingError{SettingOutputLength, err}
	}
	if c.Arrivals.Kind != "" {
		if err := c.Arrivals.check(); err != nil {
			return err
		}
	}
	return nil
}

// checkOpenFiles refuses a concurrency, at the start or in a stage, past
// what the open-file limit allows: past it the client fails for want of
// descriptors, and those failures are no measure of the endpoint.
func (c Config) checkOpenFiles(start int, stages []Stage) error {
	most := c.maxConcurrency()
	if most >= MaxConcurrency {
		return nil // the knob's own limit says it (check)
	}
	n := start
	for _, st := range stages {
		n = max(n, st.Concurrency)
	}
	if n <= most {
		return nil
	}
	return &SettingError{SettingConcurrency, fmt.Errorf("%d is past the %d requests in flight the open-file limit of %d allows (raise it with ulimit -n)",
		n, most, c.OpenFiles)}
}

// check reports the first knob out of its limits. In the open loop the
// concurrency may be zero: it is only where a later closed loop starts
// (at 1).
func (k Knobs) check() error {
	least := 1
	if k.Mode == OpenLoop {
		least = 0
	}
	switch {
	case k.Mode != ClosedLoop && k.Mode != OpenLoop:
		return &SettingError{SettingMode, fmt.Errorf("%d is neither the closed nor the open loop", k.Mode)}
	case k.Concurrency < least || k.Concurrency > MaxConcurrency:
		return &SettingError{SettingConcurrency, fmt.Errorf("%d is not within %d..%d", k.Concurrency, least, MaxConcurrency)}
	case k.PromptTokens < 1 || k.PromptTokens > MaxPromptTokens:
		return &SettingError{SettingPromptTokens, fmt.Errorf("%d is not within 1..%d", k.PromptTokens, MaxPromptTokens)}
	case k.OutputTokens < 1 || k.OutputTokens > MaxOutputTokens:
		return &SettingError{SettingOutputTokens, fmt.Errorf("%d is not within 1..%d", k.OutputTokens, MaxOutputTokens)}
	case !(k.Rate >= 0 && k.Rate <= MaxRate): // NaN too
		return &SettingError{SettingRate, fmt.Errorf("%v is not within 0..%d requests per second", k.Rate, MaxRate)}
	case k.Mode == OpenLoop && k.Rate < MinRate:
		return &SettingError{SettingRate, fmt.Errorf("%v is under the open loop's least, %v requests per second", k.Rate, MinRate)}
	}
	return nil
}

// check reports what is wrong with a stage, in words that follow
// "stage N: " (ParseStages and Validate both say which).
func (st Stage) check() error {
	switch {
	case st.Duration <= 0:
		return errors.New("needs a positive duration")
	case st.Concurrency < 0 || !(st.Rate >= 0) || st.PromptTokens < 0 || st.OutputTokens < 0:
		return errors.New("values must not be negative")
	case st.Concurrency > 0 && st.Rate > 0:
		return errors.New("give a concurrency (closed loop) or a rate (open loop), not both")
	case st.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency %d is past the most, %d", st.Concurrency, MaxConcurrency)
	case st.Rate > MaxRate:
		return fmt.Errorf("rate %v is past the most, %d requests per second", st.Rate, MaxRate)
	case st.Rate > 0 && st.Rate < MinRate:
		return fmt.Errorf("rate %v is under the open loop's least, %v requests per second", st.Rate, MinRate)
	case st.PromptTokens > MaxPromptTokens:
		return fmt.Errorf("prompt %d is past the most, %d tokens", st.PromptTokens, MaxPromptTokens)
	case st.OutputTokens > MaxOutputTokens:
		return fmt.Errorf("output %d is past the most, %d tokens", st.OutputTokens, MaxOutputTokens)
	}
	return nil
}

// check reports a shape the draws cannot follow. Spread is a fraction of
// the centre: a uniform one past 1 would reach below zero tokens.
func (l Length) check() error {
	switch l.Kind {
	case "", "fixed", "uniform", "normal":
	default:
		return fmt.Errorf("unknown kind %q (fixed, uniform or normal)", l.Kind)
	}
	switch {
	case !(l.Spread >= 0) || math.IsInf(l.Spread, 1):
		return fmt.Errorf("spread %v is not a fraction of the centre", l.Spread)
	case l.Kind == "uniform" && l.Spread > 1:
		return fmt.Errorf("a uniform spread of %v reaches below zero tokens", l.Spread)
	}
	return nil
}

// check reports an arrival process the open loop does not know.
func (a Arrivals) check() error {
	switch a.Kind {
	case "constant", "poisson":
	case "gamma":
		if !(a.Burstiness > 0) || math.IsInf(a.Burstiness, 1) {
			return &SettingError{SettingBurstiness, fmt.Errorf("%v is not positive", a.Burstiness)}
		}
	default:
		return &SettingError{SettingArrivals, fmt.Errorf("unknown arrival process %q (want constant, poisson or gamma)", a.Kind)}
	}
	return nil
}

// windowNames lists Windows as a person writes them: 10s, 30s, 1m, 5m.
func windowNames() string {
	var names []string
	for _, w := range Windows() {
		if w%time.Minute == 0 {
			names = append(names, fmt.Sprintf("%dm", w/time.Minute))
		} else {
			names = append(names, fmt.Sprintf("%ds", w/time.Second))
		}
	}
	return strings.Join(names, ", ")
}
