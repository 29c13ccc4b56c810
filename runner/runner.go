// Package runner owns one load from start to stop: the endpoint (the
// embedded sim, or a URL), the probe client (protocol detection, model
// discovery), the engine, the server and GPU scraper, infertop's own
// exporter, the requests log and the stage walk (the engine's). The
// dashboard, the SSH server and the headless run are followers of a
// runner: they read its snapshots and turn its knobs; none of them starts a
// service of its own.
//
// Figures is where the runner's telemetry meets a snapshot
// (telemetry.Join); Report the one place a report is built from one.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/exporter"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/otlp"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

// Do sends one request and measures it: (*probe.Client).Do.
type Do = func(context.Context, probe.Request) probe.Result

// SettingError is a setting of Config the runner could not use. Setting
// names it in the runner's own terms (one of the Setting* constants), so a
// command line can name its flag instead.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// The settings a SettingError names.
const (
	SettingModel       = "model"           // the model list could not be read, or is empty
	SettingAPI         = "api"             // the embedded sim does not speak it
	SettingMetricsAddr = "metrics address" // infertop's own metrics cannot be served there
	SettingRequestsLog = "requests log"    // the requests log cannot be written
	SettingScrapeEvery = "scrape interval" // Telemetry.Every is too short
	SettingGPUs        = "GPU metrics"     // the GPUs are to be read two ways at once
	SettingInfoTimeout = "info timeout"    // InfoTimeout is negative
	SettingOTLP        = "OTLP collector"  // the telemetry cannot be pushed there
)

// ErrNoModels is the error of a server that lists no models.
var ErrNoModels = errors.New("the server lists no models")

// ErrModelNotListed is the error (with Config.Strict; else a note) of a
// model the server does not list among its models: every request would
// be a 404.
var ErrModelNotListed = errors.New("is not among the models the server lists")

// Config is one load: where, what, how much, and what to keep of it.
type Config struct {
	// URL is the endpoint; empty starts the embedded sim with Sim.
	URL string
	Sim sim.Params
	// API is the protocol; empty: detected (the sim: openai-chat).
	API probe.Kind
	// Probe configures the client; its URL and API are filled in, and its
	// Model when empty (the server's first, or the sim's).
	Probe probe.Config
	// Load configures the engine; its Do and Target are filled in, and
	// OnResult is chained after the requests log and the exporter.
	Load load.Config
	// Objectives are the run's SLOs (the exporter's and the reports').
	Objectives []slo.Objective
	// Telemetry says where the server's and the GPUs' metrics are read.
	Telemetry Telemetry
	// MetricsAddr serves infertop's own Prometheus metrics (empty: none).
	MetricsAddr string
	// RequestsLog writes one JSON line per request (empty: none).
	RequestsLog string
	// OTLP pushes every request's GenAI metrics (and spans) to an
	// OpenTelemetry collector (its URL empty: none).
	OTLP otlp.Config
	// Version and Settings go into the reports' manifest.
	Version  string
	Settings map[string]string
	// Notes gets one-line notes for the person (the API detected, a
	// setting the server cannot honour); nil: discarded.
	Notes io.Writer
	// WrapDo, if set, wraps the request function (tests).
	WrapDo func(Do) Do
	// Ready, if set, is called once everything is ready, just before the
	// engine starts; an error fails Start. Two runners that must put
	// their load on at the same moment (a comparison) wait for each
	// other here.
	Ready func(context.Context) error
	// Name is the endpoint's name in a comparison ("baseline", "canary"):
	// its OpenTelemetry metrics and spans carry it (otlp.Target.Name), as
	// the shared Prometheus exporter's target label does ("": alone).
	Name string
	// Exporter, if set, is fed instead of one served at MetricsAddr: the
	// caller serves it (a comparison serves both sides on one address).
	Exporter *exporter.Exporter
	// InfoTimeout bounds the read of the server's description (0:
	// InfoTimeout, the constant); a test of a server that never answers
	// sets it short instead of waiting it out. It bounds the check of a
	// model given against the server's list too.
	InfoTimeout time.Duration
	// Strict makes a doubt about the setup an error instead of a note: a
	// model given that the server does not list.
	Strict bool
	// HoldMetrics keeps infertop's own metrics served past Stop, with the
	// final counts, until Release: a Prometheus scraping every 15 s would
	// otherwise never read the last requests of a run.
	HoldMetrics bool
}

