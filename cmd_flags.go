package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/exporter"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
	"github.com/infertop/infertop/themes"
)

// loadFlags are the flags that describe the target, the protocol and the
// load, shared by every command that puts load on an endpoint.
type loadFlags struct {
	url, model, api, apiKeyEnv, apiKeyFile, theme, ttft string
	concurrency, prompt, output                         int
	promptSpec, outputSpec                              string
	promptLen, outputLen                                load.Length
	prefixTokens                                        int
	noCalibrate                                         bool
	warmup, stagesSpec, rampSpec, datasetPath           string
	duration                                            time.Duration
	requests                                            int64
	window, tick, timeout, connectTimeout               time.Duration
	seed                                                uint64
	headers                                             []string
	version, noStream, fixedOutput, insecure            bool
	maxTokensField, extraBody, cacert                   string
	temperature, topP                                   float64
	samplingSeed                                        int64
	template, outputPath, usagePath, streamFormat       string
	chunkPath                                           string
	slos                                                []string
	goodput, metricsAddr                                string
	rate, burstiness                                    float64
	serverMetrics, gpuMetrics, gpu                      string
	scrapeEvery                                         time.Duration
	arrivals                                            string
	maxInFlight                                         int
	fs                                                  *pflag.FlagSet

	// Parsed by validate.
	objectives []slo.Objective
	limits     load.Goodput
	warm       load.Warmup
	walk       []load.Stage
	dataset    *load.Dataset
}

func (f *loadFlags) add(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.url, "url", "", "endpoint: a base such as http://host:8000/v1, or a full path (default: the embedded sim)")
	fs.StringVar(&f.model, "model", "", "model name (default: the first model the server lists)")
	fs.StringVar(&f.api, "api", "", "API: openai-chat, openai-completions, ollama, tgi or generic (default: detected)")
	fs.BoolVar(&f.noStream, "no-stream", false, "ask for whole answers (TTFT, ITL and TPOT are then not observable)")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key, sent as a bearer token")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "file holding the API key (instead of --api-key-env)")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "extra request header 'Name: value' (repeatable)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the server's TLS certificate")
	fs.StringVar(&f.cacert, "cacert", "", "PEM file of extra root certificates")
	fs.IntVarP(&f.concurrency, "concurrency", "c", 8, "requests kept in flight (closed loop)")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: requests per second whatever the server does (0: closed loop)")
	fs.StringVar(&f.arrivals, "arrivals", "constant", "open loop arrivals: constant, poisson or gamma")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "gamma arrivals' shape, as vLLM's: 1 is Poisson, <1 burstier")
	fs.IntVar(&f.maxInFlight, "max-in-flight", 0, "open loop: most requests in flight; later arrivals wait in a backlog, the wait counted (0: no cap)")
	fs.StringVar(&f.promptSpec, "prompt-tokens", "256", "prompt length in tokens: N, uniform:MIN-MAX or normal:MEAN,SD (1..32768; keys move the centre)")
	fs.StringVar(&f.outputSpec, "output-tokens", "128", "output tokens per request (the output limit): N, uniform:MIN-MAX or normal:MEAN,SD (1..32768)")
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
	fs.DurationVar(&f.window, "window", 30*time.Second, "rolling window: 10s, 30s, 1m or 5m")
	fs.DurationVar(&f.tick, "tick", 250*time.Millisecond, "snapshot interval")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "limit on one request, start to end of stream")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 10*time.Second, "limit on connection setup")
	fs.StringVar(&f.ttft, "ttft", "first-output", "what ends TTFT: first-output (first message with text) or first-chunk (vLLM's: first message with choices)")
	fs.StringVar(&f.theme, "theme", "dark", "theme: "+strings.Join(themes.Names(), ", "))
	fs.Uint64Var(&f.seed, "seed", 1, "seed for prompt synthesis")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: no limit); the dashboard counts down and pauses")
	fs.Int64Var(&f.requests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.StringVar(&f.warmup, "warmup", "", "keep the first N requests or DURATION out of the figures, as a warm-up phase")
	fs.StringVar(&f.stagesSpec, "stages", "", "walk through stages, each a phase: 'concurrency=8,duration=30s;rate=50,duration=1m' (keys: concurrency, rate, prompt, output, duration)")
	fs.StringVar(&f.rampSpec, "ramp", "", "ramp linearly FROM:TO:DURATION, the concurrency (or the rate, with --rate), a phase a second")
	fs.StringArrayVar(&f.slos, "slo", nil, "objective, repeatable: e.g. 'ttft_p99<=500ms', 'e2el_p95<5s', 'error_rate<1%', 'output_throughput>=2000'")
	fs.StringVar(&f.goodput, "goodput", "", "per-request limits for goodput, e.g. ttft:500ms,tpot:50ms,e2el:10s")
	fs.StringVar(&f.serverMetrics, "server-metrics", "", "the serving engine's Prometheus /metrics (default: try the server's root /metrics quietly; off: none)")
	fs.StringVar(&f.gpuMetrics, "gpu-metrics", "", "a DCGM exporter's /metrics, for GPU power, energy, utilisation")
	fs.StringVar(&f.gpu, "gpu", "", "local: read the GPUs of this machine with nvidia-smi")
	fs.DurationVar(&f.scrapeEvery, "scrape-every", time.Second, "how often the server's and the GPUs' metrics are read")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve infertop's own Prometheus metrics here, e.g. 127.0.0.1:9464")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
}

