package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Params is the performance model. The zero value is not useful: start from
// a preset (Presets, Preset).
type Params struct {
	// Model is the name served and required in requests.
	Model string
	// Slots is the most sequences decoded at once (vLLM's max_num_seqs).
	Slots int
	// KVTokens is the KV-cache budget: a sequence reserves prompt+max_tokens
	// on admission and waits in the queue when that does not fit.
	KVTokens int
	// MaxModelLen is the longest prompt+output accepted; longer is a 400.
	MaxModelLen int
	// MaxBatchTokens bounds the tokens one step processes (decode tokens plus
	// prefill chunks), as vLLM's max_num_batched_tokens: long prompts are
	// prefilled in chunks over several steps.
	MaxBatchTokens int
	// PrefillRate is prompt tokens per second of prefill (0: instant).
	PrefillRate float64
	// StepBase is the fixed cost of one decode step.
	StepBase time.Duration
	// StepPerSeq is the added cost per running sequence.
	StepPerSeq time.Duration
	// StepPerKTok is the added cost per 1000 context tokens in the batch
	// (attention over the KV cache).
	StepPerKTok time.Duration
	// MinStep is the scheduler's floor on a step, so a zero-cost model does
	// not spin a core: it bounds tokens per second at Slots/MinStep.
	MinStep time.Duration
	// Jitter is the relative standard deviation of a step's duration.
	Jitter float64
	// ChatOverhead is the prompt tokens a chat template adds per request.
	ChatOverhead int
	// PrefixCacheBlocks is the size of the automatic prefix cache in
	// blocks of BlockTokens tokens (0: DefaultBlockTokens), kept in an
	// LRU: a prompt whose leading blocks are cached skips their prefill,
	// and /metrics counts vLLM's prefix_cache_queries and _hits. 0 is no
	// cache.
	PrefixCacheBlocks, BlockTokens int
	// Faults are injected failures, each a probability per request.
	Faults Faults
	// GPUs is how many GPUs /dcgm reports, each drawing IdleW plus up to
	// BusyW more as the batch fills.
	GPUs         int
	IdleW, BusyW float64
	// Canary, when set, serves a share of the requests by a second, slower
	// build (a rolling update's new pod); the zero value serves none.
	Canary Canary
	// Seed makes jitter, faults, the canary's share and generated text
	// repeatable.
	Seed uint64
	// FineBuckets serves the latency histograms of /metrics with bounds
	// 4 % apart instead of vLLM's (a server built with finer buckets), so
	// a watch of it can resolve a 10 % margin; the names stay vLLM's.
	FineBuckets bool
	// Reasoning makes the model think before it answers, on the APIs
	// that stream reasoning apart (chat's reasoning_content, Responses'
	// reasoning_text, Anthropic's thinking); the zero value never does.
	Reasoning Reasoning
	// Adapters are LoRA adapters served beside Model, each by its name
	// with its own speed (see Adapter); none by default.
	Adapters []Adapter
	// Invalid is the share of structured answers and tool calls (asked
	// for on chat) sent broken, no JSON, in [0,1]; 0 by default.
	Invalid float64
	// SpecDecode reports speculative decoding's counts per request (with
	// the per-request metrics) and in /metrics; off by default.
	SpecDecode SpecDecode
	// PerfMetrics serves TensorRT-LLM's GET /perf_metrics, keeping the
	// entries of at most this many answered requests between two reads
	// (trtllm-serve's perf_metrics_max_requests); 0, the default: none
	// (404, as vLLM).
	PerfMetrics int
}

// Reasoning is how many of an answer's tokens are reasoning, before the
// first token of the answer: Tokens each (at most all but one of
// max_tokens), or Fraction of max_tokens (rounded, likewise capped).
type Reasoning struct {
	Tokens   int
	Fraction float64
}

// ParseReasoning reads a count of tokens ("64") or a fraction of the
// output ("0.5", "50%").
func ParseReasoning(s string) (Reasoning, error) {
	s = strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return Reasoning{}, fmt.Errorf("%q is no percentage: %w", s, err)
		}
		return Reasoning{Fraction: f / 100}, nil
	}
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Reasoning{}, fmt.Errorf("%q is neither a count of tokens nor a fraction: %w", s, err)
		}
		return Reasoning{Fraction: f}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return Reasoning{}, fmt.Errorf("%q is neither a count of tokens nor a fraction: %w", s, err)
	}
	return Reasoning{Tokens: n}, nil
}

