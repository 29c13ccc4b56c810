// Package promsource reads a fleet's servers from a Prometheus server
// that already scrapes them: one instant query through the HTTP API
// (/api/v1/query) for every wanted series of the servers a matcher picks
// ({job="vllm"}), grouped per server (the instance label, or another)
// with a label's value as its group (--by version). The series are
// rebuilt into the metric families a direct scrape of each server gives
// (histograms from their _bucket{le}, _sum and _count series, counters
// and gauges), so the watch takes the same deltas of either. Prometheus
// holds a new value once a scrape interval: asking more often costs the
// decoding of the same answer again (about 10 µs a series).
package promsource

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/readlimit"
	"github.com/infertop/infertop/sanitize"
)

// The bounds of one answer. A vLLM server exposes a few hundred series:
// MaxSeries is a fleet of hundreds; a larger one is narrowed by --match.
const (
	// MaxBody bounds the bytes of one answer of the API.
	MaxBody = 32 << 20
	// MaxSeries bounds the series of one answer.
	MaxSeries = 100_000
	// MaxServers bounds the servers one answer names: 90,000 servers of
	// a series each cost a watch 928 MB (a server's families are maps).
	MaxServers = 4096
	// DefaultTimeout bounds one request to the API.
	DefaultTimeout = 10 * time.Second
)

// Config says which Prometheus to ask, about which servers.
type Config struct {
	// URL is the Prometheus server's base URL (http://prometheus:9090,
	// or under a path prefix). A user:password in it is sent as basic
	// authentication and never shown.
	URL string
	// Token, when set, is sent as Authorization: Bearer.
	Token string
	// Match picks the servers' series: label matchers, {job="vllm"}.
	Match string
	// By is the label whose value is a server's group ("": none).
	By string
	// Instance is the label that tells the servers apart ("":
	// instance; pod with Kubernetes' service discovery).
	Instance string
	// Names are the metric families wanted, as a direct scrape names
	// them (a counter with its _total or not; a histogram by its base
	// name).
	Names []string
	// RootCAs verify an https URL's certificate (nil: the system's).
	RootCAs *x509.CertPool
	// Timeout bounds one request (0: DefaultTimeout).
	Timeout time.Duration
	// MaxSeries bounds the series of one answer (0: MaxSeries).
	MaxSeries int
}

// Source asks one Prometheus about one fleet. It remembers the types
// the server's metadata gives (a counter whose name lacks _total), so
// it is used by one goroutine at a time.
type Source struct {
	base    *url.URL // without its user information
	auth    string   // the Authorization header, "" none
	secrets []string // what never reaches an error
	query   string
	by      string
	inst    string
	names   map[string]bool
	client  *http.Client
	types   map[string]string // metadata's type by series name, "" where none was given
	// maxSeries bounds the series of one answer.
	maxSeries int
}

// New checks cfg and makes its Source; it asks nothing yet.
func New(cfg Config) (*Source, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("promsource: the Prometheus URL %q: want http(s)://HOST[:PORT][/PREFIX]", probe.RedactURL(cfg.URL))
	}
	s := &Source{by: cfg.By, inst: cfg.Instance, names: map[string]bool{}, types: map[string]string{}, maxSeries: cfg.MaxSeries}
	if s.maxSeries <= 0 {
		s.maxSeries = MaxSeries
	}
	if s.inst == "" {
		s.inst = "instance"
	}
	for _, l := range []string{s.by, s.inst} {
		if l != "" && !labelName.MatchString(l) {
			return nil, fmt.Errorf("promsource: %q is not a label name", l)
		}
	}
	if cfg.Token != "" {
		s.auth = "Bearer " + cfg.Token
		s.secrets = append(s.secrets, cfg.Token)
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		if s.auth == "" {
			req := &http.Request{Header: http.Header{}}
			req.SetBasicAuth(u.User.Username(), pw)
			s.auth = req.Header.Get("Authorization")
		}
		s.secrets = append(s.secrets, u.User.Username(), pw)
		u.User = nil
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	s.base = u
	if len(cfg.Names) == 0 {
		return nil, errors.New("promsource: no metric names to ask for")
	}
	var quoted []string
	for _, n := range cfg.Names {
		s.names[n] = true
		quoted = append(quoted, regexp.QuoteMeta(n))
	}
	slices.Sort(quoted)
	matchers, err := parseMatch(cfg.Match)
	if err != nil {
		return nil, fmt.Errorf("promsource: --match %w", err)
	}
	s.query = "{" + strings.Join(append([]string{`__name__=~"(?:` + strings.Join(slices.Compact(quoted), "|") + `)(?:_bucket|_sum|_count|_total)?"`}, matchers...), ",") + "}"
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	s.client = &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: s.redirect}
	return s, nil
}