func (f *loadFlags) validate() error {
	switch {
	case f.concurrency < 1 || f.concurrency > load.MaxConcurrency:
		return usagef("--concurrency must be within 1..%d, got %d", load.MaxConcurrency, f.concurrency)
	case f.prefixTokens < 0 || f.prefixTokens > load.MaxPromptTokens:
		return usagef("--prefix-tokens must be within 0..%d", load.MaxPromptTokens)
	case f.tick < 10*time.Millisecond:
		return usagef("--tick must be at least 10ms")
	case f.timeout <= 0 || f.connectTimeout <= 0:
		return usagef("--timeout and --connect-timeout must be positive")
	case f.maxTokensField != "max_tokens" && f.maxTokensField != "max_completion_tokens":
		return usagef("--max-tokens-field must be max_tokens or max_completion_tokens")
	case f.rate < 0 || f.rate > load.MaxRate:
		return usagef("--rate must be within 0..%d requests per second", load.MaxRate)
	case f.maxInFlight < 0:
		return usagef("--max-in-flight must not be negative")
	case f.gpu != "" && f.gpu != "local":
		return usagef("--gpu takes local (nvidia-smi on this machine), got %q", f.gpu)
	case f.gpu == "local" && f.gpuMetrics != "":
		return usagef("give --gpu local or --gpu-metrics, not both")
	case f.scrapeEvery < 100*time.Millisecond:
		return usagef("--scrape-every must be at least 100ms")
	}
	if _, err := load.ParseArrivals(f.arrivals, f.burstiness); err != nil {
		return usageError{err}
	}
	var err error
	if f.prompt, f.promptLen, err = load.ParseLength(f.promptSpec, load.MaxPromptTokens); err != nil {
		return usagef("--prompt-tokens: %v", err)
	}
	if f.output, f.outputLen, err = load.ParseLength(f.outputSpec, load.MaxOutputTokens); err != nil {
		return usagef("--output-tokens: %v", err)
	}
	if f.api != "" {
		if _, err := probe.ParseKind(f.api); err != nil {
			return usageError{err}
		}
	}
	ok := false
	for _, w := range load.Windows() {
		ok = ok || w == f.window
	}
	if !ok {
		return usagef("--window must be one of 10s, 30s, 1m, 5m, got %v", f.window)
	}
	if _, err := themes.Lookup(f.theme); err != nil {
		return usageError{err}
	}
	if _, err := probe.ParseTTFTMode(f.ttft); err != nil {
		return usageError{err}
	}
	if f.extraBody != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(f.extraBody), &m); err != nil {
			return usagef("--extra-body must be a JSON object: %v", err)
		}
	}
	switch {
	case f.duration < 0 || f.requests < 0:
		return usagef("--duration and --requests must not be negative")
	case f.stagesSpec != "" && f.rampSpec != "":
		return usagef("give --stages or --ramp, not both")
	}
	if f.datasetPath != "" {
		if f.dataset, err = load.LoadDataset(f.datasetPath, f.seed); err != nil {
			return usageError{err}
		}
	}
	if f.warm, err = load.ParseWarmup(f.warmup); err != nil {
		return usageError{err}
	}
	if f.stagesSpec != "" {
		if f.walk, err = load.ParseStages(f.stagesSpec); err != nil {
			return usagef("--stages: %v", err)
		}
	}
	if f.rampSpec != "" {
		if f.walk, err = load.Ramp(f.rampSpec, f.rate > 0); err != nil {
			return usageError{err}
		}
	}
	if f.objectives, err = slo.ParseAll(f.slos); err != nil {
		return usageError{err}
	}
	if f.limits, err = slo.ParseGoodput(f.goodput); err != nil {
		return usageError{err}
	}
	if k := probe.Kind(f.api); f.url == "" && (k == probe.Ollama || k == probe.TGI) {
		return usagef("the embedded sim speaks openai-chat, openai-completions and generic, not %s: pass --url", f.api)
	}
	return nil
}

