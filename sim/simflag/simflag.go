// Package simflag binds the simulated endpoint's parameters to command-line
// flags (pflag), for infertop sim and the dashboard's embedded sim; sim
// itself knows nothing of flags.
package simflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/sim"
)

// Flags binds the simulated endpoint's parameters to flags, starting from
// a preset chosen with --preset (read before the others apply).
type Flags struct {
	preset string
	faults string
	canary string
	reason string
	adapt  string
	spec   string // --spec-decode as given
	p      sim.Params
	fs     *pflag.FlagSet
	prefix string
}

// Add binds the flags to fs, each name after prefix ("sim-" for the
// dashboard's embedded sim, "" for infertop sim).
func Add(fs *pflag.FlagSet, prefix string) *Flags {
	group := "The simulated endpoint"
	if prefix != "" {
		group = "The embedded sim (without --url)"
	}
	defer flaghelp.Group(fs, group)()
	d, _ := sim.Preset("default")
	f := &Flags{fs: fs, prefix: prefix}
	fs.StringVar(&f.preset, prefix+"preset", "default", "performance preset: default, fast, small or large (flags below override it)")
	fs.StringVar(&f.p.Model, prefix+"model", d.Model, "model name served")
	fs.IntVar(&f.p.Slots, prefix+"slots", d.Slots, "sequences decoded at once (max_num_seqs)")
	fs.IntVar(&f.p.KVTokens, prefix+"kv-tokens", d.KVTokens, "KV-cache budget in tokens")
	fs.IntVar(&f.p.MaxModelLen, prefix+"max-model-len", d.MaxModelLen, "longest prompt+output accepted")
	fs.IntVar(&f.p.MaxBatchTokens, prefix+"max-batch-tokens", d.MaxBatchTokens, "tokens per step (chunked prefill budget)")
	fs.Float64Var(&f.p.PrefillRate, prefix+"prefill-rate", d.PrefillRate, "prefill speed in prompt tokens per second (0: instant)")
	fs.DurationVar(&f.p.StepBase, prefix+"step-base", d.StepBase, "fixed cost of a decode step")
	fs.DurationVar(&f.p.StepPerSeq, prefix+"step-per-seq", d.StepPerSeq, "added step cost per running sequence")
	fs.DurationVar(&f.p.StepPerKTok, prefix+"step-per-ktok", d.StepPerKTok, "added step cost per 1000 context tokens")
	fs.Float64Var(&f.p.Jitter, prefix+"jitter", d.Jitter, "relative standard deviation of step time")
	fs.StringVar(&f.faults, prefix+"faults", "", "injected faults, each a fraction of requests: 500, 429, reset, stall, stall-mid, malformed, huge-line, trickle, and pause=DURATION for stalls, e.g. reset=0.01,stall=0.02,pause=3s")
	fs.Float64Var(&f.p.Faults.HTTP500, prefix+"error-rate", 0, "fraction of requests answered with HTTP 500")
	fs.Float64Var(&f.p.Faults.HTTP429, prefix+"rate-limit-rate", 0, "fraction of requests answered with HTTP 429 and Retry-After")
	fs.StringVar(&f.canary, prefix+"canary", "", "serve a canary build: FRACTION:SLOWDOWN[:ERROR_RATE[:DELAY[:INVALID]]], e.g. 0.25:1.5 (a quarter of requests 1.5× slower), 0.5:0.8:0:0s:0.05 (faster, 5 % of its structured answers and tool calls broken), marked by the X-Infertop-Backend header and system_fingerprint")
	fs.Uint64Var(&f.p.Seed, prefix+"seed", d.Seed, "seed for jitter, faults, the canary's share and text")
	fs.IntVar(&f.p.GPUs, prefix+"gpus", d.GPUs, "simulated GPUs reported at /dcgm in DCGM's names")
	fs.IntVar(&f.p.PrefixCacheBlocks, prefix+"prefix-cache", d.PrefixCacheBlocks, "prefix cache size in blocks of 16 tokens, an LRU; cached prompt tokens skip their prefill (0: off)")
	fs.StringVar(&f.reason, prefix+"reasoning-tokens", "", "think before answering: N reasoning tokens, or a fraction (0.5, 50%) of each answer's, streamed apart (reasoning_content, reasoning_text, thinking)")
	fs.Float64Var(&f.p.Invalid, prefix+"invalid", 0, "fraction of structured answers and tool calls (response_format, tools on chat) sent broken: no JSON")
	fs.StringVar(&f.spec, prefix+"spec-decode", "", "report speculative decoding: DRAFT:ACCEPT, e.g. 3:0.6 (draft tokens a step, each accepted with that chance), in the per-request metrics and /metrics; the counts only, the pace unchanged")
	fs.IntVar(&f.p.PerfMetrics, prefix+"perf-metrics", 0, "serve TensorRT-LLM's GET /perf_metrics: each answered request's timings, KV blocks and draft tokens in its shape, keeping at most N between reads (trtllm-serve's perf_metrics_max_requests); 0: none, a 404 as vLLM")
	fs.StringVar(&f.adapt, prefix+"adapters", "", "serve LoRA adapters beside the model, each by its name with its own slowdown in the shared batch: NAME[:SLOWDOWN],..., e.g. sql-lora,chat-lora:1.5")
	return f
}