// Telemetry says where the server's and the GPUs' metrics come from.
type Telemetry struct {
	// ServerMetrics is the serving engine's /metrics: empty tries the
	// endpoint's root /metrics quietly, "off" reads none.
	ServerMetrics string
	// GPUMetrics is a DCGM exporter's /metrics; GPULocal reads this
	// machine's GPUs with nvidia-smi.
	GPUMetrics string
	GPULocal   bool
	// Every is the scrape interval (0: telemetry.DefaultEvery; else at
	// least MinScrapeEvery).
	Every time.Duration
}

// ServerMetricsOff turns the server's metrics off.
const ServerMetricsOff = "off"

// Runner is one load, started. Its methods are safe from any goroutine.
type Runner struct {
	cfg     Config
	client  *probe.Client
	kind    probe.Kind
	why     string // how the API was detected ("" when given)
	rawURL  string
	target  load.Target
	context int // the model's context in tokens, as the server lists it (0: not known)
	simGPUs int
	eng     *load.Engine
	scraper *telemetry.Scraper
	x       *exporter.Exporter
	xAddr   string
	reqLog  *report.RequestsLog
	otel    *otlp.Exporter
	started time.Time

	cancel   context.CancelFunc // ends the engine and the scraper
	wg       sync.WaitGroup     // every goroutine the runner started
	stopSim  func()
	stopX    func()
	stopOnce sync.Once
	xOnce    sync.Once // stopX, from Stop or from Release
	stopErr  error

	// The server's description, read once in the background at the start
	// (bounded by Config.InfoTimeout), so that neither the run nor a save waits
	// on a slow /v1/models: infoDone is closed once info is set.
	info     map[string]json.RawMessage
	infoDone chan struct{}
}

// StartTimeout bounds the protocol detection and the model discovery.
const StartTimeout = 15 * time.Second

// InfoTimeout bounds the read of the server's description (model list,
// version) for the reports, unless Config.InfoTimeout says otherwise.
const InfoTimeout = 3 * time.Second

// go runs f in a goroutine the runner owns, under the crash guard.
func (r *Runner) spawn(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer crash.Recover()
		f()
	}()
}

// Start starts, in order, the embedded sim (when there is no URL), the
// probe client (detection, model discovery), the exporter, the requests
// log, the engine (and its walk), the scraper and the exporter's follower.
// On an error everything started is stopped again before it returns; a
// configuration Validate refuses starts nothing.
func Start(ctx context.Context, cfg Config) (_ *Runner, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Notes == nil {
		cfg.Notes = io.Discard
	}
	if cfg.InfoTimeout == 0 {
		cfg.InfoTimeout = InfoTimeout
	}
	r := &Runner{cfg: cfg, rawURL: cfg.URL, stopSim: func() {}, stopX: func() {}, infoDone: make(chan struct{})}
	defer func() {
		if err != nil {
			r.Stop()
			r.Release()
		}
	}()
	if r.rawURL == "" {
		if err := r.startSim(); err != nil {
			return nil, err
		}
	}
	if err := r.startClient(ctx); err != nil {
		return nil, err
	}
	if cfg.Exporter != nil {
		r.x = cfg.Exporter
	} else if cfg.MetricsAddr != "" {
		ln, err := exporter.Listen(cfg.MetricsAddr)
		if err != nil {
			return nil, &SettingError{SettingMetricsAddr, err}
		}
		r.x, r.xAddr = exporter.New(cfg.Objectives), ln.Addr().String()
		xctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); defer crash.Recover(); r.x.Serve(xctx, ln) }()
		r.stopX = func() { stop(); <-done }
	}
	if cfg.RequestsLog != "" {
		if r.reqLog, err = report.OpenRequestsLog(cfg.RequestsLog); err != nil {
			return nil, &SettingError{SettingRequestsLog, err}
		}
	}
	if cfg.OTLP.URL != "" {
		pc := r.client.Config()
		t := otlp.Target{API: r.kind, Endpoint: pc.URL, Model: pc.Model, Stream: !pc.NoStream, Version: cfg.Version, Name: cfg.Name}
		if r.otel, err = otlp.New(cfg.OTLP, t); err != nil {
			return nil, &SettingError{SettingOTLP, err}
		}
	}
	lc := cfg.loadConfig()
	do := r.client.Do
	if cfg.WrapDo != nil {
		do = cfg.WrapDo(do)
	}
	lc.Do, lc.Target = do, r.target
	if b := cfg.Probe.Body; b.Images > 0 || !b.Output.IsZero() {
		// The images' and the tool definitions' tokens come on top of the
		// text in every prompt: learnt as the words' share, they would
		// shrink the text to nothing. The prompt knob is the text's.
		lc.NoCalibrate = true
	}
	if lc.ByTokenizer {
		lc.Tokenize = r.client.Tokenize
	}
	if lc.ResetPrefixCache {
		// Once now, before the first request: the run starts cold, and a
		// server with no such endpoint is refused here, in one line,
		// rather than by a failed request later.
		if err := r.client.ResetPrefixCache(ctx); err != nil {
			return nil, fmt.Errorf("--reset-prefix-cache: %w", err)
		}
		lc.ResetCache = r.client.ResetPrefixCache
	}
	if lc.MaxContext == 0 {
		lc.MaxContext = r.context
	}
	lc.OnResult = r.chain(lc.OnResult)
	if r.x != nil {
		next := lc.OnProgress
		lc.OnProgress = func(p load.Progress) {
			r.x.Progress(p)
			if next != nil {
				next(p)
			}
		}
	}
	if r.eng, err = load.New(lc); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if cfg.Ready != nil {
		if err := cfg.Ready(ctx); err != nil {
			return nil, err
		}
	}
	r.scraper = r.newScraper()
	r.scraper.StartPerf(ctx) // before the first request: what the server kept before the run is drained
	if r.cfg.Telemetry.GPULocal {
		if _, err := exec.LookPath("nvidia-smi"); err != nil {
			// Else the run goes on with no GPU figure and no word why.
			fmt.Fprintf(r.cfg.Notes, "infertop: --gpu local: nvidia-smi is not on the PATH (%v): no GPU power or energy figures\n", errors.Unwrap(err))
		}
	}
	engCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.started = time.Now()
	r.spawn(func() { r.eng.Run(engCtx) })
	r.spawn(func() {
		defer close(r.infoDone)
		ictx, cancel := context.WithTimeout(engCtx, r.cfg.InfoTimeout)
		defer cancel()
		r.info = r.client.ServerInfo(ictx, r.rawURL)
	})
	if r.scraper != nil {
		r.spawn(func() { r.scraper.Run(engCtx) })
	}
	if r.x != nil { // the exporter follows the snapshots until the engine stops
		snaps, _ := r.eng.Subscribe()
		r.spawn(func() {
			for s := range snaps {
				r.x.Update(s, r.Figures(s).Window)
			}
		})
	}
	return r, nil
}

