package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
	"github.com/infertop/infertop/themes"
)

// endpointFlags say where the load goes and how a request is sent.
type endpointFlags struct {
	url, model, api, apiKeyEnv, apiKeyFile, cacert, ttft string
	headers                                              []string
	noStream, insecure                                   bool
	timeout, connectTimeout                              time.Duration
}

func (f *endpointFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "endpoint: a base such as http://host:8000/v1, or a full path (default: the embedded sim)")
	fs.StringVar(&f.model, "model", "", "model name (default: the first model the server lists)")
	fs.StringVar(&f.api, "api", "", "API: openai-chat, openai-completions, ollama, tgi or generic (default: detected)")
	fs.BoolVar(&f.noStream, "no-stream", false, "ask for whole answers (TTFT, ITL and TPOT are then not observable)")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key, sent as a bearer token")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "file holding the API key (instead of --api-key-env)")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "extra request header 'Name: value' (repeatable)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the server's TLS certificate")
	fs.StringVar(&f.cacert, "cacert", "", "PEM file of extra root certificates")
	fs.DurationVar(&f.timeout, "timeout", probe.DefaultTimeout, "limit on one request, start to end of stream")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", probe.DefaultConnectTimeout, "limit on connection setup")
	fs.StringVar(&f.ttft, "ttft", "first-output", "what ends TTFT: first-output (first message with text) or first-chunk (vLLM's: first message with choices)")
}

// bodyFlags say what a request asks for.
type bodyFlags struct {
	promptSpec, outputSpec, datasetPath, maxTokensField, extraBody string
	template, outputPath, usagePath, streamFormat, chunkPath       string
	prefixTokens                                                   int
	noCalibrate, fixedOutput                                       bool
	temperature, topP                                              float64
	samplingSeed                                                   int64
	seed                                                           uint64
}

func (f *bodyFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.promptSpec, "prompt-tokens", fmt.Sprint(load.DefaultPromptTokens), "prompt length in tokens: N, uniform:MIN-MAX or normal:MEAN,SD (1..32768; keys move the centre)")
	fs.StringVar(&f.outputSpec, "output-tokens", fmt.Sprint(load.DefaultOutputTokens), "output tokens per request (the output limit): N, uniform:MIN-MAX or normal:MEAN,SD (1..32768)")
	fs.StringVar(&f.datasetPath, "dataset", "", "prompts from a JSONL file ({\"prompt\"} or {\"messages\"} a line) or a ShareGPT JSON file, shuffled by --seed")
	fs.IntVar(&f.prefixTokens, "prefix-tokens", 0, "start every prompt with the same text of about N tokens (prefix-cache experiments)")
	fs.BoolVar(&f.noCalibrate, "no-calibrate", false, "send the asked number of words instead of learning the server's tokens per word from its usage")
	fs.BoolVar(&f.fixedOutput, "fixed-output", false, "make every request produce exactly --output-tokens (ignore_eos and min_tokens, where the server takes them)")
	fs.StringVar(&f.maxTokensField, "max-tokens-field", "max_tokens", "OpenAI output-limit field: max_tokens or max_completion_tokens")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature (sent only when given)")
	fs.Float64Var(&f.topP, "top-p", 0, "nucleus sampling top_p (sent only when given)")
	fs.Int64Var(&f.samplingSeed, "sampling-seed", 0, "the server's sampling seed (sent only when given)")
	fs.StringVar(&f.extraBody, "extra-body", "", "JSON object merged into every request body")
	fs.StringVar(&f.template, "body-template", "", "generic: request body with {{prompt}}, {{max_tokens}} and {{model}}")
	fs.StringVar(&f.outputPath, "output-path", "output", "generic: dot path of the answer's text, e.g. choices.0.text")
	fs.StringVar(&f.usagePath, "usage-path", "", "generic: dot path of the object with the token counts (default: the top level)")
	fs.StringVar(&f.streamFormat, "stream-format", "none", "generic: none, sse or ndjson")
	fs.StringVar(&f.chunkPath, "chunk-path", "", "generic, streamed: dot path of each chunk's text")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for prompt synthesis")
}

// shapeFlags say how the load is put on: the loop, its knobs, its walk.
type shapeFlags struct {
	concurrency, maxInFlight       int
	rate, burstiness               float64
	arrivals, warmup, stages, ramp string
	window, tick                   time.Duration
}

