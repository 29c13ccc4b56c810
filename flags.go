package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/sim/simflag"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
	"github.com/infertop/infertop/themes"
)

// loadFlags are every flag of a command that puts load on an endpoint,
// grouped by concern (one add method each). Most bind straight into the
// runner's configuration; what needs parsing is kept as text for config.
type loadFlags struct {
	cfg runner.Config

	api, apiKeyEnv, apiKeyFile, ttft, gpu          string // endpoint, telemetry
	headers                                        []string
	promptSpec, outputSpec, datasetPath, extraBody string // request body
	fixedOutput                                    bool
	temperature, topP                              float64
	samplingSeed                                   int64
	warmup, stages, ramp                           string // load shape
	slos                                           []string
	goodput, theme                                 string
	version                                        bool
	sim                                            *simflag.Flags
	fs                                             *pflag.FlagSet
	trace                                          traceFlags
	sessions                                       sessionFlags
}

// addLoadFlags binds every load flag to fs, the embedded sim's with the
// sim- prefix.
func addLoadFlags(fs *pflag.FlagSet) *loadFlags {
	f := &loadFlags{fs: fs}
	f.addEndpoint(fs)
	f.addShape(fs)
	f.addTrace(fs)
	f.addSessions(fs)
	f.addBody(fs)
	f.addLimits(fs)
	f.addObjectives(fs)
	f.addTelemetry(fs)
	fs.StringVar(&f.theme, "theme", themes.Default, "theme: "+strings.Join(themes.Names(), ", "))
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	f.sim = simflag.Add(fs, "sim-")
	return f
}

// addEndpoint: where the load goes and how a request is sent.
func (f *loadFlags) addEndpoint(fs *pflag.FlagSet) {
	c, p := &f.cfg, &f.cfg.Probe
	fs.StringVar(&c.URL, "url", "", "endpoint: a base such as http://host:8000/v1, or a full path (default: the embedded sim)")
	fs.StringVar(&p.Model, "model", "", "model name (default: the first model the server lists)")
	fs.BoolVar(&c.Strict, "strict", false, "make a doubt about the setup an error: a --model the server does not list")
	fs.StringVar(&f.api, "api", "", "API: openai-chat, openai-completions, openai-responses, anthropic, ollama, tgi, generic, openai-embeddings or ollama-embed (default: detected)")
	fs.BoolVar(&p.NoStream, "no-stream", false, "ask for whole answers (TTFT, ITL and TPOT are then not observable)")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key, sent as a bearer token (--api anthropic: ANTHROPIC_API_KEY, sent as x-api-key)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "file holding the API key (instead of --api-key-env)")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "extra request header 'Name: value' (repeatable), or @FILE with one a line (kept out of ps); values are secrets")
	fs.BoolVar(&p.Insecure, "insecure", false, "do not verify the server's TLS certificate")
	fs.StringVar(&p.CACert, "cacert", "", "PEM file of extra root certificates")
	fs.DurationVar(&p.Timeout, "timeout", probe.DefaultTimeout, "limit on one request, start to end of stream")
	fs.DurationVar(&p.ConnectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "limit on connection setup")
	fs.StringVar(&f.ttft, "ttft", "first-output", "what ends TTFT: first-output (first message with text) or first-chunk (vLLM's: first message with choices)")
}

