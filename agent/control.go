package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/infertop/infertop/load"
)

// Knobs are the whole load's knobs, as a follower sends them (Control)
// and an agent says it knows them (State.Whole): each agent runs its
// share of them (Share.Knobs).
type Knobs struct {
	Mode         string  `json:"mode"`
	Concurrency  int     `json:"concurrency"`
	Rate         float64 `json:"rate"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Paused       bool    `json:"paused"`
	Speed        float64 `json:"speed"`
}

// KnobsOf is k on the wire.
func KnobsOf(k load.Knobs) Knobs {
	return Knobs{Mode: k.Mode.String(), Concurrency: k.Concurrency, Rate: k.Rate, PromptTokens: k.PromptTokens, OutputTokens: k.OutputTokens,
		Paused: k.Paused, Speed: k.Speed}
}

// Load is k as the engine's knobs; a mode other than "open" or "closed"
// is refused.
func (k Knobs) Load() (load.Knobs, error) {
	out := load.Knobs{Concurrency: k.Concurrency, Rate: k.Rate, PromptTokens: k.PromptTokens, OutputTokens: k.OutputTokens, Paused: k.Paused,
		Speed: k.Speed}
	switch k.Mode {
	case "closed":
	case "open":
		out.Mode = load.OpenLoop
	default:
		return load.Knobs{}, fmt.Errorf("agent: the mode %q is neither open nor closed: %w", k.Mode, ErrControl)
	}
	return out, nil
}

// Control is a follower's word to its agents (POST /control): the whole
// load's knobs as it wants them, each agent taking its share; the
// rolling window; a reset. Seq orders the controls: an agent takes one
// only when its Seq is past the last it took, so a repeated or stale one
// is applied once. A follower sends its latest control, whole, to an
// agent behind it (one that came late or started again).
type Control struct {
	Seq uint64 `json:"seq"`
	// Knobs are the whole load's (nil: unchanged).
	Knobs *Knobs `json:"knobs,omitempty"`
	// WindowMS is the rolling window, one of load.Windows (0: unchanged).
	WindowMS int64 `json:"window_ms,omitempty"`
	// ResetSeq is the Seq of the follower's latest reset (0: none): an
	// agent whose last control is older resets its statistics.
	ResetSeq uint64 `json:"reset_seq,omitempty"`
	// Phase, when past the last an agent took, starts a phase of this id
	// (or the next free one) on every agent, its knobs changed or not: a
	// capacity search's steps are phases of the whole, each one id in
	// every agent's result, merged by it (0: none; a change of the knobs
	// without it starts a phase of the agent's own numbering).
	Phase int `json:"phase,omitempty"`
	// Finish ends every agent's run: no new request starts, those in
	// flight finish (its --drain), and its result is its last word (the
	// end of a capacity search over the agents, which leaves them no
	// load to hold).
	Finish bool `json:"finish,omitempty"`
}

// MaxPhase bounds a control's phase id: a search's steps are a few
// dozen phases, a person's keys some hundreds.
const MaxPhase = 1 << 20

// MaxSeq bounds a control's seq and reset seq: a follower counts them
// from 1, a control at a time, and one past it would wrap the next
// follower's count (2^64-1 + 1 is 0, and no control is past it again).
const MaxSeq = 1 << 53

// MaxControlBytes bounds a control's body.
const MaxControlBytes = 16 << 10

// ErrControl is a control an agent refuses: knobs out of their limits,
// or ones that leave its share nothing.
var ErrControl = errors.New("a control refused")

// FinishWhy is why an agent's run ended when its follower finished it.
const FinishWhy = "the follower ended the run"

// Knobs is this share of the whole knobs: the concurrency split with the
// remainder spread over the first indexes, the rate split n ways (as
// Board.Cut splits the load's flags); the rest as the whole's.
func (s Share) Knobs(whole load.Knobs) load.Knobs {
	k := whole
	k.Concurrency = int(s.Count(int64(whole.Concurrency)))
	k.Rate = s.Rate(whole.Rate)
	return k
}

// CheckKnobs refuses whole knobs out of their limits or that leave this
// share nothing, saying which in a line.
func (s Share) CheckKnobs(whole load.Knobs) error {
	k := s.Knobs(whole)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("agent %d of %d: %s: %w", s.Index, s.Of, fmt.Sprintf(format, args...), ErrControl)
	}
	switch {
	case whole.Concurrency < 0 || k.Concurrency > load.MaxConcurrency:
		return bad("a concurrency of %d is outside 0..%d a share", whole.Concurrency, load.MaxConcurrency)
	case k.Concurrency < 1 && whole.Mode == load.ClosedLoop:
		return bad("a concurrency of %d split %d ways leaves this share none", whole.Concurrency, s.Of)
	case whole.PromptTokens < 1 || whole.PromptTokens > load.MaxPromptTokens:
		return bad("a prompt of %d tokens is outside 1..%d", whole.PromptTokens, load.MaxPromptTokens)
	case whole.OutputTokens < 1 || whole.OutputTokens > load.MaxOutputTokens:
		return bad("an output of %d tokens is outside 1..%d", whole.OutputTokens, load.MaxOutputTokens)
	case math.IsNaN(whole.Rate) || whole.Rate < 0 || k.Rate > load.MaxRate:
		return bad("a rate of %g is outside 0..%g a share", whole.Rate, float64(load.MaxRate))
	case whole.Mode == load.OpenLoop && k.Rate < load.MinRate:
		return bad("a rate of %g split %d ways is below the open loop's slowest (%g) a share", whole.Rate, s.Of, load.MinRate)
	case math.IsNaN(whole.Speed) || whole.Speed < 0 || whole.Speed > load.MaxSpeed:
		return bad("a speed of %g is outside 0..%g", whole.Speed, float64(load.MaxSpeed))
	}
	return nil
}

// ClampWhole brings whole knobs of a load split n ways inside the limits
// every share is held to, as the engine clamps a key: no share without a
// request in flight, none past a knob's limit.
func ClampWhole(k load.Knobs, n int) load.Knobs {
	n = max(n, 1)
	k.Concurrency = min(max(k.Concurrency, n), n*load.MaxConcurrency)
	k.PromptTokens = min(max(k.PromptTokens, 1), load.MaxPromptTokens)
	k.OutputTokens = min(max(k.OutputTokens, 1), load.MaxOutputTokens)
	k.Rate = min(max(k.Rate, 0), float64(n)*load.MaxRate)
	if k.Mode == load.OpenLoop && k.Rate < float64(n)*load.MinRate {
		k.Rate = float64(n) * load.MinRate
	}
	return k
}

// DecodeControl reads one control from r, strictly: an unknown field,
// trailing data or a body past MaxControlBytes is refused. The body is
// read whole first: json.Decoder.More takes a stray ']' or '}' after the
// object for the end of the input, and what lies past the bound would go
// unread.
func DecodeControl(r io.Reader) (Control, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxControlBytes+1))
	if err != nil {
		return Control{}, fmt.Errorf("agent: the control: %w", err)
	}
	if len(body) > MaxControlBytes {
		return Control{}, fmt.Errorf("agent: the control is past %d bytes", MaxControlBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var c Control
	if err := dec.Decode(&c); err != nil {
		return Control{}, fmt.Errorf("agent: the control: %w", err)
	}
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) > 0 { // JSON's whitespace only
		return Control{}, errors.New("agent: the control: data after its object")
	}
	if c.Seq == 0 {
		return Control{}, errors.New("agent: the control has no seq (they count from 1)")
	}
	if c.Seq > MaxSeq || c.ResetSeq > MaxSeq {
		return Control{}, fmt.Errorf("agent: the control's seq %d or reset seq %d is past %d", c.Seq, c.ResetSeq, uint64(MaxSeq))
	}
	if c.Phase < 0 || c.Phase > MaxPhase {
		return Control{}, fmt.Errorf("agent: the control's phase %d is outside 0..%d", c.Phase, MaxPhase)
	}
	return c, nil
}

// window is c's window (0: unchanged), refused unless one of
// load.Windows.
func (c Control) window() (time.Duration, error) {
	if c.WindowMS == 0 {
		return 0, nil
	}
	w := time.Duration(c.WindowMS) * time.Millisecond
	if !slices.Contains(load.Windows(), w) {
		return 0, fmt.Errorf("agent: a window of %v is none of %v: %w", w, load.Windows(), ErrControl)
	}
	return w, nil
}

// knobText is k in a line, for the agent's log.
func knobText(k load.Knobs) string {
	s := fmt.Sprintf("%s loop, concurrency %d, rate %g, prompt %d, output %d", k.Mode, k.Concurrency, k.Rate, k.PromptTokens, k.OutputTokens)
	if k.Paused {
		s += ", paused"
	}
	return s
}
