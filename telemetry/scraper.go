package telemetry

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/probe"
)

// Config says where to read from. Empty URLs and GPULocal false turn a
// source off.
type Config struct {
	// ServerURL is the engine's /metrics; Quiet hides a server that turns
	// out not to have one (a guessed URL): it is dropped after its first
	// failure instead of shown as stale.
	ServerURL string
	Quiet     bool
	// GPUURL is a DCGM exporter's /metrics; GPULocal runs nvidia-smi here.
	GPUURL   string
	GPULocal bool
	// Every is the scrape interval (default 1 s).
	Every time.Duration
	// Headers go with every scrape (an API key, a proxy's header).
	Headers http.Header
	// PerfURL is the server's /perf_metrics (TensorRT-LLM's per-request
	// performance, see PerfRun): read from the start, and dropped when
	// its first answer is no JSON list. OnPerf, when set, is called with
	// each of its entries read during the run, under the scraper's lock
	// (it must not call the scraper).
	PerfURL string
	OnPerf  func(probe.ServerPerf)
	// OnSplit, when set, is called with the client TTFT split of each
	// request joined to its entry (Scraper.NoteRequest), likewise.
	OnSplit func(probe.TTFTSplit)
	// Client sends the scrapes (nil: one of DefaultScrapeTimeout). A test
	// passes one that answers in-process, so that the scraper can run in
	// a synctest bubble, whose clock waits for no network.
	Client *http.Client
}

// DefaultScrapeTimeout bounds one scrape when Config.Client is nil.
const DefaultScrapeTimeout = 3 * time.Second

// source is one scraped target's state.
type source struct {
	ok      bool // ever read
	last    time.Time
	err     string
	backoff time.Duration
	next    time.Time
	dropped bool
}

// Scraper reads the sources on a schedule and keeps the last five minutes
// of readings. Its methods are safe from any goroutine.
type Scraper struct {
	cfg    Config
	client *http.Client

	mu      sync.Mutex
	servers []timedServer
	gpus    []Sample
	srv     source
	gpu     source
	gpuFrom string    // "DCGM" or "nvidia-smi"
	hist    []Reading // the whole run, one a second (History)
	perf    perfAcc
}

type timedServer struct {
	At time.Time
	S  Server
}

// keep is how long readings are kept: the longest window.
const keep = 5*time.Minute + 10*time.Second

// DefaultEvery is the scrape interval when none is given.
const DefaultEvery = time.Second

// NewScraper builds a scraper; it does nothing until Run.
func NewScraper(cfg Config) *Scraper {
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	s := &Scraper{cfg: cfg}
	if cfg.Client != nil {
		c := *cfg.Client // a copy: the caller's client is theirs
		s.client = &c
	} else {
		s.client = &http.Client{Timeout: DefaultScrapeTimeout, Transport: scrapeTransport()}
	}
	// A redirect is not followed, as the load client follows none: the
	// scrape carries the same headers (an API key) to wherever it points.
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if cfg.GPULocal {
		s.gpuFrom = "nvidia-smi"
	} else if cfg.GPUURL != "" {
		s.gpuFrom = "DCGM"
	}
	return s
}

// scrapeTransport is the default client's transport: net/http's default
// settings (a new transport, not a clone of http.DefaultTransport, which
// may carry the bundled HTTP/2 once used), HTTP/2 through
// golang.org/x/net/http2 as the load client speaks it
// (probe.ConfigureHTTP2), or HTTP/1.1 alone should that fail.
func scrapeTransport() *http.Transport {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: DefaultScrapeTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   2, // one per source
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   DefaultScrapeTimeout,
		ExpectContinueTimeout: time.Second,
	}
	if probe.ConfigureHTTP2(t) != nil {
		return &http.Transport{Proxy: t.Proxy, DialContext: t.DialContext, MaxIdleConnsPerHost: 2, IdleConnTimeout: t.IdleConnTimeout,
			TLSHandshakeTimeout: t.TLSHandshakeTimeout, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}} // HTTP/1.1 only
	}
	return t
}

