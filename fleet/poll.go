package fleet

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
	"github.com/infertop/infertop/sanitize"
)

// Polling: each agent has a goroutine of its own that reads its /state,
// /seconds and /result over HTTPS (plain HTTP to a loopback address
// only, when allowed), sends it the follower's control, and hands what
// it found to the loop as an observation. Every request is bounded in
// bytes and time: an agent is untrusted and may hang.

// MaxStateBytes bounds an agent's /state.
const MaxStateBytes = 64 << 10

// MaxResultBytes and MaxResultValues bound an agent's /result, far below
// a result file's (report.MaxResultBytes): the follower holds every
// agent's, and decoding costs some 20 bytes a value. An agent's result
// is its run's figures, histograms and seconds: hours of a run are a few
// MB.
const (
	MaxResultBytes  = 32 << 20
	MaxResultValues = 2 << 20
)

// maxKeptResult bounds an agent's result kept for infertop.agents, as
// re-encoded from what was decoded (what the agent padded it with, in
// fields no result has or in white space, is gone).
const maxKeptResult = 8 << 20

// observation is what one poll found.
type observation struct {
	addr   string
	at     time.Time
	state  *agent.State
	offset time.Duration
	result *merge.Input
	raw    []byte
	final  bool
	// resultErr is why its /result was not taken: badResult says it
	// came and is no result this follower merges (the agent is refused
	// by name), else it did not come (HTTP 500, a timeout).
	resultErr error
	badResult bool
	// resultPhase is the phase the agent's state named just before its
	// result was asked for: the result holds that phase at the least.
	resultPhase int
	err         error
	denied      bool // 401: the token refused
	// ctlErr is the agent's refusal of a control, ctlOK its taking one.
	ctlErr string
	ctlOK  bool
	// secs are its new seconds, secErr why they were refused.
	secs   *secondsBatch
	secErr string
}

// follow polls one agent until ctx ends, then calls done. Its polls
// while it has never answered wait their turn at the gate (at most
// maxUnanswered in flight, first come first served), and no goroutine
// waits for them: thousands of addresses that never answer cost a timer
// or a place in the queue each, not a goroutine and its stack. From its
// first answer it is polled by a goroutine of its own (poll).
func (f *Fleet) follow(ctx context.Context, a discover.Addr, send *atomic.Bool, back *backoff, done func()) {
	f.gate.enter(func() { go f.turn(ctx, a, send, back, done) })
}

// turn is the agent's turn at the gate: its poll, and every poll after
// if it answers; else the next turn after its wait.
func (f *Fleet) turn(ctx context.Context, a discover.Addr, send *atomic.Bool, back *backoff, done func()) {
	wait := f.poll(ctx, a, send, back, f.gate.leave)
	if wait == 0 {
		done()
		return
	}
	// Exactly one of the two calls done when ctx ends: the timer's
	// stopping, or the turn it started.
	ready := make(chan struct{})
	var stop func() bool
	t := time.AfterFunc(wait, func() {
		<-ready
		if !stop() { // ctx ended as it fired
			done()
			return
		}
		f.follow(ctx, a, send, back, done)
	})
	stop = context.AfterFunc(ctx, func() {
		if t.Stop() {
			done()
		}
	})
	close(ready)
}

// gate holds the polls of addresses that have never answered to at most
// maxUnanswered in flight; the others wait in order, as functions that
// start them, not goroutines.
type gate struct {
	mu    sync.Mutex
	free  int
	queue []func()
}

// enter runs start now if a poll may start, else when one ends.
func (g *gate) enter(start func()) {
	g.mu.Lock()
	if g.free > 0 {
		g.free--
		g.mu.Unlock()
		start()
		return
	}
	g.queue = append(g.queue, start)
	g.mu.Unlock()
}

// leave ends a poll: the next waiting starts in its place.
func (g *gate) leave() {
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.free++
		g.mu.Unlock()
		return
	}
	next := g.queue[0]
	g.queue[0] = nil
	g.queue = g.queue[1:]
	g.mu.Unlock()
	next()
}