// of is the reasoning tokens of an answer of maxTokens.
func (r Reasoning) of(maxTokens int) int {
	n := r.Tokens
	if r.Fraction > 0 {
		n = int(math.Round(r.Fraction * float64(maxTokens)))
	}
	return max(min(n, maxTokens-1), 0)
}

func (r Reasoning) validate() error {
	switch {
	case r.Tokens < 0:
		return fmt.Errorf("%d tokens is negative", r.Tokens)
	case !(r.Fraction >= 0 && r.Fraction < 1):
		return fmt.Errorf("the fraction %v is not within 0..1 (1 would leave no answer)", r.Fraction)
	case r.Tokens > 0 && r.Fraction > 0:
		return errors.New("a count of tokens or a fraction, not both")
	}
	return nil
}

// Canary is a second build behind the same endpoint, as in a rolling
// update or a canary rollout: a replica of its own (its own slots and KV
// budget, the stable pod's capacity unchanged, as a rollout adds a pod
// beside the old ones) whose model costs are Slowdown times the stable
// one's, so at light load its TTFT, TPOT and E2E are about Slowdown
// times as long. Every answer says which build served it, in the
// X-Infertop-Backend header and in system_fingerprint, so a client can
// split one load by backend (infertop --split-by). The zero value is no
// canary.
type Canary struct {
	// Fraction is the share of requests the canary serves, in (0,1].
	Fraction float64
	// Slowdown scales the canary's step costs and divides its prefill
	// rate: 1.5 is half as slow again, 1 the same build (an A/A check of
	// the split), below 1 a faster build. Within (0, MaxSlowdown].
	Slowdown float64
	// ErrorRate is the share of the canary's requests answered with HTTP
	// 500, in [0,1], on top of any Faults (which both builds inject).
	ErrorRate float64
	// Delay is how long after the engine starts the canary begins to take
	// requests (all go to the stable pod before), as a rollout that shifts
	// traffic some time into a run.
	Delay time.Duration
	// Invalid is the share of the canary's structured answers and tool
	// calls sent broken, in [0,1], on top of Params.Invalid (which both
	// builds break): a build that answers fast and breaks its tools.
	Invalid float64
}

// MaxSlowdown bounds Canary.Slowdown: a build a hundred times slower is
// already a failed rollout, and the bound keeps a typo from making steps
// of minutes.
const MaxSlowdown = 100

// IsZero reports whether c serves no canary.
func (c Canary) IsZero() bool { return c == Canary{} }

