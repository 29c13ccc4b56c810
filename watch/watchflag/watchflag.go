// Package watchflag binds `infertop watch`'s flags and builds a watch
// from them: where the fleet is (targets, or the embedded fleet), how it
// is grouped and judged, and what a headless watch writes.
package watchflag

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/discover/kube"
	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/promsource"
	"github.com/infertop/infertop/readlimit"
	"github.com/infertop/infertop/sim/simfleet"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/watch"
)

// Flags are a watch's flags.
type Flags struct {
	Targets     []string
	MetricsPath string
	Refresh     time.Duration
	// Kubernetes: the pods of a selector (or a Service's endpoints) in a
	// namespace, grouped by a pod label.
	K8sSelector, K8sService, Namespace, Port, By, Kubeconfig string
	// Prometheus: the servers a matcher picks, as a Prometheus holds
	// them.
	Prometheus, Match, PrometheusTokenFile, Instance string
	Baseline, Canary                                 string
	Every, Window                                    time.Duration
	Regressions, SLO                                 []string
	Alpha                                            float64
	// The embedded fleet's shape, when no target is given.
	DemoSlowdown float64
	DemoSeed     uint64
	DemoBuckets  string
	// A headless watch's.
	Headless      bool
	Duration      time.Duration
	JSON, HTML    string
	FailFast      bool
	Serve         string
	ProgressEvery time.Duration
	// The end-to-end probe's (ProbeSpec).
	ProbeURL, ProbeModel, ProbeAPI, ProbeKeyEnv string
	ProbeRate                                   float64
	fs                                          *pflag.FlagSet
}

// ProbeSpec is the end-to-end probe --probe-url asks for: real requests
// at Rate a second through URL (the fleet's Service), the model and API
// given or found as a run finds them, the key from the environment
// variable KeyEnv (never from a flag's value).
type ProbeSpec struct {
	URL, Model, KeyEnv string
	API                probe.Kind
	Rate               float64
}

// Probe is the probe the flags ask for; ok false when --probe-url is not
// given. The probe's own limits are checked here.
func (f *Flags) Probe() (p ProbeSpec, ok bool, err error) {
	if f.ProbeURL == "" {
		for _, name := range []string{"probe-rate", "probe-model", "probe-api", "probe-api-key-env"} {
			if f.fs.Changed(name) {
				return p, false, fmt.Errorf("--%s needs --probe-url", name)
			}
		}
		return p, false, nil
	}
	if f.ProbeRate < 0.01 || f.ProbeRate > 10 {
		return p, false, fmt.Errorf("--probe-rate %g: want 0.01..10 requests a second (a trickle: the fleet's own traffic is what is watched)", f.ProbeRate)
	}
	u, err := url.Parse(f.ProbeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return p, false, fmt.Errorf("--probe-url %q: want an http(s) URL of the fleet's endpoint", probe.RedactURL(f.ProbeURL))
	}
	p = ProbeSpec{URL: f.ProbeURL, Model: f.ProbeModel, KeyEnv: f.ProbeKeyEnv, Rate: f.ProbeRate}
	if f.ProbeAPI != "" {
		if p.API, err = probe.ParseKind(f.ProbeAPI); err != nil {
			return p, false, fmt.Errorf("--probe-api: %w", err)
		}
	}
	return p, true, nil
}