// startExporter serves --metrics-addr, when given, until ctx ends. The
// exporter is nil when it is not.
func (f *loadFlags) startExporter(ctx context.Context) (*exporter.Exporter, <-chan error, error) {
	if f.metricsAddr == "" {
		return nil, nil, nil
	}
	ln, err := exporter.Listen(f.metricsAddr)
	if err != nil {
		return nil, nil, usageError{err}
	}
	x := exporter.New(f.objectives)
	done := make(chan error, 1)
	go func() { defer crash.Recover(); done <- x.Serve(ctx, ln) }()
	return x, done, nil
}

// chain calls every non-nil hook in turn.
func chain(hooks ...func(load.Record)) func(load.Record) {
	var hs []func(load.Record)
	for _, h := range hooks {
		if h != nil {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return func(r load.Record) {
		for _, h := range hs {
			h(r)
		}
	}
}

// apiKey reads the key from --api-key-file or the --api-key-env variable;
// it is never taken from a flag's value.
func (f *loadFlags) apiKey() (string, error) {
	if f.apiKeyFile != "" {
		b, err := os.ReadFile(f.apiKeyFile)
		if err != nil {
			return "", usagef("--api-key-file: %v", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return os.Getenv(f.apiKeyEnv), nil
}

// config builds the probe configuration, everything but the URL and kind.
func (f *loadFlags) config() (probe.Config, error) {
	hdr := http.Header{}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return probe.Config{}, usagef("bad --header %q: want 'Name: value'", h)
		}
		hdr.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	key, err := f.apiKey()
	if err != nil {
		return probe.Config{}, err
	}
	mode, _ := probe.ParseTTFTMode(f.ttft)
	body := probe.BodyOptions{MaxTokensField: f.maxTokensField, IgnoreEOS: f.fixedOutput, MinTokens: f.fixedOutput}
	if f.fs.Changed("temperature") {
		body.Temperature = &f.temperature
	}
	if f.fs.Changed("top-p") {
		body.TopP = &f.topP
	}
	if f.fs.Changed("sampling-seed") {
		body.Seed = &f.samplingSeed
	}
	if f.extraBody != "" {
		_ = json.Unmarshal([]byte(f.extraBody), &body.Extra) // checked in validate
	}
	return probe.Config{
		Model: f.model, APIKey: key, Timeout: f.timeout, ConnectTimeout: f.connectTimeout,
		MaxConns: load.MaxConcurrency, TTFT: mode, Header: hdr, NoStream: f.noStream, Body: body,
		Insecure: f.insecure, CACert: f.cacert,
		Generic: probe.GenericOptions{Template: f.template, OutputPath: f.outputPath, UsagePath: f.usagePath,
			Stream: f.streamFormat, ChunkPath: f.chunkPath},
	}, nil
}

// client builds the probe client for rawURL: the kind from --api or
// detected (why says how, for one line to the user), the model from --model
// or the server's first.
func (f *loadFlags) client(ctx context.Context, rawURL string) (c *probe.Client, kind probe.Kind, why string, err error) {
	cfg, err := f.config()
	if err != nil {
		return nil, "", "", err
	}
	if f.api != "" {
		kind, _ = probe.ParseKind(f.api)
	} else {
		kind, why, err = probe.Detect(ctx, cfg, rawURL)
		if err != nil {
			return nil, "", "", usageError{err}
		}
	}
	cfg.API = kind
	if cfg.URL, err = probe.EndpointURL(kind, rawURL, !f.noStream); err != nil {
		return nil, "", "", usageError{err}
	}
	if c, err = probe.New(cfg); err != nil {
		return nil, "", "", usageError{err}
	}
	if f.model != "" {
		return c, kind, why, nil
	}
	ids, err := c.Models(ctx, rawURL)
	c.Close()
	if err != nil {
		return nil, "", "", usagef("%v (is the endpoint up? pass --model to skip this)", err)
	}
	if len(ids) == 0 {
		return nil, "", "", usagef("%s lists no models; pass --model", probe.RedactURL(rawURL))
	}
	cfg.Model = ids[0]
	c, err = probe.New(cfg)
	if err != nil {
		return nil, "", "", usageError{err}
	}
	return c, kind, why, nil
}

// apiLabel is the kind as the header shows it.
func (f *loadFlags) apiLabel(k probe.Kind) string {
	if f.noStream {
		return fmt.Sprintf("%s, not streamed", k)
	}
	return string(k)
}

// setup is what every load command shares: the endpoint (the embedded sim
// when there is no --url), the client, and the target as shown.
type setup struct {
	simGPUs int // the embedded sim's GPUs (0: no sim, or none)
	client  *probe.Client
	kind    probe.Kind
	target  load.Target
	rawURL  string
	stop    func() // stops the embedded sim and closes the client
}

func (f *loadFlags) setup(ctx context.Context, sf *simFlags, stderr io.Writer) (*setup, error) {
	st := &setup{rawURL: f.url, stop: func() {}}
	if st.rawURL == "" {
		if f.api == "" {
			f.api = string(probe.OpenAIChat)
		}
		p, err := sf.params("sim-")
		if err != nil {
			return nil, err
		}
		srv, err := sim.New(p)
		if err != nil {
			return nil, usageError{err}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded sim: %w", err)
		}
		simCtx, stopSim := context.WithCancel(context.Background())
		simDone := make(chan error, 1)
		go func() { defer crash.Recover(); simDone <- srv.Serve(simCtx, ln, nil) }()
		st.stop = func() { stopSim(); <-simDone }
		st.rawURL = "http://" + ln.Addr().String() + "/v1"
		st.target.Sim, st.simGPUs = true, p.GPUs
		if f.model == "" {
			f.model = p.Model
		}
	}
	client, kind, why, err := f.client(ctx, st.rawURL)
	if err != nil {
		st.stop()
		return nil, err
	}
	stopSim := st.stop
	st.stop = func() { client.Close(); stopSim() }
	if why != "" {
		fmt.Fprintf(stderr, "infertop: API %s (%s)\n", kind, why)
	}
	if f.fixedOutput && kind != probe.OpenAIChat && kind != probe.OpenAICompletions {
		fmt.Fprintf(stderr, "infertop: --fixed-output: %s has no way to force the output length; answers may stop early\n", kind)
	}
	st.client, st.kind = client, kind
	st.target.URL, st.target.Model, st.target.API = probe.RedactURL(client.Config().URL), client.Config().Model, f.apiLabel(kind)
	return st, nil
}

// manifest records what this command runs against, for the reports.
func (f *loadFlags) manifest(ctx context.Context, st *setup) report.Manifest {
	m := report.NewManifest(versionString())
	m.URL, m.API, m.Model, m.Stream = st.target.URL, string(st.kind), st.target.Model, !f.noStream
	m.Seed = f.seed
	m.Knobs = report.KnobsJSON{Concurrency: f.concurrency, PromptTokens: f.prompt, OutputTokens: f.output, Rate: f.rate}
	if f.rate > 0 {
		m.Knobs.Mode = "open"
	} else {
		m.Knobs.Mode = "closed"
	}
	m.Server = st.client.ServerInfo(ctx, st.rawURL)
	m.Settings = map[string]string{}
	f.fs.Visit(func(fl *pflag.Flag) { m.Settings[fl.Name] = fl.Value.String() })
	if g := f.limits; g.Set() {
		m.Goodput = map[string]float64{"ttft": float64(g.TTFT) / 1e6, "tpot": float64(g.TPOT) / 1e6, "e2el": float64(g.E2E) / 1e6}
	}
	return m
}

// parseLoad parses a load command's flags; done is true when the command
// has nothing more to do (--version).
func (f *loadFlags) parseLoad(fs *pflag.FlagSet, args []string, stdout io.Writer) (done bool, err error) {
	if err := parse(fs, args); err != nil {
		return false, err
	}
	if f.version {
		fmt.Fprintf(stdout, "infertop %s\n", versionString())
		return true, nil
	}
	return false, f.validate()
}

// knobs are the starting knob values.
func (f *loadFlags) knobs() load.Knobs {
	k := load.Knobs{Concurrency: f.concurrency, PromptTokens: f.prompt, OutputTokens: f.output, Rate: f.rate}
	if f.rate > 0 {
		k.Mode = load.OpenLoop
	}
	if len(f.walk) > 0 { // the first stage is where the run starts
		f.walk[0].Apply(&k)
	}
	return k
}

// engineConfig is the engine's configuration from the flags.
func (f *loadFlags) engineConfig(st *setup, window time.Duration) load.Config {
	arr, _ := load.ParseArrivals(f.arrivals, f.burstiness) // checked in validate
	return load.Config{
		Do: wrapDo(st.client.Do), Target: st.target, Tick: f.tick, Window: window, Seed: f.seed,
		Knobs: f.knobs(), Goodput: f.limits, Arrivals: arr, MaxInFlight: f.maxInFlight,
		PromptLength: f.promptLen, OutputLength: f.outputLen, PrefixTokens: f.prefixTokens, NoCalibrate: f.noCalibrate,
		Warmup: f.warm, MaxRequests: f.requests, Dataset: f.dataset,
	}
}

// startLive starts the engine for a live view (the dashboard, the SSH
// server): the exporter, a walk, the time limit. stop cancels ctx's load
// and waits for all of it.
func (f *loadFlags) startLive(ctx context.Context, st *setup) (*load.Engine, *telemetry.Scraper, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	xctx, stopExporter := context.WithCancel(context.Background())
	x, xDone, err := f.startExporter(xctx)
	if err != nil {
		cancel()
		stopExporter()
		return nil, nil, nil, err
	}
	cfg := f.engineConfig(st, f.window)
	if x != nil {
		cfg.OnResult = x.Observe
	}
	eng, err := load.New(cfg)
	if err != nil {
		cancel()
		stopExporter()
		return nil, nil, nil, usageError{err}
	}
	var wg sync.WaitGroup
	sc := f.scraper(st)
	if sc != nil {
		wg.Add(1)
		go func() { defer wg.Done(); defer crash.Recover(); sc.Run(ctx) }()
	}
	if x != nil { // the exporter follows the snapshots until the engine stops
		xs, _ := eng.Subscribe()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer crash.Recover()
			for s := range xs {
				x.Update(s)
			}
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); defer crash.Recover(); eng.Run(ctx) }()
	if len(f.walk) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); defer crash.Recover(); eng.Walk(ctx, f.walk) }()
	}
	var timer *time.Timer
	if f.duration > 0 { // the time is up: the load pauses, the screens stay
		timer = time.AfterFunc(f.duration, func() { eng.SetPaused(true) })
	}
	return eng, sc, func() {
		if timer != nil {
			timer.Stop()
		}
		cancel() // cancels what is in flight at once
		wg.Wait()
		stopExporter()
		if xDone != nil {
			<-xDone
		}
	}, nil
}