// String is c as ParseCanary reads it back ("" for none).
func (c Canary) String() string {
	if c.IsZero() {
		return ""
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	s := f(c.Fraction) + ":" + f(c.Slowdown) + ":" + f(c.ErrorRate) + ":" + c.Delay.String()
	if c.Invalid > 0 {
		s += ":" + f(c.Invalid)
	}
	return s
}

// ParseCanary reads FRACTION:SLOWDOWN[:ERROR_RATE[:DELAY[:INVALID]]], e.g.
// 0.25:1.5 (a quarter of the requests 1.5 times slower), 0.25:1.5:0.02
// (and 2 % of the canary's answers a 500), 0.25:1.5:0:30s (from 30 s on)
// or 0.5:0.8:0:0s:0.05 (faster, 5 % of its structured answers and tool
// calls broken). "" is no
// canary. Like ParseFaults, its errors speak of a canary spec, not of a
// flag.
func ParseCanary(s string) (Canary, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Canary{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 5 {
		return Canary{}, fmt.Errorf("bad canary %q: want FRACTION:SLOWDOWN[:ERROR_RATE[:DELAY[:INVALID]]], e.g. 0.25:1.5", s)
	}
	num := func(what, v string) (float64, error) {
		r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
			return 0, fmt.Errorf("bad canary %q: the %s %q is not a number", s, what, v)
		}
		return r, nil
	}
	var c Canary
	var err error
	if c.Fraction, err = num("fraction", parts[0]); err != nil {
		return Canary{}, err
	}
	if c.Slowdown, err = num("slowdown", parts[1]); err != nil {
		return Canary{}, err
	}
	if len(parts) > 2 {
		if c.ErrorRate, err = num("error rate", parts[2]); err != nil {
			return Canary{}, err
		}
	}
	if len(parts) > 3 {
		v := strings.TrimSpace(parts[3])
		if c.Delay, err = time.ParseDuration(v); err != nil {
			return Canary{}, fmt.Errorf("bad canary %q: the delay %q is not a duration such as 30s", s, v)
		}
	}
	if len(parts) > 4 {
		if c.Invalid, err = num("invalid share", parts[4]); err != nil {
			return Canary{}, err
		}
	}
	if err := c.check(); err != nil {
		return Canary{}, fmt.Errorf("bad canary %q: %w", s, err)
	}
	return c, nil
}

// validate reports the first field of a set canary out of range; the
// zero value, no canary, is valid.
func (c Canary) validate() error {
	if c.IsZero() {
		return nil
	}
	return c.check()
}

// check reports the first field out of range, the zero value's too (a
// spec of "0:0" names a canary that serves nothing, a mistake).
func (c Canary) check() error {
	switch {
	case !(c.Fraction > 0 && c.Fraction <= 1):
		return fmt.Errorf("the fraction must be within (0,1], got %g", c.Fraction)
	case !(c.Slowdown > 0 && c.Slowdown <= MaxSlowdown):
		return fmt.Errorf("the slowdown must be above 0 and at most %d (1.5: half as slow again), got %g", MaxSlowdown, c.Slowdown)
	case !(c.ErrorRate >= 0 && c.ErrorRate <= 1):
		return fmt.Errorf("the error rate must be within 0..1, got %g", c.ErrorRate)
	case c.Delay < 0:
		return fmt.Errorf("the delay must not be negative, got %v", c.Delay)
	case !(c.Invalid >= 0 && c.Invalid <= 1):
		return fmt.Errorf("the invalid share must be within 0..1, got %g", c.Invalid)
	}
	return nil
}

// canaryParams is the canary pod's model: p's costs scaled by the
// slowdown (prefill rate divided), its own seed for jitter so the two
// pods' steps do not wobble in step. The floor MinStep scales only up:
// on the fast preset it is the whole cost, so a slower canary is slower
// there too, but a faster one must not spin a core below the floor the
// stable pod keeps.
func (p Params) canaryParams() Params {
	k := p.Canary.Slowdown
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * k) }
	c := p
	c.StepBase, c.StepPerSeq, c.StepPerKTok = scale(p.StepBase), scale(p.StepPerSeq), scale(p.StepPerKTok)
	c.MinStep = time.Duration(float64(p.MinStep) * max(k, 1))
	if p.PrefillRate > 0 {
		c.PrefillRate = p.PrefillRate / k
	}
	c.Seed = p.Seed ^ 0xca4a27c4a27ca4a2
	return c
}

// Faults are per-request probabilities of injected failures (at most one
// a request; their sum at most 1).
type Faults struct {
	// HTTP500 answers 500 before the stream starts.
	HTTP500 float64
	// HTTP429 answers 429 with Retry-After before the stream starts.
	HTTP429 float64
	// Reset resets the connection half way through a stream.
	Reset float64
	// Stall waits Pause before the first byte; StallMid waits Pause half
	// way through a stream.
	Stall, StallMid float64
	// Malformed sends a chunk that is not JSON half way through a stream.
	Malformed float64
	// HugeLine sends a data line of 2 MiB (past any sane line limit: real
	// servers' lines are KBs, infertop's cap is 1 MiB) half way through a
	// stream.
	HugeLine float64
	// Trickle writes the whole stream one byte at a time.
	Trickle float64
	// Pause is the length of a stall (default 2 s).
	Pause time.Duration
}

// faultNames are the names in a fault list (ParseFaults), in draw order.
var faultNames = []string{"500", "429", "reset", "stall", "stall-mid", "malformed", "huge-line", "trickle"}

func (f *Faults) rates() []*float64 {
	return []*float64{&f.HTTP500, &f.HTTP429, &f.Reset, &f.Stall, &f.StallMid, &f.Malformed, &f.HugeLine, &f.Trickle}
}

// ParseFaults reads a fault list: 'reset=0.01,stall=0.02,...' (names: 500,
// 429, reset, stall, stall-mid, malformed, huge-line, trickle) and the stall
// length 'pause=3s'. Its errors speak of a fault list, not of a flag: the
// command line that reads the list into a flag names the flag.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return f, fmt.Errorf("bad fault list %q: want name=rate,... (%s) and pause=DURATION", s, strings.Join(faultNames, ", "))
		}
		if k == "pause" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return f, fmt.Errorf("bad fault list pause %q: want a positive duration such as 3s", v)
			}
			f.Pause = d
			continue
		}
		i := slices.Index(faultNames, k)
		r, err := strconv.ParseFloat(v, 64)
		if i < 0 || err != nil || r < 0 || r > 1 {
			return f, fmt.Errorf("bad fault list entry %q: unknown fault, or a rate outside 0..1 (%s)", kv, strings.Join(faultNames, ", "))
		}
		*f.rates()[i] = r
	}
	return f, nil
}