// Params applies the preset, then every flag the user set, and checks
// the result.
func (f *Flags) Params() (sim.Params, error) {
	prefix := f.prefix
	p, err := sim.Preset(f.preset)
	if err != nil {
		return p, fmt.Errorf("--%spreset: %w", prefix, err)
	}
	if f.faults != "" {
		fl, err := sim.ParseFaults(f.faults)
		if err != nil {
			return p, fmt.Errorf("--%sfaults: %w", prefix, err)
		}
		p.Faults = fl
	}
	if f.canary != "" {
		c, err := sim.ParseCanary(f.canary)
		if err != nil {
			return p, fmt.Errorf("--%scanary: %w", prefix, err)
		}
		p.Canary = c
	}
	if f.reason != "" {
		r, err := sim.ParseReasoning(f.reason)
		if err != nil {
			return p, fmt.Errorf("--%sreasoning-tokens: %w", prefix, err)
		}
		p.Reasoning = r
	}
	if f.spec != "" {
		sd, err := sim.ParseSpecDecode(f.spec)
		if err != nil {
			return p, fmt.Errorf("--%sspec-decode: %w", prefix, err)
		}
		p.SpecDecode = sd
	}
	if f.adapt != "" {
		a, err := sim.ParseAdapters(f.adapt)
		if err != nil {
			return p, fmt.Errorf("--%sadapters: %w", prefix, err)
		}
		p.Adapters = a
	}
	set := map[string]func(){
		"model": func() { p.Model = f.p.Model }, "slots": func() { p.Slots = f.p.Slots },
		"kv-tokens": func() { p.KVTokens = f.p.KVTokens }, "max-model-len": func() { p.MaxModelLen = f.p.MaxModelLen },
		"max-batch-tokens": func() { p.MaxBatchTokens = f.p.MaxBatchTokens }, "prefill-rate": func() { p.PrefillRate = f.p.PrefillRate },
		"step-base": func() { p.StepBase = f.p.StepBase }, "step-per-seq": func() { p.StepPerSeq = f.p.StepPerSeq },
		"step-per-ktok": func() { p.StepPerKTok = f.p.StepPerKTok }, "jitter": func() { p.Jitter = f.p.Jitter },
		"error-rate": func() { p.Faults.HTTP500 = f.p.Faults.HTTP500 }, "rate-limit-rate": func() { p.Faults.HTTP429 = f.p.Faults.HTTP429 },
		"seed": func() { p.Seed = f.p.Seed }, "gpus": func() { p.GPUs = f.p.GPUs },
		"prefix-cache": func() { p.PrefixCacheBlocks = f.p.PrefixCacheBlocks },
		"invalid":      func() { p.Invalid = f.p.Invalid },
		"perf-metrics": func() { p.PerfMetrics = f.p.PerfMetrics },
	}
	for name, apply := range set {
		if f.fs.Changed(prefix + name) {
			apply()
		}
	}
	if err := p.Validate(); err != nil {
		return p, f.flagError(err)
	}
	return p, nil
}

// flagOf names the flag (less the prefix) behind each parameter a
// sim.ParamError names. The parameters no flag sets (the least step, the
// chat overhead, the watts) are a preset's, and keep the sim's words.
var flagOf = map[string]string{
	sim.ParamModel: "model", sim.ParamSlots: "slots", sim.ParamKVTokens: "kv-tokens",
	sim.ParamMaxModelLen: "max-model-len", sim.ParamMaxBatchTokens: "max-batch-tokens",
	sim.ParamPrefillRate: "prefill-rate", sim.ParamStepBase: "step-base", sim.ParamStepPerSeq: "step-per-seq",
	sim.ParamStepPerKTok: "step-per-ktok", sim.ParamJitter: "jitter", sim.ParamHTTP500: "error-rate",
	sim.ParamHTTP429: "rate-limit-rate", sim.ParamFaults: "faults", sim.ParamGPUs: "gpus", sim.ParamCanary: "canary",
	sim.ParamPrefixCache: "prefix-cache",
	sim.ParamReasoning:   "reasoning-tokens",
	sim.ParamAdapters:    "adapters",
	sim.ParamInvalid:     "invalid",
	sim.ParamSpecDecode:  "spec-decode",
	sim.ParamPerfMetrics: "perf-metrics",
}

// flagError says which flag a parameter out of range came from. The fault
// rates' sum may come from three flags: those given are named.
func (f *Flags) flagError(err error) error {
	var pe *sim.ParamError
	if !errors.As(err, &pe) || flagOf[pe.Param] == "" {
		return err
	}
	names := []string{"--" + f.prefix + flagOf[pe.Param]}
	if pe.Param == sim.ParamFaults {
		names = names[:0]
		for _, n := range []string{"faults", "error-rate", "rate-limit-rate"} {
			if f.fs.Changed(f.prefix + n) {
				names = append(names, "--"+f.prefix+n)
			}
		}
		if len(names) == 0 {
			names = []string{"--" + f.prefix + "faults"}
		}
	}
	return fmt.Errorf("%s: %w", strings.Join(names, ", "), pe.Err)
}