// poll polls one agent until ctx ends (it returns 0), or, while the
// agent has never answered, once (it returns the wait before the next
// poll, back's); release is called once its first /state is over. Its
// /state every PollEvery, its /result every ResultEvery and as soon as
// its state says the result is final; the latest control whenever its
// state says it is behind and send allows, at once when a new one
// comes.
func (f *Fleet) poll(ctx context.Context, a discover.Addr, send *atomic.Bool, back *backoff, release func()) time.Duration {
	cfg := f.cfg
	client, base := f.client(a)
	if cfg.Canary { // its canary's state, result and seconds; no control is sent there
		base += agent.CanaryPrefix
	}
	var t *time.Timer // made at the first answer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	var lastResult time.Time
	var refusedSeq uint64
	secs := secondsPoll{last: -1}
	for {
		o := observation{addr: a.HostPort}
		out, wake := f.control()
		sent := cfg.Now()
		b, _, err := f.get(ctx, client, base+"/state", MaxStateBytes, min(cfg.Timeout, cfg.LostAfter/2))
		if release != nil {
			release()
			release = nil
		}
		o.at = cfg.Now()
		var st agent.State
		if err == nil {
			if st, err = decodeState(b); err != nil {
				err = fmt.Errorf("its /state: %w", err)
			}
		}
		if err != nil {
			o.err, o.denied = err, errors.Is(err, errDenied)
		} else {
			o.state = &st
			o.offset = st.Now.Sub(sent.Add(o.at.Sub(sent) / 2))
			if out.c.Seq > st.ControlSeq && out.c.Seq != refusedSeq && send.Load() {
				if after, err := f.sendControl(ctx, client, base, out, st, o.offset); err != nil {
					if errors.Is(err, errRefusedControl) {
						refusedSeq, o.ctlErr = out.c.Seq, sanitize.Text(err.Error())
					}
					if ctx.Err() == nil {
						cfg.Logf("fleet: the agent at %s: %v", a.HostPort, err)
					}
				} else {
					st, o.ctlOK = after, true
				}
			}
			secs.poll(ctx, f, client, base, st, &o)
			// A control just taken is told at once: the result (a
			// report the agent builds) waits for the next round.
			// Before its load starts an agent has no result to give.
			if st.Final || !o.ctlOK && !st.Started.IsZero() && o.at.Sub(lastResult) >= f.resultEvery() {
				lastResult = o.at
				// Within half the silence that makes an agent lost: a
				// poll ends, answered or failed, before the agent could
				// be called lost while it was answering.
				raw, h, rerr := f.get(ctx, client, base+"/result", MaxResultBytes, min(4*cfg.Timeout, cfg.LostAfter/2))
				if rerr == nil && len(raw) == 0 {
					rerr = errEmptyResult // none yet, as a 503 says: no refusal
				}
				if rerr == nil {
					in, derr := merge.DecodeWithin(fmt.Sprintf("agent %d (%s)", st.Index, a.HostPort), raw, MaxResultBytes, MaxResultValues)
					raw = nil // decoded: its bytes go
					if derr == nil {
						// Final by the answer's own word: the run may have
						// ended between the state and the result.
						o.result, o.raw, o.final = &in, kept(in), h.Get(agent.ResultHeader) == agent.ResultFinal
						o.resultPhase = st.Phase
					} else {
						rerr, o.badResult = derr, true
					}
				}
				if errors.Is(rerr, errPastLimit) {
					o.badResult = true // it came, too large to be one
				}
				if rerr != nil && ctx.Err() == nil {
					o.resultErr = rerr
					cfg.Logf("fleet: the agent at %s: %s", a.HostPort, sanitize.Short(rerr.Error(), 300))
				}
			}
		}
		select {
		case f.obs <- o:
		case <-ctx.Done():
			return 0
		}
		wait := back.next(o.state != nil)
		if !back.answered {
			return wait // no control before a state: none to wake it
		}
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-t.C:
		case <-wake:
		case <-ctx.Done():
			return 0
		}
	}
}

