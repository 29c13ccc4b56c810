// Package loadflag binds the load's configuration (load.Config) to
// command-line flags (pflag): how the load is put on (the loop, its knobs,
// a walk of stages), the lengths and the prompts, when it ends, a trace
// replay and multi-turn sessions. load itself knows nothing of flags; the
// errors here name the flag, as sim/simflag's do for the sim.
package loadflag

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/load"
)

// Flags binds a load.Config to flags; what needs parsing is kept as text
// for Config.
type Flags struct {
	cfg                                 load.Config
	promptSpec, outputSpec, datasetPath string
	warmup, stages, ramp                string
	trace                               traceFlags
	sessions                            sessionFlags
	fs                                  *pflag.FlagSet
}

// Add binds the load's flags to fs.
func Add(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	f.addShape(fs)
	f.addLengths(fs)
	f.addLimits(fs)
	f.addSessions(fs)
	f.addTrace(fs)
	return f
}

// addShape: how the load is put on: the loop, its knobs, its walk.
func (f *Flags) addShape(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Load: the loop, its knobs, a walk")()
	l := &f.cfg
	fs.IntVarP(&l.Knobs.Concurrency, "concurrency", "c", load.DefaultConcurrency, "requests kept in flight (closed loop)")
	fs.Float64Var(&l.Knobs.Rate, "rate", 0, "open loop: requests per second whatever the server does (0: closed loop)")
	fs.StringVar(&l.Arrivals.Kind, "arrivals", "constant", "open loop arrivals: constant, poisson or gamma")
	fs.Float64Var(&l.Arrivals.Burstiness, "burstiness", 1, "gamma arrivals' shape, as vLLM's: 1 is Poisson, <1 burstier")
	fs.IntVar(&l.MaxInFlight, "max-in-flight", 0, "open loop: most requests in flight; later arrivals wait in a backlog, the wait counted (0: from the open-file limit, at most 4096)")
	fs.StringVar(&f.warmup, "warmup", "", "keep the first N requests or DURATION out of the figures, as a warm-up phase")
	fs.StringVar(&f.stages, "stages", "", "walk through stages, each a phase: 'concurrency=8,duration=30s;rate=50,duration=1m' (keys: concurrency, rate, prompt, output, duration)")
	fs.StringVar(&f.ramp, "ramp", "", "ramp linearly FROM:TO:DURATION, the concurrency (or the rate, with --rate), a phase a second")
	fs.DurationVar(&l.Window, "window", load.DefaultWindow, "rolling window: 10s, 30s, 1m or 5m")
	fs.DurationVar(&l.Tick, "tick", load.DefaultTick, "snapshot interval")
}

// addLengths: how long the prompts and the answers are, and what the
// prompts say.
func (f *Flags) addLengths(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Lengths and prompts")()
	l := &f.cfg
	fs.StringVar(&f.promptSpec, "prompt-tokens", fmt.Sprint(load.DefaultPromptTokens), "prompt length in tokens: N, uniform:MIN-MAX or normal:MEAN,SD (1..32768; keys move the centre)")
	fs.StringVar(&f.outputSpec, "output-tokens", fmt.Sprint(load.DefaultOutputTokens), "output tokens per request (the output limit): N, uniform:MIN-MAX or normal:MEAN,SD (1..32768)")
	fs.StringVar(&f.datasetPath, "dataset", "", "prompts from a JSONL file ({\"prompt\"} or {\"messages\"} a line) or a ShareGPT JSON file, shuffled by --seed")
	fs.IntVar(&l.PrefixTokens, "prefix-tokens", 0, "start every prompt with the same text of about N tokens (prefix-cache experiments)")
	fs.IntVar(&l.PrefixGroups, "prefix-groups", 0, "with --prefix-tokens: G distinct prefixes, each shared by every G-th request (G system prompts)")
	fs.BoolVar(&l.ByTokenizer, "calibrate-by-tokenizer", false, "calibrate the prompts by the server's /tokenize (vLLM, SGLang, llama.cpp) before the first request: their text is --prompt-tokens of its tokens; without one, by its usage as usual")
	fs.BoolVar(&l.ResetPrefixCache, "reset-prefix-cache", false, "empty the server's prefix cache before the run, each --stages stage and each capacity step, so that each starts cold (vLLM's /reset_prefix_cache, served in its dev mode; SGLang's /flush_cache); refused at the start where the server has neither")
	fs.BoolVar(&l.CacheBust, "cache-bust", false, "open every prompt with a short random marker of its own (a session's once, its turns sharing their context), so that no two requests share a prefix block in the server's prefix cache, this run's or an earlier one's; not with --prefix-tokens")
	fs.BoolVar(&l.NoCalibrate, "no-calibrate", false, "send the asked number of words instead of learning the server's tokens per word from its usage")
	fs.Uint64Var(&l.Seed, "seed", 1, "seed for prompt synthesis and, when given, the requests' trace ids (traceparent, x-request-id; else random)")
}

