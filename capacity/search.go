// Package capacity finds how much load an endpoint carries inside its
// objectives: the highest concurrency (or request rate) at which every
// objective holds, found live by driving the engine's knobs as a person at
// the keys would. A search walks the load up geometrically until an
// objective breaks, then bisects between the last step that held and the
// first that broke, to a stated resolution. Each step is a warm-up phase
// (kept out of its figures) and a measured phase, held until its figures
// can be judged; every step is kept, so the result shows its work: the
// capacity curve, with the knee marked.
//
// The search imports the engine and the objectives only: the headless run
// drives it to the end of a run, and a dashboard can drive it live (its
// Progress values are plain, its context ends it, a cause of ErrTakenOver
// says a person took the knobs back). Live is that driver: one search at a
// time on a goroutine it owns, its news merged until a reader takes it, so
// the dashboard that shows it links no search and the search waits on no
// view.
package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// Over names the knob a search walks.
type Over string

// The knobs a search can walk.
const (
	// Concurrency walks the closed loop's requests in flight.
	Concurrency Over = "concurrency"
	// Rate walks the open loop's requests per second.
	Rate Over = "rate"
)

// ParseResolution reads a search's resolution: '5%' or '0.05', a
// fraction within (0, 1).
func ParseResolution(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || v <= 0 || v >= 1 {
		return 0, fmt.Errorf("want a fraction such as 5%% or 0.05, got %q", s)
	}
	return v, nil
}

// ParseOver reads "concurrency" or "rate".
func ParseOver(s string) (Over, error) {
	switch Over(s) {
	case Concurrency, Rate:
		return Over(s), nil
	}
	return "", fmt.Errorf("bad knob %q to search over: want concurrency or rate", s)
}

// Unit is how a load over o is written after its number.
func (o Over) Unit() string {
	if o == Rate {
		return "req/s"
	}
	return "in flight"
}