// Run scrapes until ctx ends. nvidia-smi, when asked for, runs as one child
// process for the whole run.
func (s *Scraper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.cfg.GPULocal {
		wg.Add(1)
		go func() { defer wg.Done(); defer crash.Recover(); s.runNvidiaSMI(ctx) }()
	}
	t := time.NewTicker(s.cfg.Every)
	defer t.Stop()
	for {
		now := time.Now()
		if s.cfg.ServerURL != "" {
			s.scrape(ctx, now, &s.srv, s.cfg.ServerURL, s.readServer)
		}
		if s.cfg.GPUURL != "" && !s.cfg.GPULocal {
			s.scrape(ctx, now, &s.gpu, s.cfg.GPUURL, s.readDCGM)
		}
		if s.cfg.PerfURL != "" {
			s.scrapePerf(ctx, now)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			s.client.CloseIdleConnections()
			return
		case <-t.C:
		}
	}
}

// scrape reads one target when it is due, backing off after failures.
func (s *Scraper) scrape(ctx context.Context, now time.Time, src *source, url string, read func(io.Reader, time.Time) error) error {
	s.mu.Lock()
	due := !src.dropped && !now.Before(src.next)
	s.mu.Unlock()
	if !due {
		return nil
	}
	err := s.get(ctx, url, func(r io.Reader) error { return read(r, now) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		src.ok, src.last, src.err, src.backoff, src.next = true, now, "", 0, time.Time{}
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	if src == &s.srv && s.cfg.Quiet && !src.ok {
		src.dropped = true // a guessed /metrics that is not there: quietly nothing
		return err
	}
	src.err = probe.Redact(err.Error(), 300) // shown: no credentials, one line
	src.backoff = min(max(2*src.backoff, s.cfg.Every), 30*time.Second)
	src.next = now.Add(src.backoff)
	return err
}

// statusError is an answer's HTTP status other than 200.
type statusError struct{ code int }

func (e statusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// get scrapes url. Its errors never carry the URL's credentials (a
// user name, ?token=): they are shown on the dashboard and to every SSH
// watcher.
func (s *Scraper) get(ctx context.Context, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("scrape: %w", redactURLError(err))
	}
	for k, vs := range s.cfg.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("scrape: %w", redactURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("scrape: %w: redirected to %s; infertop does not follow redirects", statusError{resp.StatusCode}, probe.RedactURL(resp.Header.Get("Location")))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scrape: %w", statusError{resp.StatusCode})
	}
	return read(io.LimitReader(resp.Body, maxPageBytes))
}

// redactURLError takes the credentials out of the URL a *url.Error
// names, and any that look like one out of its cause's text.
func redactURLError(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		ue.URL = probe.RedactURL(ue.URL)
		if ue.Err != nil {
			ue.Err = redacted{ue.Err}
		}
	}
	return err
}

// redacted is an error whose text is redacted (probe.Redact); it still
// unwraps to the error it redacts.
type redacted struct{ err error }

func (r redacted) Error() string { return probe.Redact(r.err.Error(), 0) }
func (r redacted) Unwrap() error { return r.err }

func (s *Scraper) readServer(r io.Reader, at time.Time) error {
	srv, ok, err := ParseServer(r)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no serving engine's metrics recognised")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers = append(trimServers(s.servers, at), timedServer{At: at, S: srv})
	s.recordServerLocked(at, srv)
	return nil
}

func (s *Scraper) readDCGM(r io.Reader, at time.Time) error {
	gpus, err := ParseDCGM(r)
	if err != nil {
		return err
	}
	s.addGPU(Sample{At: at, GPUs: gpus})
	return nil
}

func (s *Scraper) addGPU(smp Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.gpus) && smp.At.Sub(s.gpus[i].At) > keep {
		i++
	}
	s.gpus = append(s.gpus[i:], smp)
	s.recordGPULocked(smp)
	s.gpu.ok, s.gpu.last, s.gpu.err = true, smp.At, ""
}

func trimServers(xs []timedServer, now time.Time) []timedServer {
	i := 0
	for i < len(xs) && now.Sub(xs[i].At) > keep {
		i++
	}
	return xs[i:]
}