// startSim starts the embedded sim on a port of its own (Validate has
// checked that it speaks the API).
func (r *Runner) startSim() error {
	if r.cfg.API == "" {
		r.cfg.API = probe.OpenAIChat
	}
	r.cfg.Sim.Adapters = mixAdapters(r.cfg.Sim, r.cfg.Load.Mix)
	srv, err := sim.New(r.cfg.Sim)
	if err != nil {
		return fmt.Errorf("embedded sim: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("embedded sim: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer crash.Recover()
		srv.Serve(ctx, ln, nil, sim.WithGuard(crash.Recover))
	}()
	r.stopSim = func() { stop(); <-done }
	r.rawURL = "http://" + ln.Addr().String() + "/v1"
	r.target.Sim, r.simGPUs = true, r.cfg.Sim.GPUs
	if r.cfg.Probe.Model == "" {
		r.cfg.Probe.Model = r.cfg.Sim.Model
	}
	return nil
}

// mixAdapters are the sim's adapters and, as adapters as fast as the
// base model, the models of a mix the sim does not serve: a mix on the
// embedded sim is served as it is asked for (--sim-adapters gives the
// names speeds of their own).
func mixAdapters(p sim.Params, mix load.Mix) []sim.Adapter {
	out := slices.Clone(p.Adapters)
	for _, name := range mix.Names() {
		if name != p.Model && !slices.ContainsFunc(out, func(a sim.Adapter) bool { return a.Name == name }) {
			out = append(out, sim.Adapter{Name: name, Slowdown: 1})
		}
	}
	return out
}

// startClient builds the probe client: the API given or detected, the
// model given or the server's first.
func (r *Runner) startClient(ctx context.Context) error {
	// A server that accepts and never answers must not hold the start for
	// the request timeout (minutes): detection and discovery are bounded.
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	pc := r.cfg.Probe
	kind := r.cfg.API
	if kind == "" {
		var err error
		if kind, r.why, err = probe.Detect(ctx, pc, r.rawURL); err != nil {
			return err
		}
	}
	pc.API = kind
	var err error
	if pc.URL, err = probe.EndpointURL(kind, r.rawURL, !pc.NoStream); err != nil {
		return err
	}
	if err := r.model(ctx, &pc); err != nil {
		return err
	}
	if r.client, err = probe.New(pc); err != nil {
		return err
	}
	r.kind = kind
	if r.why != "" {
		fmt.Fprintf(r.cfg.Notes, "infertop: API %s (%s)\n", kind, r.why)
	}
	if said, why, ok := probe.KindFromPath(r.rawURL); ok && r.why == "" && said != kind {
		// --api given against a URL whose path names another API: its
		// path is replaced, and the person should know where requests go.
		fmt.Fprintf(r.cfg.Notes, "infertop: --api %s, but %s (%s): requests go to %s\n", kind, why, said, probe.RedactURL(pc.URL))
	}
	if pc.Body.IgnoreEOS && !fixesOutput(kind) {
		fmt.Fprintf(r.cfg.Notes, "infertop: %s has no way to force the output length; answers may stop early\n", kind)
	}
	api := string(kind)
	if pc.NoStream {
		api += ", not streamed"
	}
	r.target.URL, r.target.Model, r.target.API = probe.RedactURL(pc.URL), pc.Model, api
	if len(r.cfg.Load.Mix) > 0 {
		r.target.Model = r.cfg.Load.Mix.String()
	}
	return nil
}

// model fills pc's model in from the server's list when none is given
// (the first listed), and checks one given against it: a model the server
// does not list is a note, or an error with Config.Strict. A list that
// cannot be read is an error only when a model was to be chosen from it.
// It also learns the model's context, where the list says.
func (r *Runner) model(ctx context.Context, pc *probe.Config) error {
	c, err := probe.New(*pc)
	if err != nil {
		return err
	}
	defer c.Close()
	given := pc.Model != ""
	if given { // a check only: bounded as the description's read is
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.InfoTimeout)
		defer cancel()
	}
	ms, err := c.ModelList(ctx, r.rawURL)
	switch {
	case given && (err != nil || len(ms) == 0):
		return nil
	case err != nil:
		return &SettingError{SettingModel, err}
	case len(ms) == 0:
		return &SettingError{SettingModel, fmt.Errorf("%w: %s", ErrNoModels, probe.RedactURL(r.rawURL))}
	case !given:
		pc.Model = ms[0].ID
	}
	for _, name := range r.cfg.Load.Mix.Names() { // the mix's others: a note each, as the one model's
		if name != pc.Model && !slices.ContainsFunc(ms, func(m probe.ModelInfo) bool { return sameModel(m.ID, name) }) {
			fmt.Fprintf(r.cfg.Notes, "infertop: warning: model %q of the mix is not listed by the server; its requests may fail\n", name)
		}
	}
	var ids []string
	for _, m := range ms {
		if sameModel(m.ID, pc.Model) {
			r.context = m.MaxModelLen
			return nil
		}
		ids = append(ids, m.ID)
	}
	// The server's ids are untrusted: sanitised and cut before any line.
	for i, id := range ids {
		ids[i] = sanitize.Short(id, 128)
	}
	listed := strings.Join(ids, ", ")
	if len(ids) > 5 {
		listed = strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
	}
	err = fmt.Errorf("%q %w (%s)", pc.Model, ErrModelNotListed, listed)
	if r.cfg.Strict {
		return &SettingError{SettingModel, err}
	}
	fmt.Fprintf(r.cfg.Notes, "infertop: warning: model %v; requests may fail (--strict makes this an error)\n", err)
	return nil
}

