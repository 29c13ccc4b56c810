package load

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stage is one step of a scripted walk: the knobs it sets (zero leaves a
// knob as it is; a rate opens the loop, a concurrency closes it) and how
// long it lasts. Every stage is a phase.
type Stage struct {
	Duration                   time.Duration
	Concurrency                int
	Rate                       float64
	PromptTokens, OutputTokens int
}

// ParseStages reads 'concurrency=8,duration=30s;rate=50,duration=1m;...'
// (keys: concurrency, rate, prompt, output, duration).
func ParseStages(s string) ([]Stage, error) {
	var out []Stage
	for i, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var st Stage
		for _, kv := range strings.Split(part, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("stage %d: %q is not key=value", i+1, kv)
			}
			var err error
			switch k {
			case "duration":
				st.Duration, err = time.ParseDuration(v)
			case "concurrency", "c":
				st.Concurrency, err = strconv.Atoi(v)
			case "rate":
				st.Rate, err = strconv.ParseFloat(v, 64)
			case "prompt", "prompt_tokens":
				st.PromptTokens, err = strconv.Atoi(v)
			case "output", "output_tokens":
				st.OutputTokens, err = strconv.Atoi(v)
			default:
				return nil, fmt.Errorf("stage %d: unknown key %q (concurrency, rate, prompt, output, duration)", i+1, k)
			}
			if err != nil {
				return nil, fmt.Errorf("stage %d: bad %s %q", i+1, k, v)
			}
			// A knob left out keeps its value; one given as 0 is no
			// setting (it ran at the knob's value before, 8).
			if k != "duration" && strings.TrimSpace(v) != "" && isZero(v) {
				return nil, fmt.Errorf("stage %d: %s=%s: leave the key out to keep the value, or give one of at least %s", i+1, k, v, least(k))
			}
		}
		if err := st.check(); err != nil { // Validate's check: a walk past a limit is refused here, not clamped later
			return nil, fmt.Errorf("stage %d: %w", i+1, err)
		}
		out = append(out, st)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no stages in %q", s)
	}
	return out, nil
}

// Ramp reads 'FROM:TO:DURATION' and returns one-second stages walking the
// concurrency (or, when open, the rate) linearly from FROM to TO; the last
// stage holds TO for a second. FROM and TO are within the knob's limits:
// 1..MaxConcurrency, or 0.1..MaxRate (a ramp's rates are tenths).
func Ramp(spec string, open bool) ([]Stage, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("bad ramp %q: want FROM:TO:DURATION", spec)
	}
	from, err1 := strconv.ParseFloat(parts[0], 64)
	to, err2 := strconv.ParseFloat(parts[1], 64)
	d, err3 := time.ParseDuration(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || !(from > 0) || !(to > 0) || d < time.Second {
		return nil, fmt.Errorf("bad ramp %q: want positive FROM and TO and a DURATION of a second or more", spec)
	}
	least, most, what := 1.0, float64(MaxConcurrency), "concurrency"
	if open {
		least, most, what = 0.1, MaxRate, "rate"
	}
	if from < least || to < least || from > most || to > most {
		return nil, fmt.Errorf("bad ramp %q: a %s ramp's FROM and TO must be within %v..%v", spec, what, least, most)
	}
	steps := int(d / time.Second)
	var out []Stage
	for i := 0; i <= steps; i++ {
		v := from + (to-from)*float64(i)/float64(steps)
		st := Stage{Duration: time.Second}
		if open {
			st.Rate = math.Round(v*10) / 10
		} else {
			st.Concurrency = int(math.Round(v))
		}
		if len(out) > 0 && out[len(out)-1].Rate == st.Rate && out[len(out)-1].Concurrency == st.Concurrency {
			out[len(out)-1].Duration += time.Second // no change: a longer step
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// Apply sets the knobs the stage names.
func (st Stage) Apply(k *Knobs) {
	if st.Concurrency > 0 {
		k.Mode, k.Concurrency = ClosedLoop, st.Concurrency
	}
	if st.Rate > 0 {
		k.Mode, k.Rate = OpenLoop, st.Rate
	}
	if st.PromptTokens > 0 {
		k.PromptTokens = st.PromptTokens
	}
	if st.OutputTokens > 0 {
		k.OutputTokens = st.OutputTokens
	}
}

// Walk applies the stages in turn, each for its duration, every one a new
// phase; it returns nil when the last is over, or ctx's error.
func (e *Engine) Walk(ctx context.Context, stages []Stage) error {
	for i, st := range stages {
		e.beginStage(ctx, i, st)
		t := time.NewTimer(st.Duration)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// beginStage starts stage i of a walk. The first stage is the opening
// phase when the engine started with its knobs (Stage.Apply on
// Config.Knobs); every later one is new, and starts with the server's
// prefix cache emptied where asked (the first one's was before the run).
// A refusal is counted in the snapshots; the walk goes on.
func (e *Engine) beginStage(ctx context.Context, i int, st Stage) {
	if i > 0 {
		_ = e.ResetCache(ctx)
	}
	e.update(st.Apply, i > 0)
}

// isZero reports whether a stage's number v is zero.
func isZero(v string) bool {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return err == nil && f == 0
}

// least is the least value of a stage's key k.
func least(k string) string {
	if k == "rate" {
		return strconv.FormatFloat(MinRate, 'g', -1, 64)
	}
	return "1"
}