// runNvidiaSMI reads `nvidia-smi -lms 500` until ctx ends: one process,
// its lines grouped into one sample per round of GPU indexes.
func (s *Scraper) runNvidiaSMI(ctx context.Context) {
	cmd := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu="+NvidiaSMIQuery, "--format=csv,noheader,nounits", "-lms", "500")
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		s.mu.Lock()
		s.gpu.err = fmt.Sprintf("nvidia-smi: %v", err)
		s.mu.Unlock()
		return
	}
	defer cmd.Wait() //nolint:errcheck // ended by ctx
	sc := bufio.NewScanner(out)
	var cur Sample
	seen := map[string]bool{}
	for sc.Scan() {
		g, err := ParseNvidiaSMILine(sc.Text())
		if err != nil {
			s.mu.Lock()
			s.gpu.err = err.Error()
			s.mu.Unlock()
			continue
		}
		if seen[g.Index] { // a new round: the last one is complete
			s.addGPU(cur)
			cur, seen = Sample{}, map[string]bool{}
		}
		if len(cur.GPUs) == 0 {
			cur.At = time.Now()
		}
		cur.GPUs = append(cur.GPUs, g)
		seen[g.Index] = true
	}
	if ctx.Err() == nil {
		s.mu.Lock()
		s.gpu.err = "nvidia-smi ended"
		s.mu.Unlock()
	}
}

// View is what the dashboard and the reports show, over a window.
type View struct {
	Server *ServerView
	GPU    *GPUView
	// Perf is the server's per-request performance from its own
	// /perf_metrics (nil: not read, or not offered).
	Perf *PerfView
}

// ServerView is the engine's side over the window.
type ServerView struct {
	Kind                       string
	Running, Waiting, KVUsage  float64
	HasKV, HasPreempt          bool
	PromptTokPerSec, GenPerSec float64
	Preemptions                float64 // in the window
	TTFTP50, TTFTP99           float64 // seconds; 0 when unknown
	HasTTFT                    bool
	ITLP50, ITLP99             float64 // the server\'s inter-token latency, seconds
	HasITL                     bool
	// PrefixHitRate is the prefix cache's share of prompt tokens found
	// cached over the window, 0..1 (HasPrefix false when not reported).
	PrefixHitRate float64
	HasPrefix     bool
	Age           time.Duration
	Stale         bool
	Err           string

	// TTFTBuckets and ITLBuckets are the buckets the p50 and the p99 lie
	// in: what the histogram knows of them, where the figures above are
	// points interpolated inside.
	TTFTBuckets, ITLBuckets [2]Bucket
}

// GPUView is the GPUs' side over the window.
type GPUView struct {
	Source  string // "DCGM" or "nvidia-smi"
	Count   int
	PowerW  float64 // now, summed
	AvgW    float64 // over the window
	EnergyJ float64 // over the window
	// EnergyFrom says how the energy was had: "energy counter" or "power × time".
	EnergyFrom             string
	UtilPct, TempC, MemMiB float64 // mean utilisation and temperature, summed memory
	Age                    time.Duration
	Stale                  bool
	Err                    string
	GPUs                   []GPU
}