func (f *shapeFlags) add(fs *pflag.FlagSet) {
	fs.IntVarP(&f.concurrency, "concurrency", "c", load.DefaultConcurrency, "requests kept in flight (closed loop)")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: requests per second whatever the server does (0: closed loop)")
	fs.StringVar(&f.arrivals, "arrivals", "constant", "open loop arrivals: constant, poisson or gamma")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "gamma arrivals' shape, as vLLM's: 1 is Poisson, <1 burstier")
	fs.IntVar(&f.maxInFlight, "max-in-flight", 0, "open loop: most requests in flight; later arrivals wait in a backlog, the wait counted (0: no cap)")
	fs.StringVar(&f.warmup, "warmup", "", "keep the first N requests or DURATION out of the figures, as a warm-up phase")
	fs.StringVar(&f.stages, "stages", "", "walk through stages, each a phase: 'concurrency=8,duration=30s;rate=50,duration=1m' (keys: concurrency, rate, prompt, output, duration)")
	fs.StringVar(&f.ramp, "ramp", "", "ramp linearly FROM:TO:DURATION, the concurrency (or the rate, with --rate), a phase a second")
	fs.DurationVar(&f.window, "window", load.DefaultWindow, "rolling window: 10s, 30s, 1m or 5m")
	fs.DurationVar(&f.tick, "tick", load.DefaultTick, "snapshot interval")
}

// limitFlags say when the run is over.
type limitFlags struct {
	duration, drain time.Duration
	requests        int64
}

func (f *limitFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: no limit); the dashboard counts down and stops")
	fs.Int64Var(&f.requests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.DurationVar(&f.drain, "drain", load.DefaultDrain, "at the end, how long requests in flight get to finish before they are cancelled and counted incomplete")
}

// objectiveFlags are what the run is judged by.
type objectiveFlags struct {
	slos    []string
	goodput string
}

func (f *objectiveFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.slos, "slo", nil, "objective, repeatable: e.g. 'ttft_p99<=500ms', 'e2el_p95<5s', 'error_rate<1%', 'output_throughput>=2000'")
	fs.StringVar(&f.goodput, "goodput", "", "per-request limits for goodput, e.g. ttft:500ms,tpot:50ms,e2el:10s")
}

// telemetryFlags say where the server's and the GPUs' side is read, and
// where infertop's own metrics are served.
type telemetryFlags struct {
	serverMetrics, gpuMetrics, gpu, metricsAddr string
	scrapeEvery                                 time.Duration
}

func (f *telemetryFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.serverMetrics, "server-metrics", "", "the serving engine's Prometheus /metrics (default: try the server's root /metrics quietly; off: none)")
	fs.StringVar(&f.gpuMetrics, "gpu-metrics", "", "a DCGM exporter's /metrics, for GPU power, energy, utilisation")
	fs.StringVar(&f.gpu, "gpu", "", "local: read the GPUs of this machine with nvidia-smi")
	fs.DurationVar(&f.scrapeEvery, "scrape-every", telemetry.DefaultEvery, "how often the server's and the GPUs' metrics are read")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve infertop's own Prometheus metrics here, e.g. 127.0.0.1:9464")
}

// loadFlags are every flag of a command that puts load on an endpoint,
// grouped by concern; config turns them into a runner.Config.
type loadFlags struct {
	endpoint  endpointFlags
	body      bodyFlags
	shape     shapeFlags
	limits    limitFlags
	objective objectiveFlags
	telemetry telemetryFlags
	theme     string
	version   bool
	sim       *simFlags
	fs        *pflag.FlagSet
}