// Add binds the flags to fs.
func Add(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	func() {
		defer flaghelp.Group(fs, "The fleet: where the servers are")()
		fs.StringArrayVar(&f.Targets, "target", nil, "servers of one group: GROUP=ADDR,ADDR (ADDR a host:port, a DNS name:port meaning every A/AAAA record, an SRV name _SVC._tcp.NAME, or a metrics URL); repeat for each group; also as arguments")
		fs.StringVar(&f.MetricsPath, "metrics-path", "/metrics", "the servers' metrics path, where a target is not a URL (TensorRT-LLM's trtllm-serve: /prometheus/metrics)")
		fs.DurationVar(&f.Refresh, "refresh", 15*time.Second, "look the fleet up again this often (DNS names, SRV names, Kubernetes)")
		fs.StringVar(&f.K8sSelector, "k8s-selector", "", "Kubernetes: the pods of this label selector (app=vllm) are the servers")
		fs.StringVar(&f.K8sService, "k8s-service", "", "Kubernetes: the endpoints of this Service's EndpointSlices are the servers (their pods give the groups)")
		fs.StringVar(&f.Namespace, "namespace", "", "Kubernetes: the namespace (default: the kubeconfig context's, in a pod its own)")
		fs.StringVar(&f.Port, "port", "8000", "Kubernetes: the metrics port, a number or a container port's name")
		fs.StringVar(&f.By, "by", "", "Kubernetes and Prometheus: the label whose value is a server's group (version, pod-template-hash, rollouts-pod-template-hash)")
		fs.StringVar(&f.Prometheus, "prometheus", "", "read the servers from this Prometheus (http://prometheus:9090) through its HTTP API, not from each /metrics")
		fs.StringVar(&f.Match, "match", "", `Prometheus: the servers' label matchers, e.g. {job="vllm"}`)
		fs.StringVar(&f.Instance, "instance-label", "instance", "Prometheus: the label that tells the servers apart (pod with Kubernetes' service discovery)")
		fs.StringVar(&f.PrometheusTokenFile, "prometheus-token-file", "", "Prometheus: a file holding a bearer token to send")
		fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Kubernetes: the kubeconfig (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	}()
	func() {
		defer flaghelp.Group(fs, "The verdict: the canary group against the baseline")()
		fs.StringVar(&f.Baseline, "baseline", "", "the baseline group's name (default: with two groups, the one named stable, baseline, primary, prod or old, else the larger)")
		fs.StringVar(&f.Canary, "canary", "", "the canary group's name (default: with two groups, the one named canary, preview, new or next, else the smaller; give it when two groups of hashes are the same size)")
		fs.StringArrayVar(&f.Regressions, "regression", nil, "the canary's allowed worsening of a server statistic, e.g. ttft_p99<+10%, itl_p50<+10%, error_rate<+0.5pp (repeatable; default those three)")
		fs.StringArrayVar(&f.SLO, "slo", nil, "an objective every group's window must meet, e.g. ttft_p99<500ms, error_rate<1% (repeatable)")
		fs.Float64Var(&f.Alpha, "alpha", 0.05, "the verdict's chance of a false call over the whole watch, at every look together")
	}()
	func() {
		defer flaghelp.Group(fs, "Reading")()
		fs.DurationVar(&f.Every, "every", time.Second, "read the fleet this often (100ms..1m)")
		fs.DurationVar(&f.Window, "window", time.Minute, "the rolling window of the rates and percentiles (10s..30m)")
		fs.Float64Var(&f.DemoSlowdown, "demo-slowdown", 1.3, "with no target: the embedded fleet's canary's slowdown (1: identical)")
		fs.Uint64Var(&f.DemoSeed, "demo-seed", 1, "with no target: the embedded fleet's seed")
		fs.StringVar(&f.DemoBuckets, "demo-buckets", "fine", "with no target: the embedded fleet's histogram bounds: fine (4 % apart) or vllm (vLLM's own, too coarse for a 10 % margin)")
	}()
	func() {
		defer flaghelp.Group(fs, "The end-to-end probe: a trickle of real requests beside the servers' view")()
		fs.StringVar(&f.ProbeURL, "probe-url", "", "send real requests through this endpoint (the fleet's Service, e.g. http://vllm.prod:8000/v1) and show the client's TTFT beside the servers'")
		fs.Float64Var(&f.ProbeRate, "probe-rate", 0.2, "with --probe-url: the probe's requests a second (0.01..10)")
		fs.StringVar(&f.ProbeModel, "probe-model", "", "with --probe-url: the model (default: the first the endpoint lists)")
		fs.StringVar(&f.ProbeAPI, "probe-api", "", "with --probe-url: the API (default: detected, as infertop run does)")
		fs.StringVar(&f.ProbeKeyEnv, "probe-api-key-env", "OPENAI_API_KEY", "with --probe-url: the environment variable holding its API key, sent as a bearer token")
	}()
	func() {
		defer flaghelp.Group(fs, "Headless: reports and gates")()
		fs.BoolVar(&f.Headless, "headless", false, "no dashboard: progress lines on stderr, a summary and an exit code (0 held or undecided, 1 regressed, 2 unusable)")
		fs.DurationVar(&f.Duration, "duration", 0, "end the watch after this long (headless; 0: until a signal)")
		fs.StringVar(&f.JSON, "json", "", "write the last snapshot (groups, servers, verdict) as JSON to this file")
		fs.StringVar(&f.HTML, "html", "", "write the watch as one self-contained HTML page (the verdict, the groups, their charts, the servers) to this file")
		fs.BoolVar(&f.FailFast, "fail-fast", false, "end the watch as soon as the verdict is regressed")
		fs.StringVar(&f.Serve, "serve", "", "serve GET /verdict (JSON; 200 held or undecided, 409 regressed, 503 unusable), /snapshot and /metrics (infertop_watch_*) on this address, for Argo Rollouts, Flagger and a Prometheus")
		fs.DurationVar(&f.ProgressEvery, "progress-every", 10*time.Second, "a progress line this often on stderr (headless)")
	}()
	return f
}

// Built is what Build made: the watch's settings, and the embedded
// fleet to stop when the watch ends (nil when the targets were given).
type Built struct {
	Config watch.Config
	Demo   *simfleet.Fleet
}

// Close stops the embedded fleet, if any.
func (b *Built) Close() {
	if b.Demo != nil {
		b.Demo.Close()
	}
}

// Build checks the flags and builds the watch's settings; args are the
// command's arguments (targets, as --target). With no target it starts
// the embedded fleet until ctx ends or Close.
func (f *Flags) Build(ctx context.Context, args []string) (*Built, error) {
	switch {
	case f.Every < 100*time.Millisecond || f.Every > time.Minute:
		return nil, fmt.Errorf("--every %s: want 100ms..1m", f.Every)
	case f.Window < 10*time.Second || f.Window > 30*time.Minute:
		return nil, fmt.Errorf("--window %s: want 10s..30m", f.Window)
	case f.Alpha <= 0 || f.Alpha >= 0.5:
		return nil, fmt.Errorf("--alpha %g: want a chance in (0, 0.5)", f.Alpha)
	case f.Duration < 0:
		return nil, fmt.Errorf("--duration %s: want 0 or more", f.Duration)
	case f.DemoSlowdown <= 0 || f.DemoSlowdown > 10:
		return nil, fmt.Errorf("--demo-slowdown %g: want (0, 10]", f.DemoSlowdown)
	case f.DemoBuckets != "fine" && f.DemoBuckets != "vllm":
		return nil, fmt.Errorf("--demo-buckets %q: want fine or vllm", f.DemoBuckets)
	}
	regs, err := compare.ParseRegressions(f.Regressions)
	if err != nil {
		return nil, fmt.Errorf("--regression: %w", err)
	}
	objs, err := slo.ParseAll(f.SLO)
	if err != nil {
		return nil, fmt.Errorf("--slo: %w", err)
	}
	b := &Built{Config: watch.Config{Every: f.Every, Window: f.Window, Baseline: f.Baseline, Canary: f.Canary,
		Regressions: regs, Objectives: objs, Alpha: f.Alpha}}
	if f.Refresh < time.Second || f.Refresh > time.Hour {
		return nil, fmt.Errorf("--refresh %s: want 1s..1h", f.Refresh)
	}
	if !strings.HasPrefix(f.MetricsPath, "/") {
		return nil, fmt.Errorf("--metrics-path %q: want a path from /", f.MetricsPath)
	}
	specs := append(append([]string(nil), f.Targets...), args...)
	timeout := min(3*time.Second, max(f.Every, time.Second))
	if f.Prometheus != "" {
		if len(specs) > 0 || f.K8sSelector != "" || f.K8sService != "" {
			return nil, errors.New("--prometheus with --target or --k8s-selector: give one source of servers")
		}
		cfg := promsource.Config{URL: f.Prometheus, Match: f.Match, By: f.By, Instance: f.Instance}
		if f.PrometheusTokenFile != "" {
			tok, err := readlimit.File(f.PrometheusTokenFile, 64<<10)
			if err != nil {
				return nil, fmt.Errorf("--prometheus-token-file: %w", err)
			}
			cfg.Token = strings.TrimSpace(string(tok))
		}
		src, err := watch.NewPrometheus(cfg)
		if err != nil {
			return nil, err
		}
		b.Config.Source = src
		return b, nil
	}
	if f.K8sSelector != "" || f.K8sService != "" {
		if len(specs) > 0 {
			return nil, errors.New("--k8s-selector and --target: give one source of servers")
		}
		list, name, err := f.kube()
		if err != nil {
			return nil, err
		}
		b.Config.Source = watch.NewScrape(name, watch.Refreshed(list, f.Refresh, time.Now), nil, timeout)
		return b, nil
	}
	var (
		targets []watch.Target
		lists   []watch.Lister
	)
	for _, s := range specs {
		ts, list, err := ParseTargets(s, f.MetricsPath)
		if err != nil {
			return nil, err
		}
		targets = append(targets, ts...)
		if list != nil {
			lists = append(lists, list)
		}
	}
	name := fmt.Sprintf("%d targets", len(specs))
	if len(specs) == 1 {
		name = "1 target"
	}
	if len(targets) == 0 && len(lists) == 0 {
		b.Demo, err = simfleet.Start(ctx, simfleet.Config{Slowdown: f.DemoSlowdown, Seed: f.DemoSeed, VLLMBuckets: f.DemoBuckets == "vllm"})
		if err != nil {
			return nil, err
		}
		for _, s := range b.Demo.Servers {
			targets = append(targets, watch.Target{Name: s.Name, URL: s.MetricsURL, Group: s.Group})
		}
		name = fmt.Sprintf("the embedded fleet (%d sims, canary %gx, %s buckets)", len(targets), f.DemoSlowdown, f.DemoBuckets)
		if b.Config.Canary == "" && b.Config.Baseline == "" {
			b.Config.Baseline, b.Config.Canary = simfleet.BaselineGroup, simfleet.CanaryGroup
		}
	}
	fixed := targets
	list := func(ctx context.Context) ([]watch.Target, error) {
		out := append([]watch.Target(nil), fixed...)
		var errs []error
		for _, l := range lists {
			ts, err := l(ctx)
			out = append(out, ts...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		return out, errors.Join(errs...)
	}
	if len(lists) > 0 {
		list = watch.Refreshed(list, f.Refresh, time.Now)
	}
	b.Config.Source = watch.NewScrape(name, list, nil, timeout)
	return b, nil
}

// kube is the Kubernetes source's lister and its name.
func (f *Flags) kube() (watch.Lister, string, error) {
	src, err := kube.Connect(kube.Config{Namespace: f.Namespace, Selector: f.K8sSelector, Service: f.K8sService, Port: f.Port, By: f.By}, f.Kubeconfig)
	if err != nil {
		return nil, "", err
	}
	what := "pods " + f.K8sSelector
	if f.K8sService != "" {
		what = "Service " + f.K8sService
	}
	name := fmt.Sprintf("Kubernetes %s in %s, by %s", what, src.Namespace(), f.By)
	path := f.MetricsPath
	return func(ctx context.Context) ([]watch.Target, error) {
		ts, err := src.List(ctx)
		out := make([]watch.Target, 0, len(ts))
		for _, t := range ts {
			out = append(out, watch.Target{Name: t.Name, URL: "http://" + t.Addr + path, Group: t.Group})
		}
		return out, err
	}, name, nil
}

// ErrTarget is a --target that names no server.
var ErrTarget = errors.New("want GROUP=ADDR,ADDR with ADDR a host:port or an http(s) metrics URL")

// ParseTargets reads one --target: GROUP=ADDR,ADDR, or ADDR,ADDR (the
// group ""). A URL is one server, as it is (its path, /metrics when it
// has none); the other ADDRs (host:port, a DNS name:port, an SRV name)
// are looked up when the lister is called (package discover), each
// address a server at path. A URL's password stays in the URL the
// scrape uses and out of the name shown and of every error.
func ParseTargets(spec, path string) ([]watch.Target, watch.Lister, error) {
	group, items := "", spec
	if g, rest, ok := strings.Cut(spec, "="); ok && !strings.ContainsAny(g, "/:@") {
		group, items = strings.TrimSpace(g), rest
	}
	var (
		out   []watch.Target
		names []string
	)
	for _, item := range strings.Split(items, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case strings.Contains(item, "://"):
			u, err := url.Parse(item)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, nil, fmt.Errorf("--target %q: %w", probe.Redact(item, 0), ErrTarget)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/metrics"
			}
			out = append(out, watch.Target{Name: u.Host, URL: u.String(), Group: group})
		default:
			names = append(names, item)
		}
	}
	if len(out) == 0 && len(names) == 0 {
		return nil, nil, fmt.Errorf("--target %q: %w", probe.Redact(spec, 0), ErrTarget)
	}
	if len(names) == 0 {
		return out, nil, nil
	}
	src, err := discover.ParseSource(strings.Join(names, ","))
	if err != nil {
		return nil, nil, fmt.Errorf("--target %q: %w", probe.Redact(spec, 0), err)
	}
	list := func(ctx context.Context) ([]watch.Target, error) {
		addrs, err := src.Resolve(ctx, net.DefaultResolver)
		ts := make([]watch.Target, 0, len(addrs))
		for _, a := range addrs {
			ts = append(ts, watch.Target{Name: a.HostPort, URL: "http://" + a.HostPort + path, Group: group})
		}
		return ts, err
	}
	if src.Static() {
		ts, err := list(context.Background())
		return append(out, ts...), nil, err
	}
	return out, list, nil
}