// maxUnanswered bounds the polls of addresses that have never answered
// in flight at once: thousands found together, or whose waits fall
// together, cost that many goroutines at most (each some 16 KB of stack
// while it dials), the others waiting their turn. 256 addresses that
// hang until the timeout (3 s) let some 85 others a second through, so
// an agent that comes up among thousands of them is seen within a
// minute or two; one that answers at once, within seconds.
const maxUnanswered = 256

// maxBackoff bounds the wait between two polls of an address that has
// never answered.
const maxBackoff = 10 * time.Second

// backoff is the pace of one address's polls (an address that has
// never answered is polled slower and slower, so that thousands that
// never will cost little): every PollEvery once it has answered; before, a wait that doubles from PollEvery up to
// maxBackoff (and half of LostAfter, so an agent that comes up late is
// seen within it), a quarter of it at random added so that addresses
// found together are not polled in step.
type backoff struct {
	every, wait, most time.Duration
	answered          bool
}

func newBackoff(every, lostAfter time.Duration) backoff {
	return backoff{every: every, most: max(every, min(maxBackoff, lostAfter/2))}
}

// next is the wait before the next poll, after a poll that answered or
// not.
func (b *backoff) next(answered bool) time.Duration {
	b.answered = b.answered || answered
	if b.answered {
		return b.every
	}
	b.wait = min(max(2*b.wait, b.every), b.most)
	return b.wait + rand.N(b.wait/4+1)
}

// secondsPoll is a poller's record of an agent's /seconds: the start of
// the load they are of, the last second it has, the last refusal told
// to Logf, and whether the agent serves none (an agent of before them,
// HTTP 404: its figures are its results' alone).
type secondsPoll struct {
	started time.Time
	last    int64
	told    string
	none    bool
}

