// Package fleet follows infertop agents (package agent) from one place:
// it finds them (a list of addresses, or DNS names re-resolved, A or SRV
// records), polls each one's /state, /seconds and /result with the
// shared token over TLS (plain HTTP to a loopback address only, when
// allowed), tells running, done, lost, replaced (an index started again
// elsewhere), unreachable and refused agents apart, sends them the
// follower's knob changes (POST /control, by each agent's poller), and
// merges their results exactly (report/merge) and their sealed seconds
// into the live window (see Merging). Merging is the merged agents as a
// source of snapshots, with a controller and the merged reports; Pair
// compares two of them (the agents' baselines and canaries). Package
// session follows both through interfaces of its own (fleet/fleetflag
// joins them), so that run --agents and the dashboard follow them with
// the follower and epilogue of every run, and the dashboard's keys move
// them all; fleet links no session, runner or sim.
//
// Everything an agent sends is untrusted: its bodies are bounded, its
// results decoded by merge.Decode's bounds and its seconds by
// decodeSeconds', its text sanitised before it is shown; an agent that
// never answers blocks nothing, since each that answers is polled by a
// goroutine of its own with a timeout per request, and an address that
// never has is polled slower and slower (backoff), a few hundred of them
// at once at most (the gate), through HTTP clients shared by every
// address of one shape.
//
// The files follow the jobs: discovery.go finds the agents' addresses,
// poll.go polls one agent over HTTP or TLS, roster.go decides every
// agent's status and the view (a type without goroutines or network,
// its time passed in), and this file's loop carries out its decisions
// and publishes the views; merging.go merges them into snapshots,
// control.go is the merge's controller, seconds.go and window.go the
// live window, pair.go the comparison of two merges.
package fleet

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/discover"
	"github.com/infertop/infertop/latest"
)

// Defaults of a Config's durations.
const (
	DefaultPollEvery    = time.Second
	DefaultResultEvery  = 5 * time.Second
	DefaultResolveEvery = 5 * time.Second
	DefaultTimeout      = 3 * time.Second
	DefaultLostAfter    = 30 * time.Second
)

// Config says which agents to follow and how.
type Config struct {
	// Source is where the agents are; Resolver resolves its DNS names
	// (nil: net.DefaultResolver).
	Source   discover.Source
	Resolver discover.Resolver
	// Token is the shared token, sent as Authorization: Bearer.
	Token []byte
	// RootCAs verify the agents' certificates (nil: the system's);
	// ServerName, when set, is the name every certificate must hold
	// (else the name each address was found under).
	RootCAs    *x509.CertPool
	ServerName string
	// PlainLoopback polls agents on a loopback address over plain HTTP
	// (the agents' --plain-http-loopback); any other address is polled
	// over TLS whatever it says.
	PlainLoopback bool
	// Version is the follower's: an agent of another is refused.
	Version string
	// Compare says the agents compare a canary with their baseline
	// (their --compare, agent.State.Compare): one that does not, where
	// Compare is set, or one that does, where it is not, is refused by
	// name. Canary follows their canaries (under agent.CanaryPrefix)
	// and sends no control: the pair's controls are their baselines'
	// (see PairSession).
	Compare, Canary bool
	// PollEvery is how often each agent's /state is read, ResultEvery
	// its /result (the exact figures so far), ResolveEvery the DNS names;
	// Timeout bounds each request (a /result's four times it); LostAfter
	// is the silence after which an agent that answered is lost, and one
	// that never did unreachable (every request ends within half of it).
	// Zero: the defaults above.
	PollEvery, ResultEvery, ResolveEvery, Timeout, LostAfter time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logf hears of refusals and resolution errors (nil: none).
	Logf func(format string, args ...any)
}

// Fleet follows agents. Its methods are safe from any goroutine.
type Fleet struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
	found  chan resolution
	obs    chan observation
	finish chan string
	floors []int64 // bucketFloors, read by the pollers
	// hurry fetches every agent's result at every poll, not every
	// ResultEvery, until this moment on cfg.Now's clock (behind hmu): a
	// capacity search judges its steps on them.
	hmu   sync.Mutex
	hurry time.Time

	// hub offers the views, latest wins; closed after the Done one.
	hub latest.Hub[View]

	// gate holds the polls of the addresses that have never answered
	// (see follow).
	gate gate

	// clients are the pollers' HTTP clients, one per shape (see
	// shared), behind tmu.
	tmu     sync.Mutex
	clients map[string]*http.Client

	// The latest control, sent by every poller to its agent while the
	// agent's state says it is behind (behind cmu); wake is closed and
	// replaced at every new one, so the pollers send it at once.
	cmu  sync.Mutex
	out  outgoing
	wake chan struct{}
}

// outgoing is the control the pollers send, and when its reset (if
// any) was asked on the follower's clock: an agent whose load started
// after it has nothing to forget, and is sent none.
type outgoing struct {
	c       agent.Control
	resetAt time.Time
}

// Start starts following cfg's agents.
func Start(cfg Config) (*Fleet, error) {
	if len(cfg.Token) == 0 {
		return nil, errors.New("fleet: no token (--agents-token-file)")
	}
	if err := agent.CheckToken(cfg.Token); err != nil {
		return nil, fmt.Errorf("fleet: the token: %w", err)
	}
	if cfg.Source.Empty() {
		return nil, fmt.Errorf("fleet: no agents: %w", discover.ErrSource)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.PollEvery, DefaultPollEvery)
	def(&cfg.ResultEvery, DefaultResultEvery)
	def(&cfg.ResolveEvery, DefaultResolveEvery)
	def(&cfg.Timeout, DefaultTimeout)
	def(&cfg.LostAfter, DefaultLostAfter)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fleet{cfg: cfg, cancel: cancel, done: make(chan struct{}), found: make(chan resolution), obs: make(chan observation, 64),
		finish: make(chan string, 1), wake: make(chan struct{}), floors: bucketFloors()}
	f.gate.free = maxUnanswered
	r := newRoster(cfg, cfg.Now())
	f.hub.Publish(r.v)
	go f.loop(ctx, r)
	return f, nil
}