// live is what the dashboard and the SSH server share: the endpoint (or
// the embedded sim) and the live load on it. stop ends both.
func (f *loadFlags) live(ctx context.Context, sf *simFlags, stderr io.Writer) (*setup, *load.Engine, *telemetry.Scraper, func(), error) {
	st, err := f.setup(ctx, sf, stderr)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	eng, sc, stopLoad, err := f.startLive(ctx, st)
	if err != nil {
		st.stop()
		return nil, nil, nil, nil, err
	}
	return st, eng, sc, func() { stopLoad(); st.stop() }, nil
}

// saver writes the reports for the run so far into dir (the s key).
func (f *loadFlags) saver(ctx context.Context, st *setup, sc *telemetry.Scraper, dir string) func(load.Snapshot) (string, error) {
	start := time.Now()
	return func(s load.Snapshot) (string, error) {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		m := f.manifest(sctx, st)
		m.Start, m.End = start, start.Add(s.Elapsed)
		rep := &report.Report{Manifest: m, Final: s, Energy: report.EnergyOf(sc, start, s)}
		rep.Verdicts = report.Verdicts(f.objectives, s, rep.Energy)
		base := filepath.Join(dir, "infertop-"+start.Format("20060102-150405"))
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			return "", err
		}
		if err := os.WriteFile(base+".txt", text.Bytes(), 0o644); err != nil {
			return "", fmt.Errorf("write report: %w", err)
		}
		if err := writeReports(rep, base+".json", base+".csv"); err != nil {
			return "", err
		}
		return base + ".{json,csv,txt}", nil
	}
}