// poll reads the agent's seconds after the last it has into o, once its
// load has started (st); a refusal is told to Logf when it changes.
func (p *secondsPoll) poll(ctx context.Context, f *Fleet, client *http.Client, base string, st agent.State, o *observation) {
	if p.none || st.Started.IsZero() {
		return
	}
	if !st.Started.Equal(p.started) { // the load started (again): all it keeps
		p.started, p.last = st.Started, -1
	}
	url := fmt.Sprintf("%s/seconds?since=%d", base, p.last)
	raw, _, err := f.get(ctx, client, url, agent.MaxSecondsBytes, min(f.cfg.Timeout, f.cfg.LostAfter/2))
	var b *secondsBatch
	if err == nil {
		b, err = decodeSeconds(raw, p.last, f.floors)
	}
	switch {
	case err == nil:
		if n := len(b.secs); n > 0 {
			p.last = b.secs[n-1].Sec
		}
		o.secs, p.told = b, ""
		return
	case errors.Is(err, errNotFound):
		p.none = true
		return
	default:
		o.secErr = sanitize.Text(err.Error())
	}
	if why := sanitize.Text(err.Error()); why != p.told && ctx.Err() == nil {
		p.told = why
		f.cfg.Logf("fleet: the agent at %s: %s", strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://"), why)
	}
}

// sendControl sends out's control to the agent whose state is st (its
// clock off ours by offset), its reset dropped where the agent's load
// started after it was asked (or has not started): nothing to forget.
// It returns the agent's state after it.
func (f *Fleet) sendControl(ctx context.Context, client *http.Client, base string, out outgoing, st agent.State, offset time.Duration) (agent.State, error) {
	c := out.c
	if c.ResetSeq != 0 && (st.Started.IsZero() || st.Started.Add(-offset).After(out.resetAt)) {
		c.ResetSeq = 0
	}
	body, err := json.Marshal(c)
	if err != nil {
		return agent.State{}, fmt.Errorf("fleet: %w", err)
	}
	b, _, err := f.do(ctx, client, http.MethodPost, base+"/control", body, MaxStateBytes, min(f.cfg.Timeout, f.cfg.LostAfter/2))
	if err != nil {
		return agent.State{}, err
	}
	after, err := decodeState(b)
	if err != nil {
		return agent.State{}, fmt.Errorf("control: its answer: %w", err)
	}
	return after, nil
}

// kept is an agent's result as infertop.agents keeps it: re-encoded from
// what was decoded (its padding gone), nil past maxKeptResult.
func kept(in merge.Input) []byte {
	b, err := report.EncodeResult(in.Result, in.MaxConcurrency)
	if err != nil || len(b) > maxKeptResult {
		return nil
	}
	return b
}

// maxStateCount bounds the counts of an agent's state (the follower sums
// them over up to MaxAddresses agents) and maxStateMS its ages.
const (
	maxStateCount = 1 << 48
	maxStateMS    = 1e12
)

// errState is a /state refused.
var errState = errors.New("no agent's state")

// decodeState decodes and checks an agent's /state (or its answer to a
// control): one JSON object of agent.State, its counts within
// 0..maxStateCount, its ages finite and within maxStateMS. Its share,
// version and control seq are the roster's to judge (roster.foreign).
func decodeState(b []byte) (agent.State, error) {
	var st agent.State
	if err := json.Unmarshal(b, &st); err != nil {
		return agent.State{}, fmt.Errorf("%w: %w", errState, err)
	}
	s := st.Streams
	for _, n := range []int64{st.Sent, st.Completed, st.Failed, st.Incomplete, st.InFlight, st.Scheduled, int64(st.Backlog), int64(st.Phase),
		int64(st.Concurrency), int64(st.PromptTokens), int64(st.OutputTokens), int64(s.Waiting), int64(s.Generating), int64(s.Stalled)} {
		if n < 0 || n > maxStateCount {
			return agent.State{}, fmt.Errorf("%w: a count of %d", errState, n)
		}
	}
	for _, v := range []float64{st.Rate, st.OffsetMS, st.TTFTP99MS, s.OldestWaitingMS, s.OldestGeneratingMS, s.LongestStallMS} {
		if math.IsNaN(v) || math.Abs(v) > maxStateMS {
			return agent.State{}, fmt.Errorf("%w: a figure of %g", errState, v)
		}
	}
	return st, nil
}

var errDenied = errors.New("the token was refused")

// errRedirect is an agent's redirect: none is followed.
var errRedirect = errors.New("a redirect, not followed")

// errPastLimit is an answer past the bytes read of it.
var errPastLimit = errors.New("past the bytes read")

// errEmptyResult is a /result answered with nothing.
var errEmptyResult = errors.New("result: empty")

// errNotFound is an HTTP 404: a path the agent does not serve.
var errNotFound = errors.New("HTTP 404")

// client is the HTTP client and base URL for a: plain HTTP to a loopback
// address where allowed, else TLS verified against RootCAs. The clients
// are shared, one per shape (plain, or TLS to one certificate name):
// thousands of addresses cost one transport, not one each.
func (f *Fleet) client(a discover.Addr) (*http.Client, string) {
	host, _, _ := net.SplitHostPort(a.HostPort)
	if ip := net.ParseIP(host); f.cfg.PlainLoopback && ip != nil && ip.IsLoopback() {
		return f.shared(plainShape, nil), "http://" + a.HostPort
	}
	name := f.cfg.ServerName
	if name == "" {
		name = a.ServerName
	}
	// The transport checks the certificate against the host dialled
	// when its config names none: an address given as an IP shares
	// the one transport of no name.
	if name == host {
		name = ""
	}
	return f.shared(name, func() *tls.Config {
		return &tls.Config{RootCAs: f.cfg.RootCAs, ServerName: name, MinVersion: tls.VersionTLS12}
	}), "https://" + a.HostPort
}

// plainShape is the shape of the plain HTTP client: no certificate name
// starts with a space.
const plainShape = " plain"

// shared is the client of shape (tc nil: plain HTTP, else TLS with
// tc's config), made at its first use. Each keeps one idle connection
// per agent (MaxIdleConnsPerHost), dropped after LostAfter idle (a
// stopped poller's); none follows a redirect.
func (f *Fleet) shared(shape string, tc func() *tls.Config) *http.Client {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	if c := f.clients[shape]; c != nil {
		return c
	}
	// An agent's headers are a few hundred bytes; Go's default bound is
	// 10 MB a response, for each agent polled at once.
	t := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, IdleConnTimeout: f.cfg.LostAfter, MaxResponseHeaderBytes: 64 << 10}
	if tc != nil {
		t.TLSClientConfig = tc()
	}
	c := &http.Client{Transport: t, CheckRedirect: noRedirect}
	if f.clients == nil {
		f.clients = map[string]*http.Client{}
	}
	f.clients[shape] = c
	return c
}