// addLimits: when the run is over.
func (f *Flags) addLimits(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "When the load ends")()
	l := &f.cfg
	fs.DurationVar(&l.Duration, "duration", 0, "stop after this long (0: no limit); the dashboard counts down and stops")
	fs.Int64Var(&l.MaxRequests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.DurationVar(&l.Drain, "drain", load.DefaultDrain, "at the end, how long requests in flight get to finish before they are cancelled and counted incomplete (0: none, as --no-drain)")
	fs.BoolVar(&l.NoDrain, "no-drain", false, "at the end, cancel the requests in flight at once (counted incomplete) instead of giving them --drain")
}

// Config reads the flags into a load.Config: the words only the command
// line knows (flags that exclude each other, the specs of lengths and
// walks, the files of prompts and traces). Ranges are load's to check
// (Validate), and FlagError names the flag of what it refuses.
func (f *Flags) Config() (load.Config, error) {
	l := f.cfg
	switch {
	case f.stages != "" && f.ramp != "":
		return l, errors.New("give --stages or --ramp, not both")
	case l.NoDrain && f.fs.Changed("drain") && l.Drain != 0:
		return l, errors.New("give --drain or --no-drain, not both")
	case f.fs.Changed("burstiness") && l.Arrivals.Kind != "gamma":
		return l, fmt.Errorf("--burstiness shapes gamma arrivals only: add --arrivals gamma (now %s)", l.Arrivals.Kind)
	}
	if f.fs.Changed("seed") {
		seed := l.Seed
		l.TraceSeed = &seed
	}
	if f.fs.Changed("drain") && l.Drain == 0 {
		l.NoDrain = true // no drain is what a zero drain says; the engine's zero is its default
	}
	if l.NoDrain {
		l.Drain = 0 // the flag's default stands for a drain
	}
	var lim syscall.Rlimit
	fd := uint64(1024)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		fd, l.OpenFiles = lim.Cur, lim.Cur // the concurrency stops where the descriptors do
	}
	if l.MaxInFlight == 0 { // the o key can open the loop at any time
		l.MaxInFlight = load.DefaultMaxInFlight(fd)
	}
	if err := f.shape(&l); err != nil {
		return l, err
	}
	return l, nil
}