// addBody: what a request asks for.
func (f *loadFlags) addBody(fs *pflag.FlagSet) {
	l, p, g := &f.cfg.Load, &f.cfg.Probe, &f.cfg.Probe.Generic
	fs.StringVar(&f.promptSpec, "prompt-tokens", fmt.Sprint(load.DefaultPromptTokens), "prompt length in tokens: N, uniform:MIN-MAX or normal:MEAN,SD (1..32768; keys move the centre)")
	fs.StringVar(&f.outputSpec, "output-tokens", fmt.Sprint(load.DefaultOutputTokens), "output tokens per request (the output limit): N, uniform:MIN-MAX or normal:MEAN,SD (1..32768)")
	fs.StringVar(&f.datasetPath, "dataset", "", "prompts from a JSONL file ({\"prompt\"} or {\"messages\"} a line) or a ShareGPT JSON file, shuffled by --seed")
	fs.IntVar(&l.PrefixTokens, "prefix-tokens", 0, "start every prompt with the same text of about N tokens (prefix-cache experiments)")
	fs.IntVar(&l.PrefixGroups, "prefix-groups", 0, "with --prefix-tokens: G distinct prefixes, each shared by every G-th request (G system prompts)")
	fs.BoolVar(&l.NoCalibrate, "no-calibrate", false, "send the asked number of words instead of learning the server's tokens per word from its usage")
	fs.BoolVar(&f.fixedOutput, "fixed-output", false, "make every request produce exactly --output-tokens (ignore_eos and min_tokens, where the server takes them)")
	fs.StringVar(&p.Body.MaxTokensField, "max-tokens-field", "max_tokens", "OpenAI output-limit field: max_tokens or max_completion_tokens")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature (sent only when given)")
	fs.Float64Var(&f.topP, "top-p", 0, "nucleus sampling top_p (sent only when given)")
	fs.Int64Var(&f.samplingSeed, "sampling-seed", 0, "the server's sampling seed (sent only when given)")
	fs.StringVar(&f.extraBody, "extra-body", "", "JSON object merged into every request body")
	fs.StringVar(&g.Template, "body-template", "", "generic: request body with {{prompt}}, {{max_tokens}} and {{model}}")
	fs.StringVar(&g.OutputPath, "output-path", "output", "generic: dot path of the answer's text, e.g. choices.0.text")
	fs.StringVar(&g.UsagePath, "usage-path", "", "generic: dot path of the object with the token counts (default: the top level)")
	fs.StringVar(&g.Stream, "stream-format", "none", "generic: none, sse or ndjson")
	fs.StringVar(&g.ChunkPath, "chunk-path", "", "generic, streamed: dot path of each chunk's text")
	fs.Uint64Var(&l.Seed, "seed", 1, "seed for prompt synthesis")
	fs.IntVar(&p.Body.Batch, "batch", 1, "embeddings: inputs per request (--api openai-embeddings, ollama-embed)")
}