// pick chooses the fault for a draw u in [0,1): its index in faultNames,
// or -1 for none.
func (f *Faults) pick(u float64) int {
	acc := 0.0
	for i, r := range f.rates() {
		acc += *r
		if u < acc {
			return i
		}
	}
	return -1
}

// Presets are named parameter sets. "default" shows the behaviour infertop
// exists for; "fast" has zero model cost, for benchmarks of the client.
var presets = map[string]Params{
	"default": {
		Model: "sim-llama-8b", Slots: 32, KVTokens: 131072, MaxModelLen: 40960, MaxBatchTokens: 8192,
		PrefillRate: 16000, StepBase: 6 * time.Millisecond, StepPerSeq: 250 * time.Microsecond,
		StepPerKTok: 50 * time.Microsecond, MinStep: 500 * time.Microsecond, Jitter: 0.05, ChatOverhead: 7, Seed: 1,
		GPUs: 1, IdleW: 90, BusyW: 610, PrefixCacheBlocks: 131072 / DefaultBlockTokens,
	},
	"fast": {
		Model: "sim-llama-8b", Slots: 100000, KVTokens: 1 << 40, MaxModelLen: 1 << 30, MaxBatchTokens: 1 << 30,
		PrefillRate: 0, MinStep: 500 * time.Microsecond, ChatOverhead: 7, Seed: 1,
		GPUs: 1, IdleW: 90, BusyW: 610,
	},
	"small": {
		Model: "sim-llama-8b", Slots: 8, KVTokens: 32768, MaxModelLen: 40960, MaxBatchTokens: 4096,
		PrefillRate: 8000, StepBase: 10 * time.Millisecond, StepPerSeq: 1 * time.Millisecond,
		StepPerKTok: 100 * time.Microsecond, MinStep: 500 * time.Microsecond, Jitter: 0.05, ChatOverhead: 7, Seed: 1,
		GPUs: 1, IdleW: 60, BusyW: 290, PrefixCacheBlocks: 32768 / DefaultBlockTokens,
	},
	"large": {
		Model: "sim-llama-70b", Slots: 256, KVTokens: 1 << 20, MaxModelLen: 131072, MaxBatchTokens: 16384,
		PrefillRate: 40000, StepBase: 12 * time.Millisecond, StepPerSeq: 80 * time.Microsecond,
		StepPerKTok: 10 * time.Microsecond, MinStep: 500 * time.Microsecond, Jitter: 0.05, ChatOverhead: 7, Seed: 1,
		GPUs: 8, IdleW: 90, BusyW: 610, PrefixCacheBlocks: (1 << 20) / DefaultBlockTokens,
	},
}