// Subscribe is a subscription to the fleet's views (latest wins); the
// channel closes after the last (Done) view, or at Stop.
func (f *Fleet) Subscribe() (<-chan View, func()) { return f.hub.Subscribe() }

// Latest is the newest view.
func (f *Fleet) Latest() View {
	v, _ := f.hub.Latest()
	return v
}

// Finish stops waiting for the agents: the next view is Done, with why.
func (f *Fleet) Finish(why string) {
	select {
	case f.finish <- why:
	default:
	}
}

// Send makes c the control every agent followed is sent (each agent not
// refused, once, by its own poller, at once; an agent that comes later
// or starts again is sent it then); resetAt is when c's reset was asked
// (ResetSeq). It returns at once.
func (f *Fleet) Send(c agent.Control, resetAt time.Time) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if c.Seq <= f.out.c.Seq {
		return
	}
	f.out = outgoing{c: c, resetAt: resetAt}
	close(f.wake)
	f.wake = make(chan struct{})
}

// control is the latest control and the channel closed at the next.
func (f *Fleet) control() (outgoing, <-chan struct{}) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return f.out, f.wake
}

// HurryFor is how long after a search's last phase began the agents'
// results are still fetched at every poll (Hurry): past every phase of
// a step (a drain, a warm-up, a hold, a tail, each at most
// --step-max-time) but for holds past ten minutes, so a search in
// progress keeps the pace and one over (a dashboard's, the agents
// running on) gives it up.
const HurryFor = 10 * time.Minute

// Hurry fetches the agents' results at every poll for the next HurryFor,
// then every ResultEvery again: a capacity search over the agents judges
// each step on its phase's exact merge, which is no older than a poll
// then.
func (f *Fleet) Hurry() {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	f.hurry = f.cfg.Now().Add(HurryFor)
}

// resultEvery is how often the agents' results are fetched now.
func (f *Fleet) resultEvery() time.Duration {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	if f.cfg.Now().Before(f.hurry) {
		return f.cfg.PollEvery
	}
	return f.cfg.ResultEvery
}

// Stop stops following (the agents run on); it waits for every poller.
func (f *Fleet) Stop() {
	f.cancel()
	<-f.done
}

// poller is the loop's handle on one agent's poller.
type poller struct {
	cancel context.CancelFunc
	// send says the poller may send its agent controls (written by the
	// loop, read by the poller).
	send *atomic.Bool
}

// loop carries out the roster's decisions: it starts a poller for every
// address found, feeds the roster their observations, stops the pollers
// of agents polled no more, and publishes a view on every change and
// every PollEvery.
func (f *Fleet) loop(ctx context.Context, r *roster) {
	var wg sync.WaitGroup
	defer close(f.done)
	defer f.closeIdle() // after the pollers: no connection of theirs comes back
	defer wg.Wait()
	cfg := f.cfg
	pollers := map[string]poller{}
	rctx, stopResolving := context.WithCancel(ctx)
	wg.Add(1)
	go func() { // the resolver: its own goroutine, since DNS may hang
		defer wg.Done()
		f.resolve(rctx)
	}()
	tick := time.NewTicker(cfg.PollEvery)
	defer tick.Stop()
	defer func() {
		stopResolving()
		for _, p := range pollers {
			p.cancel()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			f.end(r.stopView())
			return
		case why := <-f.finish:
			r.finish(why)
		case res := <-f.found:
			for _, a := range r.found(res, cfg.Now()) {
				pctx, cancel := context.WithCancel(ctx)
				p := poller{cancel: cancel, send: &atomic.Bool{}}
				pollers[a.HostPort] = p
				wg.Add(1)
				back := newBackoff(cfg.PollEvery, cfg.LostAfter)
				f.follow(pctx, a, p.send, &back, wg.Done)
			}
		case o := <-f.obs:
			if !f.observe(r, o) {
				continue // nothing new: the next tick steps
			}
		case <-tick.C:
		}
		out := r.step(cfg.Now())
		for _, addr := range r.stopped() {
			if p, ok := pollers[addr]; ok {
				p.cancel()
				delete(pollers, addr)
			}
		}
		for addr, p := range pollers {
			p.send.Store(r.sendable(addr))
		}
		if out.Done {
			f.end(out)
			return
		}
		f.hub.Publish(out)
	}
}

// maxBatch bounds the observations the loop takes before it steps: a
// step costs the whole roster, so a burst of thousands (addresses found
// together) is taken in a few steps, not one each.
const maxBatch = 1024

// observe gives the roster o and the observations waiting behind it (at
// most maxBatch in all); it says whether the view may have changed.
func (f *Fleet) observe(r *roster, o observation) bool {
	changed := r.observe(o, f.cfg.Now())
	for range maxBatch - 1 {
		select {
		case o := <-f.obs:
			changed = r.observe(o, f.cfg.Now()) || changed
		default:
			return changed
		}
	}
	return changed
}

// end publishes the last view and closes the views' hub: every
// subscriber sees it, then its channel closed.
func (f *Fleet) end(v View) {
	f.hub.Publish(v)
	f.hub.Close()
}
