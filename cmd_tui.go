package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/themes"
	"github.com/infertop/infertop/ui"
)

const tuiSynopsis = `Usage: infertop [flags]          the live dashboard
       infertop sim [flags]      the simulated endpoint alone (infertop sim --help)

Puts closed-loop load on an OpenAI-compatible endpoint (streamed
/v1/chat/completions) and shows latency percentiles, TTFT, throughput, errors,
in-flight requests and a table of phases, live. Without --url it starts an
embedded simulated endpoint and watches that. Keys change the load while it
runs; press ? in the dashboard for all of them.`

// loadFlags are the flags that describe the target and the load.
type loadFlags struct {
	url, model, api, apiKeyEnv, theme, ttft string
	concurrency, prompt, output             int
	window, tick, timeout, connectTimeout   time.Duration
	seed                                    uint64
	headers                                 []string
	version                                 bool
}

func runTUI(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("infertop", tuiSynopsis, stdout)
	var f loadFlags
	fs.StringVar(&f.url, "url", "", "endpoint: a base such as http://host:8000/v1, or the full chat-completions URL (default: the embedded sim)")
	fs.StringVar(&f.model, "model", "", "model name (default: the first model the server lists)")
	fs.StringVar(&f.api, "api", "openai-chat", "API kind: openai-chat")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key, sent as a bearer token")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "extra request header 'Name: value' (repeatable)")
	fs.IntVarP(&f.concurrency, "concurrency", "c", 8, "requests kept in flight (closed loop)")
	fs.IntVar(&f.prompt, "prompt-tokens", 256, "prompt length in tokens (1..32768)")
	fs.IntVar(&f.output, "output-tokens", 128, "output tokens per request, sent as max_tokens (1..32768)")
	fs.DurationVar(&f.window, "window", 30*time.Second, "rolling window: 10s, 30s, 1m or 5m")
	fs.DurationVar(&f.tick, "tick", 250*time.Millisecond, "snapshot interval")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "limit on one request, start to end of stream")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 10*time.Second, "limit on connection setup")
	fs.StringVar(&f.ttft, "ttft", "first-output", "what ends TTFT: first-output (first message with text) or first-chunk (vLLM's: first message with choices)")
	fs.StringVar(&f.theme, "theme", "dark", "theme: "+strings.Join(themes.Names(), ", "))
	fs.Uint64Var(&f.seed, "seed", 1, "seed for prompt synthesis")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	sf := addSimFlags(fs, "sim-")
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.version {
		fmt.Fprintf(stdout, "infertop %s\n", versionString())
		return nil
	}
	if err := f.validate(); err != nil {
		return err
	}
	term, ok := stdout.(*os.File)
	if !ok || !isatty.IsTerminal(term.Fd()) || !isatty.IsTerminal(os.Stdin.Fd()) {
		return usagef("the dashboard needs a terminal on stdin and stdout")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target := load.Target{API: f.api}
	rawURL := f.url
	var simDone chan error
	if rawURL == "" {
		p, err := sf.params("sim-")
		if err != nil {
			return err
		}
		srv, err := sim.New(p)
		if err != nil {
			return usageError{err}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("embedded sim: %w", err)
		}
		simCtx, stopSim := context.WithCancel(context.Background())
		simDone = make(chan error, 1)
		go func() { simDone <- srv.Serve(simCtx, ln, nil) }()
		defer func() { stopSim(); <-simDone }()
		rawURL = "http://" + ln.Addr().String() + "/v1"
		target.Sim = true
		if f.model == "" {
			f.model = p.Model
		}
	}
	client, err := f.client(ctx, rawURL)
	if err != nil {
		return err
	}
	defer client.Close()
	target.URL, target.Model = probe.RedactURL(rawURL), client.Config().Model

	eng, err := load.New(load.Config{
		Do: client.Do, Target: target, Tick: f.tick, Window: f.window, Seed: f.seed,
		Knobs: load.Knobs{Concurrency: f.concurrency, PromptTokens: f.prompt, OutputTokens: f.output},
	})
	if err != nil {
		return usageError{err}
	}
	engDone := make(chan error, 1)
	go func() { engDone <- eng.Run(ctx) }()
	// Stopping the engine cancels what is in flight at once.
	defer func() { cancel(); <-engDone }()

	r := lipgloss.NewRenderer(term)
	if os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	snaps, unsubscribe := eng.Subscribe()
	defer unsubscribe()
	model, err := ui.New(eng, ui.Options{Renderer: r, Theme: f.theme, Snapshots: snaps})
	if err != nil {
		return usageError{err}
	}
	if _, err := tea.NewProgram(model, tea.WithAltScreen(), tea.WithOutput(term)).Run(); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

func (f *loadFlags) validate() error {
	switch {
	case f.api != "openai-chat":
		return usagef("--api %q is not supported: this version speaks openai-chat", f.api)
	case f.concurrency < 1 || f.concurrency > load.MaxConcurrency:
		return usagef("--concurrency must be within 1..%d, got %d", load.MaxConcurrency, f.concurrency)
	case f.prompt < 1 || f.prompt > load.MaxPromptTokens:
		return usagef("--prompt-tokens must be within 1..%d, got %d", load.MaxPromptTokens, f.prompt)
	case f.output < 1 || f.output > load.MaxOutputTokens:
		return usagef("--output-tokens must be within 1..%d, got %d", load.MaxOutputTokens, f.output)
	case f.tick < 10*time.Millisecond:
		return usagef("--tick must be at least 10ms")
	case f.timeout <= 0 || f.connectTimeout <= 0:
		return usagef("--timeout and --connect-timeout must be positive")
	}
	ok := false
	for _, w := range load.Windows {
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
	return nil
}

// client builds the probe client for rawURL, asking the server for its
// first model when --model was not given.
func (f *loadFlags) client(ctx context.Context, rawURL string) (*probe.Client, error) {
	chatURL, err := probe.ChatURL(rawURL)
	if err != nil {
		return nil, usageError{err}
	}
	hdr := http.Header{}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, usagef("bad --header %q: want 'Name: value'", h)
		}
		hdr.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	mode, _ := probe.ParseTTFTMode(f.ttft)
	cfg := probe.Config{
		URL: chatURL, Model: f.model, APIKey: os.Getenv(f.apiKeyEnv), Timeout: f.timeout,
		ConnectTimeout: f.connectTimeout, MaxConns: f.concurrency * 2, TTFT: mode, Header: hdr,
	}
	c, err := probe.New(cfg)
	if err != nil {
		return nil, usageError{err}
	}
	if f.model != "" {
		return c, nil
	}
	modelsURL, _ := probe.ModelsURL(rawURL)
	ids, err := c.ListModels(ctx, modelsURL)
	c.Close()
	if err != nil {
		return nil, usagef("%v (is the endpoint up? pass --model to skip this)", err)
	}
	if len(ids) == 0 {
		return nil, usagef("%s lists no models; pass --model", probe.RedactURL(modelsURL))
	}
	cfg.Model = ids[0]
	return probe.New(cfg)
}