// Format writes a load over o: an integer concurrency, a rate to 3
// significant digits.
func (o Over) Format(v float64) string {
	if o == Rate {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// Errors that end a search before it is over. Run returns the steps
// finished so far with them.
var (
	// ErrTakenOver is the cause to cancel a search's context with when a
	// person takes the knobs back (a dashboard's key); Run also returns it
	// when it sees a phase it did not start.
	ErrTakenOver = errors.New("a person took over the knobs")
	// ErrRunEnded: the run ended (a limit, a signal) or the engine stopped
	// before the search was over.
	ErrRunEnded = errors.New("the run ended before the search was over")
)

// Engine is what a search needs of the load: *load.Engine is one. The
// knobs are turned only through NewPhase, as a person's keys turn them.
type Engine interface {
	// NewPhase sets the knobs and starts a phase, returning its id.
	NewPhase(func(*load.Knobs)) (load.Knobs, int)
	// Ending is closed once the run is ending.
	Ending() <-chan struct{}
}

// CacheResetter is an engine that empties the server's prefix cache
// where it was asked to (load's --reset-prefix-cache; nothing
// otherwise): each step calls it before its warm-up, so that each
// starts cold.
type CacheResetter interface {
	ResetCache(ctx context.Context) error
}

// Shared is an engine whose load is split between machines (the agents,
// each running a share of the whole): it takes a step only once it knows
// the whole load, and no step below one request in flight (or the open
// loop's slowest rate) a share. A search over one waits for Ready and
// starts no lower than Least.
type Shared interface {
	Engine
	// Ready is closed once the engine takes a step.
	Ready() <-chan struct{}
	// Least is the lowest load over o the engine takes.
	Least(o Over) float64
	// Knobs are the whole load's knobs, once Ready: a measurement given
	// no load holds the load the machines run.
	Knobs() load.Knobs
}

// Hold says how long a step is held before it is judged.
type Hold struct {
	// Warmup is the least time a step runs before its measured phase
	// starts. The warm-up also lasts until as many requests have finished
	// as were in flight at the step's start, and as the step's
	// concurrency: one turnover, so that the measured phase starts in the
	// new steady state, the queue an over-saturated step left drained
	// (at most MaxTime).
	Warmup time.Duration
	// MinRequests and MinTime are the least a measured phase is held:
	// requests finished in it, and time. MaxTime is the most: the step is
	// judged then on what it has (nothing measured breaks it).
	MinRequests      int64
	MinTime, MaxTime time.Duration
	// ClearMargin ends a step early as held once MinTime has passed, a
	// few requests (at least 10, or MinRequests if fewer) have finished
	// and every objective is clear of its limit by this factor (a latency
	// at most ClearMargin of its limit, a throughput at least its limit
	// over ClearMargin): the walk up spends its time near the knee, not
	// far below it, where a slow step yields few requests. 0 never.
	ClearMargin float64
}

// DefaultHold is the hold of a step when none is given: enough for a p99
// over a few hundred requests on a real endpoint, short enough that a
// full search takes minutes.
func DefaultHold() Hold {
	return Hold{Warmup: 2 * time.Second, MinRequests: 50, MinTime: 10 * time.Second, MaxTime: time.Minute, ClearMargin: 0.5}
}

// Search is one search's settings. The zero values of From, To, Min,
// Factor, Resolution and Hold take the defaults (DefaultHold).
type Search struct {
	// Objectives must all hold at the load found (at least one).
	Objectives []slo.Objective
	// Over is the knob walked (default Concurrency).
	Over Over
	// From is the first step's load; To the highest tried (defaults:
	// concurrency 1 to 1024, rate 1 to 10000 req/s). Min is the lowest a
	// walk down tries when From already breaks (1, or 0.1 req/s).
	From, To, Min float64
	// Factor is the walk's ratio between steps (default 2).
	Factor float64
	// Resolution ends the bisection once the first step that broke is
	// within this fraction of the last that held (default 0.05; a
	// concurrency is never resolved finer than 1).
	Resolution float64
	// Prompt and Output, when positive, set the prompt and output length
	// knobs at every step (a cell of a Matrix).
	Prompt, Output int
	// Hold is how long each step is held.
	Hold Hold
	// Progress, if set, is told what the search is doing at every
	// snapshot it reads, on the search's goroutine: it must not block.
	Progress func(Progress)
	// OnStep, if set, is given each step once it is judged, on the
	// search's goroutine (it must not block): a live view draws the
	// curve as it comes in, where the Result comes only at the end.
	OnStep func(Step)
}

// Progress is what a search is doing, as plain values.
type Progress struct {
	// Step counts steps from 1; Load is its load over Over.
	Step int
	Over Over
	Load float64
	// State is StateWarmup or StateHolding while a step runs, then
	// StateHeld or StateBroke once it is judged.
	State string
	// Left is how long the state lasts at most (MaxTime bounds it);
	// Need how long it lasts at least (MinTime). Requests counts the
	// measured phase's finished requests, NeedRequests the hold's least.
	Left, Need             time.Duration
	Requests, NeedRequests int64
	// Good is the highest load that held so far, Bad the lowest that
	// broke (0: none yet).
	Good, Bad float64
}

// The states of a step.
const (
	StateWarmup  = "warming up"
	StateHolding = "holding"
	// StateSettling: the hold is over; the step's last requests are
	// coming back, at the same load, before it is judged.
	StateSettling = "settling"
	// StateDraining: the load is paused while the queue an
	// over-saturated step left finishes, before the next step starts.
	StateDraining = "draining the queue"
	StateHeld     = "held"
	StateBroke    = "broke"
)

// String says it in a line: "step 3 · concurrency 16 · holding 8s more (37 of 50 requests)".
func (p Progress) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d · %s %s · %s", p.Step, p.Over, p.Over.Format(p.Load), p.State)
	switch p.State {
	case StateWarmup:
		if p.Need > 0 {
			fmt.Fprintf(&b, " %s more", p.Need.Round(time.Second))
		}
	case StateHolding:
		fmt.Fprintf(&b, " %s more (%d of %d requests; at most %s)", p.Need.Round(time.Second), p.Requests, p.NeedRequests, p.Left.Round(time.Second))
	}
	if p.Good > 0 || p.Bad > 0 {
		fmt.Fprintf(&b, " · held at %s, broke at %s", fmtBound(p.Over, p.Good), fmtBound(p.Over, p.Bad))
	}
	return b.String()
}

func fmtBound(o Over, v float64) string {
	if v <= 0 {
		return "—"
	}
	return o.Format(v)
}

// Step is one load held and judged.
type Step struct {
	// N counts the search's steps from 1; Load is the load over the
	// search's knob, Knobs every knob during the step.
	N     int
	Load  float64
	Knobs load.Knobs
	// WarmupPhase, Phase and TailPhase are the engine's phases of the
	// step: the warm-up, kept out of its figures; the measured one; and
	// its tail, at the same load, while the measured phase's last
	// requests came back (0: none, the verdict was already certain).
	// DrainPhase, when not 0, is the pause before the warm-up in which
	// the last step's queue finished.
	DrainPhase, WarmupPhase, Phase, TailPhase int
	// Start is the run time the step began; Measured how long its
	// measured phase was held.
	Start, Measured time.Duration
	// Completed and Failed count the measured phase's requests, as far
	// as they had finished when the step was judged; Incomplete those the
	// engine cancelled; Pending those still in flight then (a tail that
	// ran out of time: the step is not held). Their sum is what the phase
	// sent.
	Completed, Failed, Incomplete, Pending int64
	// ReqPerSec counts the requests completed per second during the
	// measured phase (of any phase: the load's steady state);
	// OutTokPerSec and GoodPerSec scale it by the measured phase's output
	// tokens and good requests per completed request. ReqKnown is false
	// when no second of the stretch was whole and the phase completed
	// nothing; PerRequestKnown when the phase completed nothing (past
	// the knee, its requests still queued): the figures are then zero
	// and were not measured, and reports show them absent, never as 0.
	ReqPerSec, OutTokPerSec, GoodPerSec float64
	ReqKnown, PerRequestKnown           bool
	// ErrorRate is (Failed+Incomplete) over every finished request (0
	// with none: see Finished).
	ErrorRate float64
	// TTFT, TPOT and E2E are the measured phase's distributions.
	TTFT, TPOT, E2E load.Dist
	// Verdicts are the objectives checked over the measured phase.
	Verdicts []slo.Verdict
	// Held is true when every objective held. Why says how the step
	// ended ("held", "clear of every objective", "breach certain", …);
	// Saturated marks an over-saturated step (a breach).
	Held      bool
	Why       string
	Saturated bool
	// judged is set on a step judged although the run ended during its
	// tail: the search keeps it before it stops.
	judged bool
}

// Finished is the measured phase's requests that finished when the step
// was judged: completed, failed or incomplete (its error rate's
// denominator; 0: no error rate was measured).
func (s Step) Finished() int64 { return s.Completed + s.Failed + s.Incomplete }

// Result is a search's outcome.
type Result struct {
	Over       Over
	Objectives []slo.Objective
	Resolution float64
	// Prompt and Output are the lengths the search ran at.
	Prompt, Output int
	// Found is true when some step held; MaxLoad is then the highest load
	// that held, and Knee the index in Steps of its step (-1: none).
	Found   bool
	MaxLoad float64
	Knee    int
	// Bad is the lowest load that broke (0: none did: the top of the
	// range held).
	Bad float64
	// Steps are every step, in order: the capacity curve.
	Steps []Step
	// Why says how the search ended.
	Why string
	// Elapsed is how long the search took; Fixed marks a result of one
	// step at a given load, not searched (a Matrix without objectives).
	Elapsed time.Duration
	Fixed   bool
}

// At is the step at the load found (nil: none).
func (r *Result) At() *Step {
	if r.Knee < 0 || r.Knee >= len(r.Steps) {
		return nil
	}
	return &r.Steps[r.Knee]
}

// withDefaults fills in the zero settings.
func (s Search) withDefaults() Search {
	if s.Over == "" {
		s.Over = Concurrency
	}
	if s.From <= 0 {
		s.From = 1
	}
	if s.To <= 0 {
		s.To = 1024
		if s.Over == Rate {
			s.To = 10000
		}
	}
	if s.Min <= 0 {
		s.Min = 1
		if s.Over == Rate {
			s.Min = 0.1
		}
	}
	if s.Factor <= 1 {
		s.Factor = 2
	}
	if s.Resolution <= 0 {
		s.Resolution = 0.05
	}
	d := DefaultHold()
	h := &s.Hold
	if h.Warmup <= 0 {
		h.Warmup = d.Warmup
	}
	if h.MinRequests <= 0 {
		h.MinRequests = d.MinRequests
	}
	if h.MinTime <= 0 {
		h.MinTime = d.MinTime
	}
	if h.MaxTime <= 0 {
		h.MaxTime = max(d.MaxTime, h.MinTime)
	}
	s.From, s.To, s.Min = s.round(s.From), s.round(s.To), min(s.round(s.Min), s.round(s.From))
	return s
}

// Check says what is wrong with the settings, in the search's terms.
func (s Search) Check() error {
	s = s.withDefaults()
	limit := float64(load.MaxConcurrency)
	if s.Over == Rate {
		limit = load.MaxRate
	}
	switch {
	case s.Over != Concurrency && s.Over != Rate:
		return fmt.Errorf("bad knob %q to search over: want concurrency or rate", s.Over)
	case s.To < s.From:
		return fmt.Errorf("the search's range is empty: from %s to %s", s.Over.Format(s.From), s.Over.Format(s.To))
	case s.To > limit:
		return fmt.Errorf("the search's top %s is above the %s limit %s", s.Over.Format(s.To), s.Over, s.Over.Format(limit))
	case s.Resolution >= 1:
		return fmt.Errorf("the search's resolution %g must be a fraction below 1", s.Resolution)
	case s.Hold.MaxTime < s.Hold.MinTime:
		return fmt.Errorf("a step's longest hold %v is below its shortest %v", s.Hold.MaxTime, s.Hold.MinTime)
	}
	return nil
}

// round brings a load to what the knob takes: a whole concurrency (at
// least 1), a rate to a hundredth.
func (s *Search) round(v float64) float64 {
	if s.Over == Rate {
		return max(math.Round(v*100)/100, 0.01)
	}
	return max(math.Round(v), 1)
}

// resolved reports whether good and bad are as close as the search asks.
func (s *Search) resolved(good, bad float64) bool {
	tol := s.Resolution * good
	if s.Over == Concurrency {
		tol = max(tol, 1)
	}
	return bad-good <= tol
}

// set turns the knob to l (and the lengths, for a matrix cell).
func (s *Search) set(k *load.Knobs, l float64) {
	k.Paused = false
	if s.Over == Rate {
		k.Mode, k.Rate = load.OpenLoop, l
	} else {
		k.Mode, k.Concurrency = load.ClosedLoop, int(l)
	}
	if s.Prompt > 0 {
		k.PromptTokens = s.Prompt
	}
	if s.Output > 0 {
		k.OutputTokens = s.Output
	}
}

// Run searches for the highest load at which every objective holds,
// driving eng's knobs and reading snaps (a subscription of eng's). It
// returns when the search is over, when ctx ends (the error is its
// cause) or when the run ends; the result then holds the steps finished
// so far. It leaves the knobs at the last step: ending the run, or going
// on from there, is the caller's to say.
func (s Search) Run(ctx context.Context, eng Engine, snaps <-chan load.Snapshot) (res Result, err error) {
	if len(s.Objectives) == 0 {
		return Result{}, errors.New("a capacity search needs at least one objective")
	}
	if err := s.shared(ctx, eng); err != nil {
		return Result{Over: s.withDefaults().Over, Objectives: s.Objectives, Knee: -1, Why: "stopped before its first step: " + err.Error()}, err
	}
	if err := s.Check(); err != nil {
		return Result{}, err
	}
	s = s.withDefaults()
	res = Result{Over: s.Over, Objectives: s.Objectives, Resolution: s.Resolution, Knee: -1}
	started := time.Now()
	defer func() {
		res.Elapsed = time.Since(started)
		if err != nil {
			res.Why = "stopped after " + plural(len(res.Steps), "step") + ": " + err.Error()
		}
	}()
	st := &stepper{s: &s, eng: eng, snaps: snaps}
	var good, bad float64 // 0: none yet
	try := func(l float64) (bool, error) {
		step, err := st.run(ctx, len(res.Steps)+1, l, good, bad)
		if err != nil && !step.judged {
			return false, err
		}
		res.Steps = append(res.Steps, step)
		if s.OnStep != nil {
			s.OnStep(step)
		}
		res.Prompt, res.Output = step.Knobs.PromptTokens, step.Knobs.OutputTokens
		if step.Held {
			good, res.Knee = l, len(res.Steps)-1
		} else {
			bad = l
		}
		res.Found, res.MaxLoad, res.Bad = good > 0, good, bad
		return step.Held, err
	}
	// The walk up: each step Factor times the last, until one breaks or
	// the top of the range holds.
	for l := s.From; ; l = s.round(min(l*s.Factor, s.To)) {
		held, err := try(l)
		if err != nil {
			return res, err
		}
		if !held {
			break
		}
		if l >= s.To {
			res.Why = "the top of the range held: the capacity is at least " + s.Over.Format(l)
			return res, nil
		}
	}
	// The walk down, when the first step already broke.
	for good == 0 {
		if bad <= s.Min {
			res.Why = "even the lowest load, " + s.Over.Format(bad) + ", broke an objective"
			return res, nil
		}
		held, err := try(s.round(max(bad/s.Factor, s.Min)))
		if err != nil {
			return res, err
		}
		_ = held
	}
	// The bisection between the last that held and the first that broke.
	for !s.resolved(good, bad) {
		mid := s.round((good + bad) / 2)
		if mid <= good || mid >= bad {
			break
		}
		if _, err := try(mid); err != nil {
			return res, err
		}
	}
	res.Why = fmt.Sprintf("resolved: %s held, %s broke", s.Over.Format(good), s.Over.Format(bad))
	return res, nil
}

// shared waits for a Shared engine to take a step and raises the range
// to its Least (a search from 1 over four agents starts at 4): nothing
// for any other engine.
func (s *Search) shared(ctx context.Context, eng Engine) error {
	sh, ok := eng.(Shared)
	if !ok {
		return nil
	}
	select {
	case <-sh.Ready():
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-eng.Ending():
		return ErrRunEnded
	}
	over := s.withDefaults().Over
	least := sh.Least(over)
	s.Over, s.From, s.Min = over, max(s.From, least), max(s.Min, least)
	return nil
}

// Measure holds one step at load l, with no objective to judge (or with
// s.Objectives checked, though nothing is searched): a cell of a Matrix at
// the load given; over a Shared engine (the agents) l 0 is the
// concurrency it runs once it is ready.
func (s Search) Measure(ctx context.Context, eng Engine, snaps <-chan load.Snapshot, l float64) (res Result, err error) {
	if err := s.shared(ctx, eng); err != nil {
		return Result{Over: s.withDefaults().Over, Objectives: s.Objectives, Knee: -1, Fixed: true, Why: "stopped: " + err.Error()}, err
	}
	if sh, ok := eng.(Shared); ok && l <= 0 && s.withDefaults().Over == Concurrency {
		l = float64(sh.Knobs().Concurrency) // no load given over the agents: theirs, now that it is known
	}
	s = s.withDefaults()
	l = max(l, s.Min) // a Shared engine's least
	res = Result{Over: s.Over, Objectives: s.Objectives, Resolution: s.Resolution, Knee: -1, Fixed: true}
	started := time.Now()
	defer func() { res.Elapsed = time.Since(started) }()
	st := &stepper{s: &s, eng: eng, snaps: snaps}
	step, err := st.run(ctx, 1, s.round(l), 0, 0)
	if err != nil && !step.judged {
		res.Why = "stopped: " + err.Error()
		return res, err
	}
	res.Steps = []Step{step}
	res.Prompt, res.Output = step.Knobs.PromptTokens, step.Knobs.OutputTokens
	res.Found, res.MaxLoad, res.Knee = step.Held, step.Load, 0
	if !step.Held {
		res.Bad, res.Knee = step.Load, -1
	}
	res.Why = "measured at " + s.Over.Format(step.Load)
	return res, err // ErrRunEnded when the run ended in the step's tail
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