// redirect follows a redirect only when no credential is sent, within
// the same scheme and host, three at most: Go would resend a bearer
// token to the same host on any port, https to http included.
func (s *Source) redirect(req *http.Request, via []*http.Request) error {
	switch {
	case s.auth != "":
		return errors.New("redirected: not followed with the credentials")
	case len(via) >= 3:
		return errors.New("redirected more than 3 times")
	case req.URL.Scheme != s.base.Scheme || req.URL.Host != s.base.Host:
		return errors.New("redirected to another server: not followed")
	}
	return nil
}

// Query is the Selector the Source asks for: every wanted series of the
// matched servers.
func (s *Source) Query() string { return s.query }

// String is the Prometheus server, without credentials.
func (s *Source) String() string { return probe.RedactURL(s.base.String()) }

// call sends a request to an API path, checks the answer's envelope and
// hands its data to data as a decoder positioned at it; the body is
// bounded, and the errors are the API's own, in one line, without a
// secret.
func (s *Source) call(ctx context.Context, method, path string, form url.Values, data func(*json.Decoder) error) error {
	u := *s.base
	u.Path += path
	var sent io.Reader
	if method == http.MethodGet {
		u.RawQuery = form.Encode()
	} else {
		sent = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), sent)
	if err != nil {
		return s.fail(err)
	}
	if sent != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", "infertop")
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return s.fail(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(readlimit.Reader(resp.Body, MaxBody))
	if errors.Is(err, readlimit.ErrTooLarge) {
		return s.fail(fmt.Errorf("an answer of more than %d MiB", MaxBody>>20))
	} else if err != nil {
		return s.fail(err)
	}
	// A series is a few values at the least and some twenty as servers
	// label them: a count of the values bounds the series before any
	// is decoded.
	if readlimit.JSONValues(body, valuesPerSeries*s.maxSeries) > valuesPerSeries*s.maxSeries {
		return s.fail(s.tooMany())
	}
	// A string past maxStringBytes is no label, name or message of a
	// Prometheus answer: refused before a decoder copies it (one label of
	// 30 MB held a watch at 501 MB, 210 MB with that series left out).
	longest := 0
	readlimit.JSONScan(body, func(c byte, n int) { longest = max(longest, n) })
	if longest > maxStringBytes {
		return s.fail(fmt.Errorf("an answer holding a string of %d KB, past %d KB", longest>>10, maxStringBytes>>10))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var status, errType, errMsg string
	err = object(dec, func(key string) error {
		switch key {
		case "status":
			return dec.Decode(&status)
		case "errorType":
			return dec.Decode(&errType)
		case "error":
			return dec.Decode(&errMsg)
		case "data":
			return data(dec)
		}
		return skip(dec)
	})
	switch {
	case errors.Is(err, errTooMany):
		return s.fail(s.tooMany())
	case err != nil && status == "":
		return s.fail(fmt.Errorf("HTTP %d, not the Prometheus API's answer (%v)", resp.StatusCode, err))
	case status != "success":
		return s.fail(fmt.Errorf("HTTP %d: %s: %s", resp.StatusCode, errType, errMsg))
	case err != nil:
		return s.fail(err)
	}
	return nil
}

// fail is an error of the API in one line, sanitised, without the URL's
// credentials or the token.
func (s *Source) fail(err error) error {
	return &Error{Server: s.String(), Why: probe.Redact(sanitize.Text(err.Error()), 300, s.secrets...)}
}

// Error is a request to Prometheus that failed: the server (without its
// credentials), and why.
type Error struct {
	Server, Why string
}

func (e *Error) Error() string { return "promsource: " + e.Server + ": " + e.Why }

var (
	errTooMany = errors.New("too many series")
)

// valuesPerSeries bounds the JSON values of an answer, with the series.
const valuesPerSeries = 32

// maxStringBytes bounds a string of an answer: a label (maxLabelBytes,
// past which a series is left out) or an error's text.
const maxStringBytes = 64 << 10

// tooMany says the series bound.
func (s *Source) tooMany() error {
	return fmt.Errorf("an answer of more than %d series: narrow --match", s.maxSeries)
}

// object reads a JSON object from dec, calling each with every key; each
// reads or skips the key's value.
func object(dec *json.Decoder, each func(key string) error) error {
	if err := delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("a key of %T", t)
		}
		if err := each(key); err != nil {
			return err
		}
	}
	return delim(dec, '}')
}

// delim reads the delimiter want.
func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%v where %v was due", t, want)
	}
	return nil
}

// skip reads past one value as bytes (within the body's bound), building
// none of its values.
func skip(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}
