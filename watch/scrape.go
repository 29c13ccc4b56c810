package watch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/probe"
)

// maxHeaderBytes bounds a server's response headers (a metrics page's
// are a few hundred bytes).
const maxHeaderBytes = 64 << 10

// MaxServers is the most servers a scrape reads: what a watch holds per
// server, and a read's garbage, made 10,000 (a DNS name's most) cost
// 242 MB. A rollout's fleet is tens or hundreds of pods; past this,
// watch it through a Prometheus.
const MaxServers = 4096

// maxParallel bounds the scrapes in flight by default.
const maxParallel = 512

// Lister names the fleet's servers now: a fixed list, DNS names
// resolved again, or a Kubernetes selector's pods.
type Lister func(ctx context.Context) ([]Target, error)

// Scrape is the Source that reads each server's own /metrics.
type Scrape struct {
	// List names the servers; Name is the source in a line, without
	// secrets.
	List Lister
	Name string
	// Client sends the scrapes (nil: one that follows no redirect and
	// times out at Timeout).
	Client *http.Client
	// Headers go with every scrape (a bearer token for /metrics).
	Headers http.Header
	// Parallel bounds the scrapes in flight (default: every server, up
	// to maxParallel); Timeout one
	// scrape (default 3 s).
	Parallel int
	Timeout  time.Duration
}

// NewScrape is a Scrape of list's servers with a client of its own.
func NewScrape(name string, list Lister, headers http.Header, timeout time.Duration) *Scrape {
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	// A server's headers are bounded as its page is: Go's default is
	// 10 MB, and 32 scrapes in flight of such were 230 MB.
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, MaxIdleConns: 512, IdleConnTimeout: time.Minute,
		ResponseHeaderTimeout: timeout, MaxResponseHeaderBytes: maxHeaderBytes}
	return &Scrape{List: list, Name: name, Headers: headers, Timeout: timeout, Client: &http.Client{
		Transport: tr, Timeout: timeout,
		// A server's redirect is never followed: the headers may hold a
		// secret, and a metrics page does not move.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// String names the source.
func (s *Scrape) String() string { return s.Name }

// Read scrapes every listed server, Parallel at a time.
func (s *Scrape) Read(ctx context.Context) ([]Observation, error) {
	// A lister's error beside targets (a pod without the port, a DNS
	// name that did not resolve) is the source's, shown; the targets it
	// found are read all the same.
	targets, listErr := s.List(ctx)
	if listErr != nil && len(targets) == 0 {
		return nil, listErr
	}
	targets, listErr = capped(targets, listErr, "")
	par := s.Parallel
	if par <= 0 {
		// Every server at once, up to 512 (a scrape in flight holds
		// some 100 KB): at 32, 400 servers that answer a byte a second
		// made each read 37 s, the honest servers' figures with it.
		par = min(max(len(targets), 32), maxParallel)
	}
	out := make([]Observation, len(targets))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, t := range targets {
		out[i].Target = t
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i].Reading, out[i].Err = s.one(ctx, t)
		}()
	}
	wg.Wait()
	return out, listErr
}

// capped is targets cut to MaxServers (fairCut), with err saying so
// when they were (hint ends the line).
func capped(targets []Target, err error, hint string) ([]Target, error) {
	n := len(targets)
	if n <= MaxServers {
		return targets, err
	}
	cut := fmt.Errorf("%d servers, more than a watch follows: %d read, each group in turn%s", n, MaxServers, hint)
	if err != nil {
		cut = fmt.Errorf("%w; %w", err, cut)
	}
	return fairCut(targets, MaxServers), cut
}

// fairCut is max of targets, taken from each group in turn, so that one
// group's long list (a DNS name of thousands) leaves the others theirs.
func fairCut(targets []Target, max int) []Target {
	var order []string
	by := map[string][]Target{}
	for _, t := range targets {
		if _, ok := by[t.Group]; !ok {
			order = append(order, t.Group)
		}
		by[t.Group] = append(by[t.Group], t)
	}
	out := make([]Target, 0, max)
	for i := 0; len(out) < max; i++ {
		for _, g := range order {
			if i < len(by[g]) && len(out) < max {
				out = append(out, by[g][i])
			}
		}
	}
	return out
}

// one scrapes one server.
func (s *Scrape) one(ctx context.Context, t Target) (engines.Reading, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return engines.Reading{}, fmt.Errorf("bad metrics URL: %s", probe.Redact(err.Error(), 0))
	}
	for k, vs := range s.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.Client.Do(req)
	if err != nil {
		return engines.Reading{}, fmt.Errorf("not answering: %s", probe.Redact(unwrapURL(err), 0))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return engines.Reading{}, fmt.Errorf("metrics answered HTTP %d", resp.StatusCode)
	}
	r, err := engines.Parse(resp.Body)
	if err != nil {
		return r, fmt.Errorf("metrics: %w", err)
	}
	return r, nil
}

// unwrapURL is a client error without the URL net/http puts in front
// (it may hold a secret; the table names the server already).
func unwrapURL(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "\": "); i >= 0 {
		return msg[i+3:]
	}
	return msg
}

// Refreshed is list asked again at most every `every`: a DNS name or a
// Kubernetes selector is looked up every 15 s, not at every read. Until
// the next lookup the last list stands; a lookup that fails keeps it
// and says why.
func Refreshed(list Lister, every time.Duration, now func() time.Time) Lister {
	var (
		mu   sync.Mutex
		last []Target
		at   time.Time
		has  bool
	)
	return func(ctx context.Context) ([]Target, error) {
		mu.Lock()
		defer mu.Unlock()
		if has && now().Sub(at) < every {
			return last, nil
		}
		ts, err := list(ctx)
		at = now()
		if err != nil && len(ts) == 0 {
			if has {
				return last, err
			}
			return nil, err
		}
		last, has = ts, true
		return ts, err
	}
}