// addShape: how the load is put on: the loop, its knobs, its walk.
func (f *loadFlags) addShape(fs *pflag.FlagSet) {
	l := &f.cfg.Load
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

// addLimits: when the run is over.
func (f *loadFlags) addLimits(fs *pflag.FlagSet) {
	l := &f.cfg.Load
	fs.DurationVar(&l.Duration, "duration", 0, "stop after this long (0: no limit); the dashboard counts down and stops")
	fs.Int64Var(&l.MaxRequests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.DurationVar(&l.Drain, "drain", load.DefaultDrain, "at the end, how long requests in flight get to finish before they are cancelled and counted incomplete (0: none, as --no-drain)")
	fs.BoolVar(&l.NoDrain, "no-drain", false, "at the end, cancel the requests in flight at once (counted incomplete) instead of giving them --drain")
}

// addObjectives: what the run is judged by.
func (f *loadFlags) addObjectives(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.slos, "slo", nil, "objective, repeatable: e.g. 'ttft_p99<=500ms', 'e2el_p95<5s', 'error_rate<1%', 'output_throughput>=2000'")
	fs.StringVar(&f.goodput, "goodput", "", "per-request limits for goodput, e.g. ttft:500ms,tpot:50ms,e2el:10s")
}

// addTelemetry: where the server's and the GPUs' side is read, and where
// infertop's own metrics are served.
func (f *loadFlags) addTelemetry(fs *pflag.FlagSet) {
	t := &f.cfg.Telemetry
	fs.StringVar(&t.ServerMetrics, "server-metrics", "", "the serving engine's Prometheus /metrics (default: try the server's root /metrics quietly; off: none)")
	fs.StringVar(&t.GPUMetrics, "gpu-metrics", "", "a DCGM exporter's /metrics, for GPU power, energy, utilisation")
	fs.StringVar(&f.gpu, "gpu", "", "local: read the GPUs of this machine with nvidia-smi")
	fs.DurationVar(&t.Every, "scrape-every", telemetry.DefaultEvery, "how often the server's and the GPUs' metrics are read")
	fs.StringVar(&f.cfg.MetricsAddr, "metrics-addr", "", "serve infertop's own Prometheus metrics here, e.g. 127.0.0.1:9464")
}

// parse parses a load command's line; done is true when the command has
// nothing more to do (--help, --version).
func (f *loadFlags) parse(args []string, stdout interface{ Write([]byte) (int, error) }) (done bool, err error) {
	if err := parse(f.fs, args); err != nil {
		return errors.Is(err, pflag.ErrHelp), err
	}
	if f.version {
		fmt.Fprintf(stdout, "infertop %s\n", versionString())
		return true, nil
	}
	return false, nil
}

// zeroMeansDefault are the duration flags whose setting reads zero as its
// package's default: the flag shows that default, so a zero given is a
// mistake to refuse, not a default to take quietly.
var zeroMeansDefault = []string{"tick", "window", "timeout", "connect-timeout", "scrape-every"}

// config checks what only the command line can (values of its own words,
// flags that exclude each other), reads the flags that need reading, and
// leaves every range to the configuration's owners: the runner's Validate
// asks the engine, the client and the sim, and flagError names the flag.
func (f *loadFlags) config() (runner.Config, error) {
	cfg := f.cfg
	l, p, t := &cfg.Load, &cfg.Probe, &cfg.Telemetry
	switch {
	case f.gpu != "" && f.gpu != "local":
		return cfg, usagef("--gpu takes local (nvidia-smi on this machine), got %q", f.gpu)
	case f.stages != "" && f.ramp != "":
		return cfg, usagef("give --stages or --ramp, not both")
	case l.NoDrain && f.fs.Changed("drain") && l.Drain != 0:
		return cfg, usagef("give --drain or --no-drain, not both")
	}
	if f.fs.Changed("drain") && l.Drain == 0 {
		l.NoDrain = true // no drain is what a zero drain says; the engine's zero is its default
	}
	for _, name := range zeroMeansDefault {
		if fl := f.fs.Lookup(name); fl != nil && f.fs.Changed(name) {
			if d, err := time.ParseDuration(fl.Value.String()); err == nil && d == 0 {
				return cfg, usagef("--%s: 0s is not positive", name)
			}
		}
	}
	if f.fs.Changed("burstiness") && l.Arrivals.Kind != "gamma" {
		return cfg, usagef("--burstiness shapes gamma arrivals only: add --arrivals gamma (now %s)", l.Arrivals.Kind)
	}
	if l.NoDrain {
		l.Drain = 0 // the flag's default stands for a drain
	}
	t.GPULocal = f.gpu == "local"
	var lim syscall.Rlimit
	fd := uint64(1024)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		fd, l.OpenFiles = lim.Cur, lim.Cur // the concurrency stops where the descriptors do
	}
	if l.MaxInFlight == 0 { // the o key can open the loop at any time
		l.MaxInFlight = load.DefaultMaxInFlight(fd)
	}
	if err := f.shape(l); err != nil {
		return cfg, err
	}
	var err error
	if f.api != "" {
		if cfg.API, err = probe.ParseKind(f.api); err != nil {
			return cfg, usagef("--api: %v", err)
		}
	}
	if _, err := themes.Lookup(f.theme); err != nil {
		return cfg, usageError{err}
	}
	if p.TTFT, err = probe.ParseTTFTMode(f.ttft); err != nil {
		return cfg, usagef("--ttft: %v", err)
	}
	if cfg.Objectives, err = slo.ParseAll(f.slos); err != nil {
		return cfg, usagef("--slo: %v", err)
	}
	if l.Goodput, err = slo.ParseGoodput(f.goodput); err != nil {
		return cfg, usagef("--goodput: %v", err)
	}
	if g := l.Goodput; cfg.API.Embeds() && (g.TTFT > 0 || g.TPOT > 0 || g.TTFO > 0) {
		return cfg, usagef("--goodput %s: %v; only an e2el limit applies", f.goodput, runner.ErrEmbeddings)
	}
	if err := f.request(p); err != nil {
		return cfg, err
	}
	if cfg.URL == "" {
		if cfg.Sim, err = f.sim.Params(); err != nil {
			return cfg, usageError{err}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, f.flagError(err)
	}
	cfg.Version, cfg.Settings = versionString(), map[string]string{}
	f.fs.Visit(func(fl *pflag.Flag) { cfg.Settings[fl.Name] = f.setting(fl) })
	return cfg, nil
}

// shape reads the flags of the load's shape into l: the loop, the
// lengths, the prompts, the warm-up and the walk.
func (f *loadFlags) shape(l *load.Config) error {
	var err error
	if l.Knobs.Rate > 0 {
		l.Knobs.Mode = load.OpenLoop
	}
	if l.Knobs.PromptTokens, l.PromptLength, err = load.ParseLength(f.promptSpec, load.MaxPromptTokens); err != nil {
		return usagef("--prompt-tokens: %v", err)
	}
	if l.Knobs.OutputTokens, l.OutputLength, err = load.ParseLength(f.outputSpec, load.MaxOutputTokens); err != nil {
		return usagef("--output-tokens: %v", err)
	}
	if f.datasetPath != "" {
		if l.Dataset, err = load.LoadDataset(f.datasetPath, l.Seed); err != nil {
			return flagError(err)
		}
	}
	if err := f.traceShape(l); err != nil {
		return err
	}
	if err := f.sessionShape(l); err != nil {
		return err
	}
	if l.Warmup, err = load.ParseWarmup(f.warmup); err != nil {
		return usagef("--warmup: %v", err)
	}
	if f.stages != "" {
		if l.Stages, err = load.ParseStages(f.stages); err != nil {
			return usagef("--stages: %v", err)
		}
	}
	if f.ramp != "" {
		if l.Stages, err = load.Ramp(f.ramp, l.Knobs.Rate > 0); err != nil {
			return usagef("--ramp: %v", err)
		}
	}
	return nil
}

// setting is a flag's value as the reports store it: URLs without their
// credentials, header values never (only their names).
func (f *loadFlags) setting(fl *pflag.Flag) string {
	switch fl.Name {
	case "url", "server-metrics", "gpu-metrics":
		return probe.RedactURL(fl.Value.String())
	case "extra-body", "body-template": // a body may carry a key ({"api_key": ...})
		return probe.Redact(fl.Value.String(), 0)
	case "header":
		var names []string
		for _, h := range f.headers {
			if strings.HasPrefix(h, "@") {
				names = append(names, h) // a file's name
				continue
			}
			name, _, _ := strings.Cut(h, ":")
			names = append(names, strings.TrimSpace(name)+": <redacted>")
		}
		return strings.Join(names, "; ")
	}
	return fl.Value.String()
}

// request completes the client's configuration from the flags that need
// reading: the headers, the key, the sampling fields set.
func (f *loadFlags) request(p *probe.Config) error {
	var err error
	switch p.Header, err = probe.ParseHeaders(f.headers); {
	case errors.Is(err, probe.ErrBadHeader):
		return usagef("bad --header: %v", err)
	case err != nil:
		return usagef("--header %v", err)
	}
	env := f.apiKeyEnv
	kind := probe.Kind(f.api)
	if f.api == "" {
		kind, _, _ = probe.KindFromPath(f.cfg.URL) // a URL ending in /v1/messages
	}
	if kind == probe.Anthropic && !f.fs.Changed("api-key-env") {
		env = "ANTHROPIC_API_KEY"
	}
	p.APIKey = os.Getenv(env) // never from a flag's value
	if f.apiKeyFile != "" {
		k, err := os.ReadFile(f.apiKeyFile)
		if err != nil {
			return usagef("--api-key-file: %v", err)
		}
		p.APIKey = strings.TrimSpace(string(k))
	}
	b := &p.Body
	b.IgnoreEOS, b.MinTokens = f.fixedOutput, f.fixedOutput
	if f.fs.Changed("temperature") {
		b.Temperature = &f.temperature
	}
	if f.fs.Changed("top-p") {
		b.TopP = &f.topP
	}
	if f.fs.Changed("sampling-seed") {
		b.Seed = &f.samplingSeed
	}
	if f.extraBody != "" {
		if err := json.Unmarshal([]byte(f.extraBody), &b.Extra); err != nil {
			return usagef("--extra-body must be a JSON object: %v", err)
		}
	}
	p.MaxConns = load.MaxConcurrency
	return nil
}

// flagError is flagError (flagerrors.go) for this command's flags: a walk
// is named by the flag that gave it, and the window of a headless run is
// its --slo-window (runHeadless sets the engine's window from it).
func (f *loadFlags) flagError(err error) error {
	var le *load.SettingError
	if errors.As(err, &le) {
		switch {
		case le.Setting == load.SettingStages && f.ramp != "":
			return usagef("--ramp: %v", le.Err)
		case le.Setting == load.SettingWindow && f.fs.Lookup("slo-window") != nil:
			return usagef("--slo-window: %v", le.Err)
		}
	}
	return flagError(err)
}

// startError says in the command line's words why a load could not start:
// the runner, the client and the engine name their settings, the user
// knows them as flags. The endpoint URL is the one setting named in the
// client's words: config has checked the --url one, and a comparison's
// canary has a URL of its own (--compare, which its caller names).
func startError(err error) error {
	var pe *probe.SettingError
	if errors.As(err, &pe) && pe.Setting == probe.SettingURL {
		return usageError{err}
	}
	return flagError(err)
}
