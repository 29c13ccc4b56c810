// Package runflag binds the runner's own settings (those of runner.Config
// that are neither the load's nor the client's) to command-line flags
// (pflag): the endpoint and its API, the telemetry read beside the load,
// and where infertop's own metrics are served and pushed. runner itself knows
// nothing of flags; FlagError names the flag behind a runner setting,
// as loadflag, probeflag and simflag do for theirs.
package runflag

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/telemetry"
)

// Flags bind the runner's own settings.
type Flags struct {
	cfg      runner.Config
	api, gpu string
}

// AddEndpoint binds the endpoint's flags to fs.
func AddEndpoint(fs *pflag.FlagSet) *Flags {
	defer flaghelp.Group(fs, "Endpoint: where the load goes")()
	f := &Flags{}
	c := &f.cfg
	fs.StringVar(&c.URL, "url", "", "endpoint: a base such as http://host:8000/v1, or a full path (default: the embedded sim)")
	fs.StringVar(&f.api, "api", "", "API: openai-chat, openai-completions, openai-responses, anthropic, ollama, tgi, generic, openai-embeddings or ollama-embed (default: detected)")
	fs.BoolVar(&c.Strict, "strict", false, "make a doubt about the setup an error: a --model the server does not list")
	return f
}

// AddTelemetry binds the telemetry's flags to fs: where the server's and
// the GPUs' side is read, and where infertop's own metrics are served.
func (f *Flags) AddTelemetry(fs *pflag.FlagSet) {
	defer flaghelp.Group(fs, "Telemetry: the server's metrics, its GPUs, infertop's own metrics served and pushed")()
	t := &f.cfg.Telemetry
	fs.StringVar(&t.ServerMetrics, "server-metrics", "", "the serving engine's Prometheus /metrics (default: try the server's root /metrics quietly; off: none)")
	fs.StringVar(&t.GPUMetrics, "gpu-metrics", "", "a DCGM exporter's /metrics, for GPU power, energy, utilisation")
	fs.StringVar(&f.gpu, "gpu", "", "local: read the GPUs of this machine with nvidia-smi")
	fs.DurationVar(&t.Every, "scrape-every", telemetry.DefaultEvery, "how often the server's and the GPUs' metrics are read")
	fs.StringVar(&f.cfg.MetricsAddr, "metrics-addr", "", "serve infertop's own Prometheus metrics here, e.g. 127.0.0.1:9464")
	fs.StringVar(&f.cfg.OTLP.URL, "otlp", "", "push every request's OpenTelemetry GenAI client metrics to this collector (OTLP/HTTP base, e.g. http://127.0.0.1:4318)")
	fs.BoolVar(&f.cfg.OTLP.Spans, "otlp-spans", false, "with --otlp: a client span per request as well, with the trace id of its traceparent")
}

// Config is the runner's configuration of these flags (its Load and
// Probe are the caller's to fill), and the kind of API the client's key
// is for: the one given, else the one the URL's path names.
func (f *Flags) Config() (runner.Config, probe.Kind, error) {
	cfg := f.cfg
	if f.gpu != "" && f.gpu != "local" {
		return cfg, "", fmt.Errorf("--gpu takes local (nvidia-smi on this machine), got %q", f.gpu)
	}
	cfg.Telemetry.GPULocal = f.gpu == "local"
	if cfg.OTLP.Spans && cfg.OTLP.URL == "" {
		return cfg, "", errors.New("--otlp-spans needs --otlp URL, the collector's")
	}
	if f.api == "" {
		kind, _, _ := probe.KindFromPath(cfg.URL) // a URL ending in /v1/messages
		return cfg, kind, nil
	}
	var err error
	if cfg.API, err = probe.ParseKind(f.api); err != nil {
		return cfg, "", fmt.Errorf("--api: %w", err)
	}
	return cfg, cfg.API, nil
}

// Setting is the value of one of these flags as the reports store it,
// and whether it needs more than its text: URLs without their
// credentials.
func Setting(fl *pflag.Flag) (string, bool) {
	switch fl.Name {
	case "url", "server-metrics", "gpu-metrics", "otlp":
		return probe.RedactURL(fl.Value.String()), true
	}
	return "", false
}

// flagOf names the flag behind each runner setting. Settings no flag
// sets are absent, and their errors keep the runner's words.
var flagOf = map[string]string{
	runner.SettingMetricsAddr: "--metrics-addr",
	runner.SettingOTLP:        "--otlp",
	runner.SettingRequestsLog: "--requests-log",
	runner.SettingScrapeEvery: "--scrape-every",
	runner.SettingGPUs:        "--gpu local, --gpu-metrics",
}

// FlagError says in the command line's words what the runner refused,
// with advice where a flag helps (the model to pass, the URL that leaves
// the embedded sim); the endpoint's URL and API, which the client names,
// are these flags too. ok is false for an error of no setting of these.
func FlagError(err error) (_ error, ok bool) {
	var (
		re *runner.SettingError
		pe *probe.SettingError
	)
	switch {
	case errors.As(err, &re):
		why := re.Err
		switch {
		case re.Setting == runner.SettingModel && errors.Is(err, runner.ErrNoModels):
			return fmt.Errorf("%w; pass --model", why), true
		case re.Setting == runner.SettingModel && errors.Is(err, runner.ErrModelNotListed):
			return fmt.Errorf("--model: %w", why), true
		case re.Setting == runner.SettingModel:
			return fmt.Errorf("%w (is the endpoint up? pass --model to skip this)", why), true
		case re.Setting == runner.SettingAPI:
			return fmt.Errorf("--api: %w; pass --url", why), true
		case flagOf[re.Setting] != "":
			return fmt.Errorf("%s: %w", flagOf[re.Setting], why), true
		}
		return err, true
	case errors.As(err, &pe) && pe.Setting == probe.SettingURL:
		return fmt.Errorf("--url: %w", pe.Err), true
	case errors.As(err, &pe) && pe.Setting == probe.SettingAPI:
		return fmt.Errorf("--api: %w", pe.Err), true
	}
	return err, false
}