// addLoadFlags binds every load flag to fs, the embedded sim's with the
// sim- prefix.
func addLoadFlags(fs *pflag.FlagSet) *loadFlags {
	f := &loadFlags{fs: fs}
	f.endpoint.add(fs)
	f.shape.add(fs)
	f.body.add(fs)
	f.limits.add(fs)
	f.objective.add(fs)
	f.telemetry.add(fs)
	fs.StringVar(&f.theme, "theme", themes.Default, "theme: "+strings.Join(themes.Names(), ", "))
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	f.sim = addSimFlags(fs, "sim-")
	return f
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

// config checks the flags and builds the runner's configuration.
func (f *loadFlags) config() (runner.Config, error) {
	e, b, sh, l, t := &f.endpoint, &f.body, &f.shape, &f.limits, &f.telemetry
	switch {
	case sh.concurrency < 1 || sh.concurrency > load.MaxConcurrency:
		return runner.Config{}, usagef("--concurrency must be within 1..%d, got %d", load.MaxConcurrency, sh.concurrency)
	case b.prefixTokens < 0 || b.prefixTokens > load.MaxPromptTokens:
		return runner.Config{}, usagef("--prefix-tokens must be within 0..%d", load.MaxPromptTokens)
	case sh.tick < 10*time.Millisecond:
		return runner.Config{}, usagef("--tick must be at least 10ms")
	case e.timeout <= 0 || e.connectTimeout <= 0:
		return runner.Config{}, usagef("--timeout and --connect-timeout must be positive")
	case b.maxTokensField != "max_tokens" && b.maxTokensField != "max_completion_tokens":
		return runner.Config{}, usagef("--max-tokens-field must be max_tokens or max_completion_tokens")
	case sh.rate < 0 || sh.rate > load.MaxRate:
		return runner.Config{}, usagef("--rate must be within 0..%d requests per second", load.MaxRate)
	case sh.maxInFlight < 0:
		return runner.Config{}, usagef("--max-in-flight must not be negative")
	case t.gpu != "" && t.gpu != "local":
		return runner.Config{}, usagef("--gpu takes local (nvidia-smi on this machine), got %q", t.gpu)
	case t.gpu == "local" && t.gpuMetrics != "":
		return runner.Config{}, usagef("give --gpu local or --gpu-metrics, not both")
	case t.scrapeEvery < 100*time.Millisecond:
		return runner.Config{}, usagef("--scrape-every must be at least 100ms")
	case l.duration < 0 || l.requests < 0:
		return runner.Config{}, usagef("--duration and --requests must not be negative")
	case l.drain <= 0:
		return runner.Config{}, usagef("--drain must be positive")
	case sh.stages != "" && sh.ramp != "":
		return runner.Config{}, usagef("give --stages or --ramp, not both")
	case !validWindow(sh.window):
		return runner.Config{}, usagef("--window must be one of 10s, 30s, 1m, 5m, got %v", sh.window)
	}
	arr, err := load.ParseArrivals(sh.arrivals, sh.burstiness)
	if err != nil {
		return runner.Config{}, usagef("--arrivals: %v", err)
	}
	lc := load.Config{Tick: sh.tick, Window: sh.window, Seed: b.seed, Arrivals: arr, MaxInFlight: sh.maxInFlight,
		PrefixTokens: b.prefixTokens, NoCalibrate: b.noCalibrate, MaxRequests: l.requests, Duration: l.duration, Drain: l.drain}
	lc.Knobs = load.Knobs{Concurrency: sh.concurrency, Rate: sh.rate}
	if sh.rate > 0 {
		lc.Knobs.Mode = load.OpenLoop
	}
	if lc.Knobs.PromptTokens, lc.PromptLength, err = load.ParseLength(b.promptSpec, load.MaxPromptTokens); err != nil {
		return runner.Config{}, usagef("--prompt-tokens: %v", err)
	}
	if lc.Knobs.OutputTokens, lc.OutputLength, err = load.ParseLength(b.outputSpec, load.MaxOutputTokens); err != nil {
		return runner.Config{}, usagef("--output-tokens: %v", err)
	}
	var kind probe.Kind
	if e.api != "" {
		if kind, err = probe.ParseKind(e.api); err != nil {
			return runner.Config{}, usageError{err}
		}
	}
	if _, err := themes.Lookup(f.theme); err != nil {
		return runner.Config{}, usageError{err}
	}
	mode, err := probe.ParseTTFTMode(e.ttft)
	if err != nil {
		return runner.Config{}, usageError{err}
	}
	if b.datasetPath != "" {
		if lc.Dataset, err = load.LoadDataset(b.datasetPath, b.seed); err != nil {
			return runner.Config{}, usagef("--%v", err)
		}
	}
	if lc.Warmup, err = load.ParseWarmup(sh.warmup); err != nil {
		return runner.Config{}, usagef("--warmup: %v", err)
	}
	if sh.stages != "" {
		if lc.Stages, err = load.ParseStages(sh.stages); err != nil {
			return runner.Config{}, usagef("--stages: %v", err)
		}
	}
	if sh.ramp != "" {
		if lc.Stages, err = load.Ramp(sh.ramp, sh.rate > 0); err != nil {
			return runner.Config{}, usagef("--ramp: %v", err)
		}
	}
	objectives, err := slo.ParseAll(f.objective.slos)
	if err != nil {
		return runner.Config{}, usageError{err}
	}
	if lc.Goodput, err = slo.ParseGoodput(f.objective.goodput); err != nil {
		return runner.Config{}, usageError{err}
	}
	if e.url == "" && (kind == probe.Ollama || kind == probe.TGI) {
		return runner.Config{}, usagef("the embedded sim speaks openai-chat, openai-completions and generic, not %s: pass --url", kind)
	}
	pc, err := f.probeConfig(mode)
	if err != nil {
		return runner.Config{}, err
	}
	cfg := runner.Config{URL: e.url, API: kind, Probe: pc, Load: lc, Objectives: objectives, MetricsAddr: t.metricsAddr,
		Telemetry: runner.Telemetry{ServerMetrics: t.serverMetrics, GPUMetrics: t.gpuMetrics, GPULocal: t.gpu == "local", Every: t.scrapeEvery},
		Version:   versionString(), Settings: map[string]string{}}
	if e.url == "" {
		if cfg.Sim, err = f.sim.params("sim-"); err != nil {
			return runner.Config{}, err
		}
	}
	f.fs.Visit(func(fl *pflag.Flag) { cfg.Settings[fl.Name] = fl.Value.String() })
	return cfg, nil
}

func validWindow(w time.Duration) bool {
	for _, x := range load.Windows() {
		if x == w {
			return true
		}
	}
	return false
}

// probeConfig is the client's configuration, everything but the URL, the
// API and (when not given) the model.
func (f *loadFlags) probeConfig(mode probe.TTFTMode) (probe.Config, error) {
	e, b := &f.endpoint, &f.body
	hdr := http.Header{}
	for _, h := range e.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return probe.Config{}, usagef("bad --header %q: want 'Name: value'", h)
		}
		hdr.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	key := os.Getenv(e.apiKeyEnv) // never from a flag's value
	if e.apiKeyFile != "" {
		k, err := os.ReadFile(e.apiKeyFile)
		if err != nil {
			return probe.Config{}, usagef("--api-key-file: %v", err)
		}
		key = strings.TrimSpace(string(k))
	}
	body := probe.BodyOptions{MaxTokensField: b.maxTokensField, IgnoreEOS: b.fixedOutput, MinTokens: b.fixedOutput}
	if f.fs.Changed("temperature") {
		body.Temperature = &b.temperature
	}
	if f.fs.Changed("top-p") {
		body.TopP = &b.topP
	}
	if f.fs.Changed("sampling-seed") {
		body.Seed = &b.samplingSeed
	}
	if b.extraBody != "" {
		if err := json.Unmarshal([]byte(b.extraBody), &body.Extra); err != nil {
			return probe.Config{}, usagef("--extra-body must be a JSON object: %v", err)
		}
	}
	return probe.Config{
		Model: e.model, APIKey: key, Timeout: e.timeout, ConnectTimeout: e.connectTimeout,
		MaxConns: load.MaxConcurrency, TTFT: mode, Header: hdr, NoStream: e.noStream, Body: body,
		Insecure: e.insecure, CACert: e.cacert,
		Generic: probe.GenericOptions{Template: b.template, OutputPath: b.outputPath, UsagePath: b.usagePath,
			Stream: b.streamFormat, ChunkPath: b.chunkPath},
	}, nil
}

// startError says in the command line's words why a load could not start:
// the runner names its settings, the user knows them as flags.
func startError(err error) error {
	var se *runner.SettingError
	if !errors.As(err, &se) {
		return usageError{err}
	}
	switch se.Setting {
	case runner.SettingModel:
		if errors.Is(err, runner.ErrNoModels) {
			return usagef("%v; pass --model", se.Err)
		}
		return usagef("%v (is the endpoint up? pass --model to skip this)", se.Err)
	case runner.SettingMetricsAddr:
		return usagef("--metrics-addr: %v", se.Err)
	case runner.SettingRequestsLog:
		return usagef("--requests-log: %v", se.Err)
	case runner.SettingAPI:
		return usagef("%v: pass --url", se.Err)
	}
	return usageError{err}
}