// View summarises the readings of the last window.
func (s *Scraper) View(window time.Duration) View {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var v View
	stale := func(src *source) bool { return src.err != "" || now.Sub(src.last) > 3*s.cfg.Every+time.Second }
	if n := len(s.servers); n > 0 && !s.srv.dropped {
		last := s.servers[n-1]
		first := last
		for _, x := range s.servers {
			if last.At.Sub(x.At) <= window {
				first = x
				break
			}
		}
		sv := &ServerView{Kind: last.S.Engine, Running: last.S.Running.V, Waiting: last.S.Waiting.V, KVUsage: last.S.KVUsage.V,
			HasKV: last.S.KVUsage.Has, HasPreempt: last.S.Preemptions.Has, Age: now.Sub(last.At), Stale: stale(&s.srv), Err: s.srv.err}
		// Over the window, what the counters and buckets rose by; a restart
		// in it shows no rate rather than one since zero, and a single
		// reading the histograms since the server started.
		d, reset := engines.Since(first.S, last.S)
		if dt := last.At.Sub(first.At).Seconds(); dt > 0 && !reset {
			sv.PromptTokPerSec = d.PromptTokens.V / dt
			sv.GenPerSec = d.GenTokens.V / dt
			sv.Preemptions = d.Preemptions.V
		}
		if rate, ok := d.PrefixHitRate(); ok && !reset && first.At.Before(last.At) {
			sv.PrefixHitRate, sv.HasPrefix = rate, true
		} else if last.S.CacheHitRate.Has {
			sv.PrefixHitRate, sv.HasPrefix = last.S.CacheHitRate.V, true
		}
		if !first.At.Before(last.At) {
			d = last.S
		}
		if p50, b, ok := quantile(d.TTFT, nil, 0.5); ok {
			sv.TTFTP50, sv.TTFTBuckets[0], sv.HasTTFT = p50, b, true
			sv.TTFTP99, sv.TTFTBuckets[1], _ = quantile(d.TTFT, nil, 0.99)
		}
		if p50, b, ok := quantile(d.ITL, nil, 0.5); ok {
			sv.ITLP50, sv.ITLBuckets[0], sv.HasITL = p50, b, true
			sv.ITLP99, sv.ITLBuckets[1], _ = quantile(d.ITL, nil, 0.99)
		}
		v.Server = sv
	} else if s.srv.err != "" && !s.srv.dropped {
		v.Server = &ServerView{Stale: true, Err: s.srv.err}
	}
	if n := len(s.gpus); n > 0 {
		last := s.gpus[n-1]
		first := last
		for _, x := range s.gpus {
			if last.At.Sub(x.At) <= window {
				first = x
				break
			}
		}
		gv := &GPUView{Source: s.gpuFrom, Count: len(last.GPUs), PowerW: last.Power(), Age: now.Sub(last.At),
			Stale: stale(&s.gpu), Err: s.gpu.err, GPUs: append([]GPU(nil), last.GPUs...)}
		gv.EnergyJ, gv.EnergyFrom = s.energyLocked(first.At, last.At)
		if dt := last.At.Sub(first.At).Seconds(); dt > 0 {
			gv.AvgW = gv.EnergyJ / dt
		} else {
			gv.AvgW = gv.PowerW
		}
		for _, g := range last.GPUs {
			gv.UtilPct += g.UtilPct / float64(len(last.GPUs))
			gv.TempC += g.TempC / float64(len(last.GPUs))
			gv.MemMiB += g.MemUsedMiB
		}
		v.GPU = gv
	} else if s.gpu.err != "" {
		v.GPU = &GPUView{Source: s.gpuFrom, Stale: true, Err: s.gpu.err}
	}
	v.Perf = s.perfViewLocked(now, window)
	return v
}

// energyLocked sums the energy between consecutive samples in [a, b].
func (s *Scraper) energyLocked(a, b time.Time) (float64, string) {
	total, from := 0.0, ""
	var prev *Sample
	for i := range s.gpus {
		x := &s.gpus[i]
		if x.At.Before(a) || x.At.After(b) {
			continue
		}
		if prev != nil {
			j, src := Energy(*prev, *x)
			total += j
			if from == "" {
				from = src
			} else if src != "" && src != from {
				from = "energy counter and power × time"
			}
		}
		prev = x
	}
	return total, from
}

// EnergyBetween is the GPUs' energy between two times (a phase, a run),
// from the readings kept, with its source; ok is false without readings.
func (s *Scraper) EnergyBetween(a, b time.Time) (joules float64, from string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, src := s.energyLocked(a, b)
	return j, src, src != ""
}

// HasGPU reports whether a GPU source is configured.
func (s *Scraper) HasGPU() bool { return s.gpuFrom != "" }

// ServerURLFor guesses an engine's /metrics from its API URL: the root.
func ServerURLFor(apiURL string) string {
	if i := strings.Index(apiURL, "://"); i >= 0 {
		if j := strings.IndexByte(apiURL[i+3:], '/'); j >= 0 {
			return apiURL[:i+3+j] + "/metrics"
		}
		return apiURL + "/metrics"
	}
	return ""
}

// GPUSource names the GPU source of the view ("" without one).
func (v View) GPUSource() string {
	if v.GPU == nil {
		return ""
	}
	return v.GPU.Source
}

// PerToken is the energy per output token over the window: the GPUs'
// average power divided by the output token rate; ok is false without a
// fresh GPU reading or without output.
func PerToken(v View, outTokPerSec float64) (float64, bool) {
	if v.GPU == nil || v.GPU.Stale || v.GPU.Count == 0 || outTokPerSec <= 0 {
		return 0, false
	}
	return v.GPU.AvgW / outTokPerSec, true
}