// chain puts the requests log, the exporter and the OTLP push before
// next.
func (r *Runner) chain(next func(load.Record)) func(load.Record) {
	var hs []func(load.Record)
	if r.reqLog != nil {
		hs = append(hs, r.reqLog.Write)
	}
	if r.x != nil {
		hs = append(hs, r.x.Observe)
	}
	if r.otel != nil {
		hs = append(hs, r.otel.Observe)
	}
	if r.cfg.Probe.ServerTimings {
		// Offered for the join with the server's /perf_metrics; the
		// scraper is made before the load starts (nil: none is read).
		hs = append(hs, func(rec load.Record) { r.scraper.NoteRequest(&rec.Result) })
	}
	if next != nil {
		hs = append(hs, next)
	}
	if len(hs) == 0 {
		return nil
	}
	return func(rec load.Record) {
		for _, h := range hs {
			h(rec)
		}
	}
}

// newScraper reads the server's and the GPUs' metrics; nil when there is
// nothing to read. For the embedded sim: its /metrics and /dcgm.
func (r *Runner) newScraper() *telemetry.Scraper {
	t := r.cfg.Telemetry
	cfg := telemetry.Config{Every: t.Every, GPUURL: t.GPUMetrics, GPULocal: t.GPULocal}
	if cfg.Every == 0 {
		cfg.Every = telemetry.DefaultEvery
	}
	switch t.ServerMetrics {
	case ServerMetricsOff:
	case "":
		cfg.ServerURL, cfg.Quiet = telemetry.ServerURLFor(r.rawURL), !r.target.Sim
	default:
		cfg.ServerURL = t.ServerMetrics
	}
	if r.target.Sim && r.simGPUs > 0 && cfg.GPUURL == "" && !cfg.GPULocal {
		cfg.GPUURL = strings.TrimSuffix(telemetry.ServerURLFor(r.rawURL), "/metrics") + "/dcgm"
	}
	if r.cfg.Probe.ServerTimings {
		// TensorRT-LLM gives its per-request timings at /perf_metrics, not
		// in its answers: read whenever they are asked for, and dropped
		// after one answer where the server has none (telemetry.PerfRun).
		cfg.PerfURL = telemetry.PerfURLFor(r.rawURL)
		if r.x != nil {
			cfg.OnPerf, cfg.OnSplit = r.x.ObservePerf, r.x.ObserveSplit
		}
	}
	if cfg.ServerURL == "" && cfg.GPUURL == "" && !cfg.GPULocal && cfg.PerfURL == "" {
		return nil
	}
	return telemetry.NewScraper(cfg)
}