// shape reads the flags of the load's shape into l: the loop, the
// lengths, the prompts, the trace, the sessions, the warm-up and the walk.
func (f *Flags) shape(l *load.Config) error {
	var err error
	if l.Knobs.Rate > 0 {
		l.Knobs.Mode = load.OpenLoop
	}
	if l.Knobs.PromptTokens, l.PromptLength, err = load.ParseLength(f.promptSpec, load.MaxPromptTokens); err != nil {
		return fmt.Errorf("--prompt-tokens: %w", err)
	}
	if l.Knobs.OutputTokens, l.OutputLength, err = load.ParseLength(f.outputSpec, load.MaxOutputTokens); err != nil {
		return fmt.Errorf("--output-tokens: %w", err)
	}
	if f.datasetPath != "" {
		if l.Dataset, err = load.LoadDataset(f.datasetPath, l.Seed); err != nil {
			return f.FlagError(err)
		}
	}
	if err := f.traceShape(l); err != nil {
		return err
	}
	if err := f.sessionShape(l); err != nil {
		return err
	}
	if l.Warmup, err = load.ParseWarmup(f.warmup); err != nil {
		return fmt.Errorf("--warmup: %w", err)
	}
	if f.stages != "" {
		if l.Stages, err = load.ParseStages(f.stages); err != nil {
			return fmt.Errorf("--stages: %w", err)
		}
	}
	if f.ramp != "" {
		if l.Stages, err = load.Ramp(f.ramp, l.Knobs.Rate > 0); err != nil {
			return fmt.Errorf("--ramp: %w", err)
		}
	}
	return nil
}

// flagOf names the flag behind each setting a load.SettingError names.
// The settings no flag sets (the engine's mode) are absent, and their
// errors keep load's words.
var flagOf = map[string]string{
	load.SettingConcurrency: "--concurrency", load.SettingPromptTokens: "--prompt-tokens",
	load.SettingOutputTokens: "--output-tokens", load.SettingRate: "--rate", load.SettingTick: "--tick",
	load.SettingWindow: "--window", load.SettingDuration: "--duration", load.SettingMaxRequests: "--requests",
	load.SettingDrain: "--drain", load.SettingStages: "--stages", load.SettingGoodput: "--goodput",
	load.SettingPromptLength: "--prompt-tokens", load.SettingOutputLength: "--output-tokens",
	load.SettingPrefixTokens: "--prefix-tokens", load.SettingWarmup: "--warmup", load.SettingArrivals: "--arrivals",
	load.SettingBurstiness: "--burstiness", load.SettingMaxInFlight: "--max-in-flight", load.SettingDataset: "--dataset",
	load.SettingTrace: "--trace", load.SettingPrefixGroups: "--prefix-groups", load.SettingSessions: "--sessions", load.SettingMix: "--model",
	load.SettingCacheBust: "--cache-bust",
}

// FlagError is FlagError for these flags: a walk is named by the flag
// that gave it.
func (f *Flags) FlagError(err error) error {
	var le *load.SettingError
	if errors.As(err, &le) && le.Setting == load.SettingStages && f.ramp != "" {
		return fmt.Errorf("--ramp: %w", le.Err)
	}
	return FlagError(err)
}

// FlagError says in the command line's words what load refused: the
// flag's name, then what is wrong with its value, on one line. An error
// that names no load setting with a flag is returned as it is. (--goodput
// is bound beside the objectives, whose parser it shares, but its limits
// are load's.)
func FlagError(err error) error {
	var le *load.SettingError
	if errors.As(err, &le) {
		if name := flagOf[le.Setting]; name != "" {
			return fmt.Errorf("%s: %w", name, le.Err)
		}
	}
	return err
}

// HeadlessWindow is the window of a headless run, which is its SLOs'
// window (sloWindow, given when sloGiven): --window, when given, must be
// that window and one of the dashboard's.
func (f *Flags) HeadlessWindow(sloWindow time.Duration, sloGiven bool) (time.Duration, error) {
	if !f.fs.Changed("window") {
		return sloWindow, nil
	}
	w := f.cfg.Window
	switch {
	case sloGiven && sloWindow != w:
		return 0, errors.New("--window and --slo-window are one window in a headless run: give one")
	case !slices.Contains(load.Windows(), w):
		var names []string
		for _, d := range load.Windows() {
			if d%time.Minute == 0 {
				names = append(names, fmt.Sprintf("%dm", d/time.Minute))
			} else {
				names = append(names, fmt.Sprintf("%ds", d/time.Second))
			}
		}
		return 0, fmt.Errorf("--window: %v is not one of %s (a headless run checks its SLOs over any --slo-window of 10s..5m)", w, strings.Join(names, ", "))
	}
	return w, nil
}