// Preset returns the named parameter set.
func Preset(name string) (Params, error) {
	p, ok := presets[name]
	if !ok {
		return Params{}, fmt.Errorf("unknown sim preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return p, nil
}

// PresetNames lists the presets in order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParamError is a parameter of Params the sim cannot run with. Param
// names it in the sim's own terms (one of the Param* constants), so that a
// command line can name its flag instead; Err says what is wrong, in words
// that read after either name.
type ParamError struct {
	Param string
	Err   error
}

func (e *ParamError) Error() string { return "sim: " + e.Param + ": " + e.Err.Error() }
func (e *ParamError) Unwrap() error { return e.Err }

// The parameters a ParamError names.
const (
	ParamModel          = "model"            // Model
	ParamSlots          = "slots"            // Slots
	ParamKVTokens       = "KV tokens"        // KVTokens
	ParamMaxModelLen    = "max model length" // MaxModelLen
	ParamMaxBatchTokens = "max batch tokens" // MaxBatchTokens
	ParamPrefillRate    = "prefill rate"     // PrefillRate
	ParamStepBase       = "step base"        // StepBase
	ParamStepPerSeq     = "step per sequence"
	ParamStepPerKTok    = "step per 1000 tokens"
	ParamMinStep        = "least step"    // MinStep
	ParamJitter         = "jitter"        // Jitter
	ParamChatOverhead   = "chat overhead" // ChatOverhead
	ParamHTTP500        = "error rate"    // Faults.HTTP500
	ParamHTTP429        = "rate-limit rate"
	ParamFaults         = "faults"      // the other fault rates, their sum, the pause
	ParamGPUs           = "GPUs"        // GPUs
	ParamWatts          = "watts"       // IdleW, BusyW
	ParamCanary         = "canary"      // Canary
	ParamReasoning      = "reasoning"   // Reasoning
	ParamAdapters       = "adapters"    // Adapters
	ParamInvalid        = "invalid"     // Invalid
	ParamSpecDecode     = "spec decode" // SpecDecode
	ParamPrefixCache    = "prefix cache"
	ParamPerfMetrics    = "perf metrics" // PerfMetrics
)

// Validate reports the first parameter out of range, as a *ParamError.
func (p Params) Validate() error {
	bad := func(param, format string, a ...any) error {
		return &ParamError{param, fmt.Errorf(format, a...)}
	}
	if p.Model == "" {
		return bad(ParamModel, "the name is empty")
	}
	for _, n := range []struct {
		param string
		v     int
	}{{ParamSlots, p.Slots}, {ParamKVTokens, p.KVTokens}, {ParamMaxModelLen, p.MaxModelLen}, {ParamMaxBatchTokens, p.MaxBatchTokens}} {
		if n.v < 1 {
			return bad(n.param, "%d is under the least, 1", n.v)
		}
	}
	for _, d := range []struct {
		param string
		v     time.Duration
	}{{ParamStepBase, p.StepBase}, {ParamStepPerSeq, p.StepPerSeq}, {ParamStepPerKTok, p.StepPerKTok}, {ParamMinStep, p.MinStep}} {
		if d.v < 0 {
			return bad(d.param, "%v is negative", d.v)
		}
	}
	switch {
	case !(p.PrefillRate >= 0) || math.IsInf(p.PrefillRate, 1):
		return bad(ParamPrefillRate, "%v tokens per second is not a rate (0: instant)", p.PrefillRate)
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return bad(ParamJitter, "%v is not within 0..1", p.Jitter)
	case p.ChatOverhead < 0:
		return bad(ParamChatOverhead, "%d tokens is negative", p.ChatOverhead)
	case p.PrefixCacheBlocks < 0 || p.PrefixCacheBlocks > 1<<26:
		return bad(ParamPrefixCache, "%d blocks is not within 0..%d", p.PrefixCacheBlocks, 1<<26)
	case p.BlockTokens < 0 || p.BlockTokens > 1<<16:
		return bad(ParamPrefixCache, "a block of %d tokens is not within 0..%d", p.BlockTokens, 1<<16)
	case !(p.Faults.HTTP500 >= 0 && p.Faults.HTTP500 <= 1):
		return bad(ParamHTTP500, "%v is not within 0..1", p.Faults.HTTP500)
	case !(p.Faults.HTTP429 >= 0 && p.Faults.HTTP429 <= 1):
		return bad(ParamHTTP429, "%v is not within 0..1", p.Faults.HTTP429)
	case p.Faults.Pause < 0:
		return bad(ParamFaults, "the pause %v is negative", p.Faults.Pause)
	case p.GPUs < 0 || p.GPUs > 1024:
		return bad(ParamGPUs, "%d is not within 0..1024", p.GPUs)
	case !(p.IdleW >= 0) || !(p.BusyW >= 0):
		return bad(ParamWatts, "%v idle or %v busy is negative", p.IdleW, p.BusyW)
	}
	sum := 0.0
	for i, r := range p.Faults.rates() {
		if !(*r >= 0 && *r <= 1) {
			return bad(ParamFaults, "the %s rate %v is not within 0..1", faultNames[i], *r)
		}
		sum += *r
	}
	if sum > 1+1e-9 {
		return bad(ParamFaults, "the rates add up to %.3g, past 1 (at most one fault a request)", sum)
	}
	if err := p.Canary.validate(); err != nil {
		return &ParamError{ParamCanary, err}
	}
	if err := p.Reasoning.validate(); err != nil {
		return &ParamError{ParamReasoning, err}
	}
	if !(p.Invalid >= 0 && p.Invalid <= 1) {
		return bad(ParamInvalid, "%v is not within 0..1", p.Invalid)
	}
	if err := p.SpecDecode.validate(); err != nil {
		return &ParamError{ParamSpecDecode, err}
	}
	if p.PerfMetrics < 0 || p.PerfMetrics > 1<<20 {
		return bad(ParamPerfMetrics, "%d entries kept: want 0..%d", p.PerfMetrics, 1<<20)
	}
	if err := p.checkAdapters(); err != nil {
		return &ParamError{ParamAdapters, err}
	}
	return nil
}