// Engine is the load: its knobs, its snapshots.
func (r *Runner) Engine() *load.Engine { return r.eng }

// Latest is the engine's newest snapshot.
func (r *Runner) Latest() load.Snapshot { return r.eng.Latest() }

// Subscribe follows the engine's snapshots (see load.Engine.Subscribe).
func (r *Runner) Subscribe() (<-chan load.Snapshot, func()) { return r.eng.Subscribe() }

// Target is what is measured, as shown.
func (r *Runner) Target() load.Target { return r.target }

// Objectives are the run's SLOs.
func (r *Runner) Objectives() []slo.Objective { return r.cfg.Objectives }

// MetricsAddr is where infertop's own metrics are served ("": nowhere).
func (r *Runner) MetricsAddr() string { return r.xAddr }

// Seconds are the load's sealed seconds after since (load.Engine's).
func (r *Runner) Seconds(ctx context.Context, since int64) (load.Sealed, error) {
	return r.eng.Seconds(ctx, since)
}

// Started is the wall-clock time the load started.
func (r *Runner) Started() time.Time { return r.started }

// Figures joins the telemetry over s's window to s (telemetry.Join).
func (r *Runner) Figures(s load.Snapshot) telemetry.Figures {
	if r.scraper == nil {
		return telemetry.Join(s, nil)
	}
	v := r.scraper.View(s.Window)
	return telemetry.Join(s, &v)
}

// Check checks the objectives over s's window (scope names it).
func (r *Runner) Check(s load.Snapshot, scope string) []slo.Verdict {
	return slo.CheckAll(r.cfg.Objectives, r.Figures(s).Window, scope)
}

// Report is the report of the run as s shows it: the manifest (the
// server's description read once, within ctx), the energy when the GPUs
// are read, and the verdicts over the run and every phase.
func (r *Runner) Report(ctx context.Context, s load.Snapshot) *report.Report {
	m := report.NewManifest(r.cfg.Version)
	m.URL, m.API, m.Model, m.Stream = r.target.URL, string(r.kind), r.target.Model, !r.cfg.Probe.NoStream
	if b := r.cfg.Probe.Body; b.Images > 0 {
		m.Images = &report.ImagesJSON{PerRequest: b.Images, Width: b.ImageW, Height: b.ImageH, Bytes: r.client.ImageBytes()}
	}
	m.Seed = r.cfg.Load.Seed
	k := r.cfg.Load.Knobs
	if len(r.cfg.Load.Stages) > 0 {
		r.cfg.Load.Stages[0].Apply(&k)
	}
	m.Knobs = report.KnobsJSON{Mode: k.Mode.String(), Concurrency: k.Concurrency, PromptTokens: k.PromptTokens, OutputTokens: k.OutputTokens, Rate: k.Rate}
	m.Server = r.ServerInfo(ctx)
	m.Settings = r.cfg.Settings
	if g := r.cfg.Load.Goodput; g.Set() {
		m.Goodput = map[string]float64{"ttft": float64(g.TTFT) / 1e6, "tpot": float64(g.TPOT) / 1e6, "e2el": float64(g.E2E) / 1e6}
		if g.TTFO > 0 {
			m.Goodput["ttfo"] = float64(g.TTFO) / 1e6
		}
	}
	m.Start, m.End = r.started, r.started.Add(s.Elapsed)
	rep := &report.Report{Manifest: m, Final: s, Energy: report.EnergyOf(r.scraper, r.started, s)}
	if s.Done {
		r.scraper.FinalPerf(ctx) // the last requests' entries, added after their answers ended
	}
	if p, ok := r.scraper.PerfRun(); ok {
		rep.ServerPerf = &p
	}
	rep.Verdicts = report.Verdicts(r.cfg.Objectives, s, rep.Energy)
	rep.History, rep.Readings = r.history(ctx)
	return rep
}