// closeIdle closes every shared client's idle connections: at the end,
// once no poller is left.
func (f *Fleet) closeIdle() {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	for _, c := range f.clients {
		c.CloseIdleConnections()
	}
}

// noRedirect follows no redirect: Go's client would carry the token to
// wherever an agent points (it keeps Authorization on the same host
// whatever the port or scheme), and a control's body with it. The
// answer itself is taken, and refused as the 3xx it is.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// errPlainAgent is a TLS request answered in plain HTTP.
var errPlainAgent = errors.New("it answered in plain HTTP, not TLS (an agent without --tls-cert?)")

// errRefusedControl is an agent's refusal of a control (HTTP 4xx but
// 401): its reason follows, in its words.
var errRefusedControl = errors.New("it refused the knob change")

// get reads url with the token, within timeout, at most limit bytes; it
// returns the answer's header too.
func (f *Fleet) get(ctx context.Context, c *http.Client, url string, limit int, timeout time.Duration) ([]byte, http.Header, error) {
	return f.do(ctx, c, http.MethodGet, url, nil, limit, timeout)
}

// do sends method to url with the token and body (nil: none), within
// timeout, and reads at most limit bytes of the answer.
func (f *Fleet) do(ctx context.Context, c *http.Client, method, url string, body []byte, limit int, timeout time.Duration) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+string(f.cfg.Token))
	resp, err := c.Do(req)
	if err != nil {
		err = unwrapURL(err)
		if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") { // net/http's words; no error value to match
			err = errPlainAgent
		}
		return nil, nil, fmt.Errorf("%s: %w", strings.TrimPrefix(req.URL.Path, "/"), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, nil, errDenied
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Where it points is not said: an agent's Location may carry anything.
		return nil, nil, fmt.Errorf("%s: %w (HTTP %d)", strings.TrimPrefix(req.URL.Path, "/"), errRedirect, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		why, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if method == http.MethodPost && resp.StatusCode >= 400 && resp.StatusCode < 500 {
			// The agent's reason, untrusted: one line, sanitised, bounded.
			line, _, _ := strings.Cut(strings.TrimSpace(string(why)), "\n")
			return nil, nil, fmt.Errorf("%w (HTTP %d): %s", errRefusedControl, resp.StatusCode, sanitize.Text(truncate(line, 300)))
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil, fmt.Errorf("%s: %w", strings.TrimPrefix(req.URL.Path, "/"), errNotFound)
		}
		return nil, nil, fmt.Errorf("%s: HTTP %d", strings.TrimPrefix(req.URL.Path, "/"), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", strings.TrimPrefix(req.URL.Path, "/"), err)
	}
	if len(b) > limit {
		return nil, nil, fmt.Errorf("%s: %w (%d)", strings.TrimPrefix(req.URL.Path, "/"), errPastLimit, limit)
	}
	return b, resp.Header, nil
}

// truncate is s cut to n bytes at most, on a rune's boundary.
func truncate(s string, n int) string {
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// unwrapURL drops url.Error's repetition of the URL: the address is
// said where the error is shown.
func unwrapURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