// scraper reads the server's and the GPUs' metrics; nil when there is
// nothing to read. For the embedded sim: its /metrics and /dcgm.
func (f *loadFlags) scraper(st *setup) *telemetry.Scraper {
	cfg := telemetry.Config{Every: f.scrapeEvery, GPUURL: f.gpuMetrics, GPULocal: f.gpu == "local"}
	switch {
	case f.serverMetrics == "off":
	case f.serverMetrics != "":
		cfg.ServerURL = f.serverMetrics
	default:
		cfg.ServerURL, cfg.Quiet = telemetry.ServerURLFor(st.rawURL), !st.target.Sim
	}
	if st.target.Sim && st.simGPUs > 0 && cfg.GPUURL == "" && !cfg.GPULocal {
		cfg.GPUURL = strings.TrimSuffix(telemetry.ServerURLFor(st.rawURL), "/metrics") + "/dcgm"
	}
	if cfg.ServerURL == "" && cfg.GPUURL == "" && !cfg.GPULocal {
		return nil
	}
	return telemetry.NewScraper(cfg)
}

// windowFigures are the window's figures for SLO checks, with the energy
// per token when the GPUs are read.
func windowFigures(s load.Snapshot, sc *telemetry.Scraper) slo.Figures {
	f := slo.FromWindow(s)
	if sc != nil {
		f.JoulesPerToken, f.HasEnergy = telemetry.PerToken(sc.View(s.Window), s.OutTokPerSec)
	}
	return f
}

// telemetryView is the dashboard's hook to the scraper (nil: none).
func telemetryView(sc *telemetry.Scraper) func(time.Duration) telemetry.View {
	if sc == nil {
		return nil
	}
	return sc.View
}

// wrapDo lets the tests put a function around every request (to make one
// panic in the engine's own goroutine); it is the identity otherwise.
var wrapDo = func(do func(context.Context, probe.Request) probe.Result) func(context.Context, probe.Request) probe.Result {
	return do
}