// ServerInfo is what the server says of itself (model list, version),
// read in the background since the start; nil when ctx ends first, or
// after Stop when the read had not finished.
func (r *Runner) ServerInfo(ctx context.Context) map[string]json.RawMessage {
	select {
	case <-r.infoDone:
		return r.info
	case <-ctx.Done():
		return nil
	}
}

// StopWait bounds Stop's wait for the runner's goroutines. The engine
// gives up on a request stuck in its transport (load.AbandonGrace), but
// the scraper and the server-description read call into HTTP transports
// of their own, which can be stuck past any context too; a run's end must
// still come, and with it the reports.
const StopWait = 3 * load.AbandonGrace

// Stop ends the load at once (what is in flight is cancelled), waits for
// every goroutine the runner started (StopWait at most), closes the
// requests log, pushes the last OTLP figures (within their own bound) and
// stops the exporter (unless Config.HoldMetrics: see
// Release) and the embedded sim. It may be
// called more than once; the first call's error (the requests log's) is
// returned every time.
func (r *Runner) Stop() error {
	r.stopOnce.Do(func() {
		if r.cancel != nil {
			r.cancel()
		}
		if !waitFor(&r.wg, StopWait) {
			fmt.Fprintf(r.cfg.Notes, "infertop: stopped after %v without waiting longer for a call stuck in an HTTP transport\n", StopWait)
		}
		if r.eng != nil {
			if n := r.eng.Abandoned(); n > 0 {
				fmt.Fprintf(r.cfg.Notes, "infertop: %d requests stuck in the HTTP transport were given up on (counted incomplete)\n", n)
			}
		}
		if r.reqLog != nil {
			r.stopErr = r.reqLog.Close()
		}
		if r.otel != nil { // the last push, bounded (otlp.Config.Shutdown)
			r.otel.Shutdown(r.cfg.Notes)
		}
		if !r.cfg.HoldMetrics {
			r.Release()
		}
		if r.client != nil {
			r.client.Close()
		}
		// The last requests' entries of /perf_metrics, which the server
		// adds after their answers ended: read before the embedded sim
		// stops (Report reads it again when it comes before Stop).
		fctx, fcancel := context.WithTimeout(context.Background(), telemetry.DefaultScrapeTimeout)
		r.scraper.FinalPerf(fctx)
		fcancel()
		r.stopSim()
	})
	return r.stopErr
}

// Release stops serving infertop's own metrics, which Stop leaves served
// under Config.HoldMetrics (else Stop has released them). It may be called
// more than once, and before Stop (the exporter then stops early).
func (r *Runner) Release() { r.xOnce.Do(r.stopX) }

// waitFor waits for wg, d at most; false when d passed first (the waiting
// goroutine is then left to end with wg).
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer crash.Recover()
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// fixesOutput reports whether --fixed-output reaches servers of kind: the
// OpenAI APIs and Anthropic's Messages take ignore_eos where vLLM's engine
// serves them; Ollama, TGI, a generic API and the embeddings have no such
// field.
func fixesOutput(kind probe.Kind) bool {
	switch kind {
	case probe.OpenAIChat, probe.OpenAICompletions, probe.OpenAIResponses, probe.Anthropic:
		return true
	}
	return false
}

// sameModel reports whether the model listed as id is the one named
// name: the same, or name without a tag where the list says NAME:latest
// (Ollama lists tiny:latest, and takes tiny for it).
func sameModel(id, name string) bool {
	return id == name || !strings.Contains(name, ":") && id == name+":latest"
}
