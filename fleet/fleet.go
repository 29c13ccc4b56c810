// Package fleet follows infertop agents (package agent) from one place:
// it finds them (a list of addresses, or DNS names re-resolved, A or SRV
// records), polls each one's /state, /seconds and /result with the
// shared token over TLS (plain HTTP to a loopback address only, when
// allowed), tells running, done, lost, replaced (an index started again
// elsewhere), unreachable and refused agents apart, sends them the
// follower's knob changes (POST /control, by each agent's poller), and
// merges their results exactly (report/merge) and their sealed seconds
// into the live window (see Session). Session is the merged agents as
// one more kind of session.Session, so that run --agents and the
// dashboard follow them with the follower and epilogue of every run, and
// the dashboard's keys move them all.
//
// Everything an agent sends is untrusted: its bodies are bounded, its
// results decoded by merge.Decode's bounds and its seconds by
// decodeSeconds', its text sanitised before it is shown; an agent that
// never answers blocks nothing, since each is polled by a goroutine of
// its own with a timeout per request.
package fleet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
	"github.com/infertop/infertop/sanitize"
)

// Defaults of a Config's durations.
const (
	DefaultPollEvery    = time.Second
	DefaultResultEvery  = 5 * time.Second
	DefaultResolveEvery = 5 * time.Second
	DefaultTimeout      = 3 * time.Second
	DefaultLostAfter    = 30 * time.Second
)

// lateFollowerBound is the longest an agents' load may have run before
// its follower came for the follower to count from its start; an agent
// saying more is not believed (its clock is then the follower's own).
const lateFollowerBound = 30 * 24 * time.Hour

// MaxStateBytes bounds an agent's /state.
const MaxStateBytes = 64 << 10

// Config says which agents to follow and how.
type Config struct {
	// Source is where the agents are; Resolver resolves its DNS names
	// (nil: net.DefaultResolver).
	Source   Source
	Resolver Resolver
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

// Agent is one agent as the fleet sees it at a moment. Its pointers are
// never written once published.
type Agent struct {
	// Addr is where it is polled, ServerName its certificate's name.
	Addr, ServerName string
	// Status is one of report's Agent* states; Why says why it is lost,
	// unreachable or refused, LastErr the last failed poll's reason.
	Status       string
	Why, LastErr string
	// State is its last /state (HasState: one came).
	State    agent.State
	HasState bool
	// Result is its last /result decoded, Raw its bytes, Final whether it
	// is the last word. ResultPhase is the phase its state named just
	// before that result was asked for: the result was built in it or
	// later, so every phase before it is in the result as far as the
	// agent sends in it (a phase that sent nothing is in no result).
	Result      *merge.Input
	Raw         []byte
	Final       bool
	ResultPhase int
	// Added is when it was first named, LastSeen when it last answered;
	// ClockOffset is its clock less ours, at the middle of the round trip.
	Added, LastSeen time.Time
	ClockOffset     time.Duration
	// ControlErr is its refusal of the follower's last control ("":
	// none), sanitised.
	ControlErr string
	// Seconds are its newest sealed seconds (/seconds, every PollEvery),
	// oldest first, at most keepSeconds, since its last reset
	// (SecondsFrom); SecondsStart is its second 0 on its clock.
	// SecondsErr is why its last /seconds was refused ("": it was not),
	// sanitised.
	Seconds      []Second
	SecondsStart time.Time
	SecondsFrom  int64
	SecondsErr   string
}

// Index is the agent's index, -1 before its first state.
func (a Agent) Index() int {
	if !a.HasState {
		return -1
	}
	return a.State.Index
}

// View is the fleet at a moment.
type View struct {
	// Seq counts views from 1.
	Seq    uint64
	Source string
	// Of is the split (the first accepted agent's --of; 0 before one).
	Of int
	// Agents are sorted by index, then address.
	Agents []Agent
	// Missing are the indexes of 0..Of-1 no accepted agent has.
	Missing []int
	// Done says the fleet is over: every agent done, lost, unreachable or
	// refused (or Finish was called); DoneWhy says so in a line.
	Done    bool
	DoneWhy string
	// Started is when the fleet started, or, where the first agent that
	// answered said its load had started before, that start (on this
	// machine's clock): the instant the follower's run time counts from.
	// ResolveErr is the last resolution's error ("" none).
	Started    time.Time
	ResolveErr string
}

// Fleet follows agents. Its methods are safe from any goroutine.
type Fleet struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
	obs    chan observation
	finish chan string
	floors []int64 // bucketFloors, read by the pollers
	// hurry fetches every agent's result at every poll, not every
	// ResultEvery, until this moment on cfg.Now's clock (behind hmu): a
	// capacity search judges its steps on them.
	hmu   sync.Mutex
	hurry time.Time

	mu     sync.Mutex
	latest View
	subs   []chan View

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

// observation is what one poll found.
type observation struct {
	addr   string
	at     time.Time
	state  *agent.State
	offset time.Duration
	result *merge.Input
	raw    []byte
	final  bool
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
	addrs  []Addr
	resErr error
	isAddr bool // a resolution, not a poll
}

// Start starts following cfg's agents.
func Start(cfg Config) (*Fleet, error) {
	if len(cfg.Token) == 0 {
		return nil, errors.New("fleet: no token (--agents-token-file)")
	}
	if len(cfg.Source.entries) == 0 {
		return nil, fmt.Errorf("fleet: %w", ErrSource)
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
	f := &Fleet{cfg: cfg, cancel: cancel, done: make(chan struct{}), obs: make(chan observation, 64), finish: make(chan string, 1),
		wake: make(chan struct{}), floors: bucketFloors()}
	f.latest = View{Source: cfg.Source.String(), Started: cfg.Now()}
	go f.loop(ctx)
	return f, nil
}

// Subscribe is a subscription to the fleet's views (latest wins); the
// channel closes after the last (Done) view, or at Stop.
func (f *Fleet) Subscribe() (<-chan View, func()) {
	ch := make(chan View, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	ch <- f.latest
	if f.latest.Done || f.closed() {
		close(ch)
		return ch, func() {}
	}
	f.subs = append(f.subs, ch)
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if i := slices.Index(f.subs, ch); i >= 0 {
			f.subs = slices.Delete(f.subs, i, i+1)
			close(ch)
		}
	}
}

func (f *Fleet) closed() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Latest is the newest view.
func (f *Fleet) Latest() View {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest
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

// publish makes v the latest view and offers it to every subscriber.
func (f *Fleet) publish(v View) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latest = v
	for _, ch := range f.subs {
		select {
		case <-ch: // latest wins
		default:
		}
		ch <- v
		if v.Done {
			close(ch)
		}
	}
	if v.Done {
		f.subs = nil
	}
}

// member is the loop's record of one agent.
type member struct {
	Agent
	cancel context.CancelFunc
	// send says its poller may send it controls: an agent of the load,
	// not refused nor replaced (written by the loop, read by the poller).
	send *atomic.Bool
	// other says why its load is not the others' ("": it is); logged
	// says that was told to Logf.
	other, logged string
}

// loop owns the agents: it starts a poller for every address found,
// folds their observations, marks the lost and the unreachable, and
// publishes a view on every change and every PollEvery.
func (f *Fleet) loop(ctx context.Context) {
	var wg sync.WaitGroup
	defer close(f.done)
	defer wg.Wait()
	cfg := f.cfg
	members := map[string]*member{}
	v := f.latest
	lastChange := v.Started
	rctx, stopResolving := context.WithCancel(ctx)
	wg.Add(1)
	go func() { // the resolver: its own goroutine, since DNS may hang
		defer wg.Done()
		f.resolve(rctx)
	}()
	tick := time.NewTicker(cfg.PollEvery)
	defer tick.Stop()
	stopAll := func() {
		stopResolving()
		for _, m := range members {
			if m.cancel != nil {
				m.cancel()
			}
		}
	}
	defer stopAll()
	finishing := ""
	clockSet := false
	for {
		select {
		case <-ctx.Done():
			v.Done, v.DoneWhy = true, "stopped"
			f.publish(f.view(v, members))
			return
		case why := <-f.finish:
			finishing = why
		case o := <-f.obs:
			if o.isAddr {
				v.ResolveErr = ""
				if o.resErr != nil {
					v.ResolveErr = sanitize.Text(o.resErr.Error())
				}
				for _, a := range o.addrs {
					if members[a.HostPort] != nil || len(members) >= MaxAddresses {
						continue
					}
					m := &member{Agent: Agent{Addr: a.HostPort, ServerName: a.ServerName, Status: report.AgentWaiting, Added: cfg.Now()},
						send: &atomic.Bool{}}
					pctx, cancel := context.WithCancel(ctx)
					m.cancel = cancel
					members[a.HostPort] = m
					lastChange = cfg.Now()
					wg.Add(1)
					go func() {
						defer wg.Done()
						f.poll(pctx, a, m.send)
					}()
				}
				break
			}
			m := members[o.addr]
			if m == nil || m.Status == report.AgentRefused || m.Status == report.AgentReplaced {
				break
			}
			if st := o.state; st != nil && o.err == nil && startedAgain(m.Agent, *st) {
				// The load at this address started again (its container
				// restarted in the same pod): the earlier run's last word
				// stays beside the new one's, as a replaced pod's does.
				old := retire(m.Agent, st.Index)
				members[o.addr+" "+m.State.Started.Format(time.RFC3339Nano)] = &member{Agent: old, send: &atomic.Bool{}}
				cfg.Logf("fleet: the agent at %s started its load again: %s", m.Addr, old.Why)
				m.Agent = Agent{Addr: m.Addr, ServerName: m.ServerName, Status: report.AgentWaiting, Added: m.Added}
				lastChange = cfg.Now()
			}
			if f.fold(m, o) {
				lastChange = cfg.Now()
			}
			if !clockSet && m.HasState && m.Status != report.AgentRefused {
				// A follower that comes after the agents' load began
				// (kubectl run once the Job runs) counts its time from
				// their start, so its run time, series and phases are
				// theirs; once, at the first agent's word: a clock that
				// later moved back would undo what was shown.
				clockSet = true
				st := &m.State // untrusted: a start after its own clock, or a month back, is none
				if at := st.Started.Add(-m.ClockOffset); !st.Started.IsZero() && !st.Started.After(st.Now) && at.Before(v.Started) &&
					v.Started.Sub(at) < lateFollowerBound {
					v.Started = at
				}
			}
		case <-tick.C:
		}
		now := cfg.Now()
		judge(members)
		for _, m := range members {
			if f.age(m, now) {
				lastChange = now
			}
		}
		if f.replace(members, now) {
			lastChange = now
		}
		for _, m := range members {
			m.send.Store(!cfg.Canary && m.HasState && m.other == "" && m.Status != report.AgentRefused && m.Status != report.AgentReplaced)
			if m.other != "" && m.logged != m.other {
				m.logged = m.other
				cfg.Logf("fleet: refused the agent at %s: %s", m.Addr, m.other)
			}
		}
		v.Seq++
		out := f.view(v, members)
		switch {
		case finishing != "":
			out.Done, out.DoneWhy = true, finishing
		case len(members) == 0 && now.Sub(v.Started) >= cfg.LostAfter:
			out.Done, out.DoneWhy = true, "no agent found at "+sanitize.Text(cfg.Source.String())
		case len(members) > 0 && over(out.Agents) && (len(out.Missing) == 0 || now.Sub(lastChange) >= cfg.LostAfter):
			out.Done, out.DoneWhy = true, doneWhy(out.Agents)
		}
		f.publish(out)
		if out.Done {
			return
		}
	}
}

// fold takes one poll's observation into m; it says whether m's status
// changed.
func (f *Fleet) fold(m *member, o observation) bool {
	before := m.Status
	if o.err != nil {
		m.LastErr = sanitize.Text(o.err.Error())
		if o.denied {
			f.refuse(m, "it refused the token (HTTP 401): another --agents-token-file than the agents'")
		}
		return m.Status != before
	}
	m.LastSeen, m.LastErr = o.at, ""
	switch {
	case o.ctlErr != "":
		m.ControlErr = o.ctlErr
	case o.ctlOK:
		m.ControlErr = ""
	}
	if st := o.state; st != nil {
		m.State, m.HasState, m.ClockOffset = *st, true, o.offset
		if why := f.foreign(*st); why != "" {
			f.refuse(m, why)
			return true
		}
		if m.Status != report.AgentDone {
			m.Status, m.Why = report.AgentRunning, ""
		}
	}
	switch {
	case o.secs != nil:
		withSeconds(&m.Agent, o.secs)
		m.SecondsErr = ""
	case o.secErr != "":
		m.SecondsErr = o.secErr
	}
	if o.result != nil {
		m.Result, m.Raw, m.ResultPhase = o.result, o.raw, o.resultPhase
		if o.final {
			m.Final, m.Status = true, report.AgentDone
			m.cancel()
		}
	}
	return m.Status != before
}

// foreign says why an agent's state is none this follower takes ("": it
// takes it): another version, or no share.
func (f *Fleet) foreign(st agent.State) string {
	switch {
	case f.cfg.Version != "" && st.Version != f.cfg.Version:
		return sanitize.Text(fmt.Sprintf("version %q, not this infertop's %q", st.Version, f.cfg.Version))
	case st.Of < 1 || st.Of > agent.MaxAgents || st.Index < 0 || st.Index >= st.Of:
		return sanitize.Text(fmt.Sprintf("index %d of %d is no share", st.Index, st.Of))
	case st.Compare && !f.cfg.Compare:
		return "it compares a canary (its --compare): follow it with --agents-compare"
	case !st.Compare && f.cfg.Compare:
		return "it compares nothing (no --compare): follow it without --agents-compare"
	case st.Canary != f.cfg.Canary:
		return "its state is not its canary's" // the canary's path answered with another side's
	}
	return ""
}

// loadKey is what the shares of one load have alike in their states.
func loadKey(st agent.State) string {
	return fmt.Sprint(st.Of, st.Mode, st.PromptTokens, st.OutputTokens)
}

// judge holds the agents to one load: the one most of them run (a tie:
// the lowest index's). An agent of another is refused by name while it
// is (m.other), and taken again should the most turn to its load.
func judge(members map[string]*member) {
	count := map[string]int{}
	var ref *member
	judged := func(m *member) bool { // a replaced pod's word is its last, not the load's now
		// One waiting for the common start says no knobs yet (its state
		// fills them from its load's snapshot): nothing to judge.
		return m.HasState && m.Status != report.AgentRefused && m.Status != report.AgentReplaced && !m.State.Started.IsZero()
	}
	for _, m := range members {
		if judged(m) {
			count[loadKey(m.State)]++
		}
	}
	for _, m := range members {
		if !judged(m) {
			continue
		}
		k := loadKey(m.State)
		if ref == nil {
			ref = m
			continue
		}
		rk := loadKey(ref.State)
		if count[k] > count[rk] || count[k] == count[rk] && (m.State.Index < ref.State.Index ||
			m.State.Index == ref.State.Index && m.Addr < ref.Addr) {
			ref = m
		}
	}
	for _, m := range members {
		m.other = ""
		if ref == nil || m == ref || !judged(m) {
			continue
		}
		st, r := m.State, ref.State
		switch {
		case st.Of != r.Of:
			m.other = fmt.Sprintf("a share of a load split %d ways, not %d as %s's", st.Of, r.Of, ref.name())
		case loadKey(st) != loadKey(r) && st.ControlSeq == r.ControlSeq: // a control on its way is no other load
			m.other = sanitize.Text(fmt.Sprintf("other knobs (%s loop, prompt %d, output %d; not %s's %s loop, prompt %d, output %d)",
				st.Mode, st.PromptTokens, st.OutputTokens, ref.name(), r.Mode, r.PromptTokens, r.OutputTokens))
		case m.Result != nil && ref.Result != nil:
			if d := merge.Differences(&ref.Result.Result, &m.Result.Result); len(d) > 0 {
				m.other = sanitize.Text(fmt.Sprintf("its result is of another load than %s's: %s", ref.name(), strings.Join(d, "; ")))
			}
		}
	}
}

// replace marks an index's earlier pod replaced once a later one of that
// index answers and it is silent: an Indexed Job's failed index started
// again in a new pod, at a new address, from zero. The earlier pod's
// last result stays in the merge (its requests in flight then counted
// incomplete) and the new one's is added, so its requests are neither
// lost nor counted twice. While both answer, the later is refused by
// name: two agents would be running one share. It says whether a
// status changed.
func (f *Fleet) replace(members map[string]*member, now time.Time) bool {
	byIndex := map[int][]*member{}
	for _, m := range members {
		if m.HasState && m.other == "" && m.Status != report.AgentRefused {
			byIndex[m.State.Index] = append(byIndex[m.State.Index], m)
		}
	}
	changed := false
	for i, ms := range byIndex {
		if len(ms) < 2 {
			continue
		}
		slices.SortFunc(ms, earlier)
		last := ms[len(ms)-1]
		if f.silent(last, now) || last.Status == report.AgentReplaced {
			continue // no new pod answering: the silent are lost in time
		}
		for _, m := range ms[:len(ms)-1] {
			// One agent under two addresses (a dual-stack pod) is followed
			// once, where it answers.
			same := !m.State.Started.IsZero() && m.State.Started.Equal(last.State.Started)
			twice := "the same agent as %s (index %d, the same start), under another address: followed there"
			switch {
			case same && f.silent(m, now):
				m.other = fmt.Sprintf(twice, last.Addr, i)
			case same:
				last.other = fmt.Sprintf(twice, m.Addr, i)
			case m.Status == report.AgentReplaced || m.Status == report.AgentDone:
			case f.silent(m, now):
				m.Status = report.AgentReplaced
				m.Why = fmt.Sprintf("index %d started again at %s: this pod's last result is kept (its requests in flight counted incomplete), the new one's added",
					i, last.Addr)
				m.cancel()
				changed = true
			default:
				last.other = fmt.Sprintf("index %d is run by %s too, which still answers: two agents of one share", i, m.name())
			}
		}
	}
	return changed
}

// startedAgain says st is of a load started again where a, its
// address's agent, had one running or over: another start.
func startedAgain(a Agent, st agent.State) bool {
	// A load started again answers before it starts (its start zero
	// until then): that is another start too.
	return a.HasState && a.Status != report.AgentRefused && !a.State.Started.IsZero() && !st.Started.Equal(a.State.Started)
}

// retire is a, whose load at its address started again, kept as that
// earlier run's last word: done if it was over (its final result), else
// replaced, its last result in the merge with its requests in flight
// counted incomplete. It is polled no more.
func retire(a Agent, index int) Agent {
	if a.Status == report.AgentDone && a.Final {
		a.Why = fmt.Sprintf("its load started again at this address (index %d): this earlier run's final result is kept", index)
		return a
	}
	a.Status = report.AgentReplaced
	a.Why = fmt.Sprintf("its load started again at this address (index %d, a restarted container): this earlier run's last result is kept (its requests in flight counted incomplete), the new one's added", index)
	return a
}

// earlier orders the pods of one index by the start of their loads (one
// not started yet last), then by when they were found.
func earlier(a, b *member) int {
	as, bs := a.State.Started, b.State.Started
	switch {
	case as.IsZero() != bs.IsZero():
		if as.IsZero() {
			return 1
		}
		return -1
	case !as.Equal(bs):
		return as.Compare(bs)
	case !a.Added.Equal(b.Added):
		return a.Added.Compare(b.Added)
	}
	return strings.Compare(a.Addr, b.Addr)
}

// silent says m has stopped answering: lost, or its polls failing for
// two rounds.
func (f *Fleet) silent(m *member, now time.Time) bool {
	return m.Status == report.AgentLost || m.Status == report.AgentUnreachable || m.LastErr != "" && now.Sub(m.LastSeen) >= 2*f.cfg.PollEvery
}

// refuse marks m refused for why, stops polling it and says so.
func (f *Fleet) refuse(m *member, why string) {
	m.Status, m.Why = report.AgentRefused, why
	m.Result, m.Raw = nil, nil
	m.cancel()
	f.cfg.Logf("fleet: refused the agent at %s: %s", m.Addr, why)
}

func (m *member) name() string {
	if m.HasState {
		return fmt.Sprintf("agent %d (%s)", m.State.Index, m.Addr)
	}
	return "the agent at " + m.Addr
}

// age marks m lost or unreachable once it has been silent past the
// bound, and says whether that changed its status.
func (f *Fleet) age(m *member, now time.Time) bool {
	switch m.Status {
	case report.AgentRunning:
		if silent := now.Sub(m.LastSeen); silent >= f.cfg.LostAfter {
			m.Status = report.AgentLost
			m.Why = fmt.Sprintf("silent for %s (last error: %s); its requests are counted up to its last result", silent.Round(time.Second),
				orNone(m.LastErr))
			return true
		}
	case report.AgentWaiting:
		if now.Sub(m.Added) >= f.cfg.LostAfter {
			m.Status = report.AgentUnreachable
			m.Why = "never answered: " + orNone(m.LastErr)
			return true
		}
	case report.AgentLost, report.AgentUnreachable:
		// it answers again: fold made it running
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// view is v with the members' state now.
func (f *Fleet) view(v View, members map[string]*member) View {
	v.Agents = make([]Agent, 0, len(members))
	for _, m := range members {
		a := m.Agent
		if m.other != "" {
			a.Status, a.Why = report.AgentRefused, m.other
		}
		v.Agents = append(v.Agents, a)
	}
	slices.SortFunc(v.Agents, func(a, b Agent) int {
		if a.Index() != b.Index() {
			return a.Index() - b.Index()
		}
		return strings.Compare(a.Addr, b.Addr)
	})
	v.Of, v.Missing = 0, nil
	have := map[int]bool{}
	for _, a := range v.Agents {
		if a.HasState && a.Status != report.AgentRefused {
			if v.Of == 0 {
				v.Of = a.State.Of
			}
			have[a.State.Index] = true
		}
	}
	for i := range v.Of {
		if !have[i] {
			v.Missing = append(v.Missing, i)
		}
	}
	return v
}

// over says every agent is done, lost, unreachable or refused.
func over(as []Agent) bool {
	for _, a := range as {
		if a.Status == report.AgentRunning || a.Status == report.AgentWaiting {
			return false
		}
	}
	return true
}

// doneWhy says how the agents ended, in a line.
func doneWhy(as []Agent) string {
	n := map[string]int{}
	for _, a := range as {
		n[a.Status]++
	}
	var parts []string
	for _, s := range []string{report.AgentDone, report.AgentLost, report.AgentReplaced, report.AgentUnreachable, report.AgentRefused} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return "every agent over: " + strings.Join(parts, ", ")
}

// resolve sends the source's addresses to the loop, now and every
// ResolveEvery (once for a static source).
func (f *Fleet) resolve(ctx context.Context) {
	t := time.NewTicker(f.cfg.ResolveEvery)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
		addrs, err := f.cfg.Source.Resolve(rctx, f.cfg.Resolver)
		cancel()
		if err != nil && ctx.Err() == nil {
			f.cfg.Logf("%v", err)
		}
		select {
		case f.obs <- observation{isAddr: true, addrs: addrs, resErr: err}:
		case <-ctx.Done():
			return
		}
		if f.cfg.Source.Static() {
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// poll polls one agent until ctx ends: /state every PollEvery, /result
// every ResultEvery and as soon as its state says the result is final;
// the latest control whenever its state says it is behind and send
// allows, at once when a new one comes.
func (f *Fleet) poll(ctx context.Context, a Addr, send *atomic.Bool) {
	cfg := f.cfg
	client, base := f.client(a)
	defer client.CloseIdleConnections()
	if cfg.Canary { // its canary's state, result and seconds; no control is sent there
		base += agent.CanaryPrefix
	}
	t := time.NewTicker(cfg.PollEvery)
	defer t.Stop()
	var lastResult time.Time
	var refusedSeq uint64
	secs := secondsPoll{last: -1}
	for {
		o := observation{addr: a.HostPort}
		out, wake := f.control()
		sent := cfg.Now()
		b, _, err := f.get(ctx, client, base+"/state", MaxStateBytes, min(cfg.Timeout, cfg.LostAfter/2))
		o.at = cfg.Now()
		var st agent.State
		if err == nil {
			if jerr := json.Unmarshal(b, &st); jerr != nil {
				err = fmt.Errorf("its /state: %w", jerr)
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
				raw, h, rerr := f.get(ctx, client, base+"/result", report.MaxResultBytes, min(4*cfg.Timeout, cfg.LostAfter/2))
				if rerr == nil {
					in, derr := merge.Decode(fmt.Sprintf("agent %d (%s)", st.Index, a.HostPort), raw)
					if derr == nil {
						// Final by the answer's own word: the run may have
						// ended between the state and the result.
						o.result, o.raw, o.final = &in, raw, h.Get(agent.ResultHeader) == agent.ResultFinal
						o.resultPhase = st.Phase
					} else {
						rerr = derr
					}
				}
				if rerr != nil && ctx.Err() == nil {
					cfg.Logf("fleet: the agent at %s: %v", a.HostPort, rerr)
				}
			}
		}
		select {
		case f.obs <- o:
		case <-ctx.Done():
			return
		}
		select {
		case <-t.C:
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
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
	var after agent.State
	if err := json.Unmarshal(b, &after); err != nil {
		return agent.State{}, fmt.Errorf("control: its answer: %w", err)
	}
	return after, nil
}

var errDenied = errors.New("the token was refused")

// errNotFound is an HTTP 404: a path the agent does not serve.
var errNotFound = errors.New("HTTP 404")

// client is the HTTP client and base URL for a: plain HTTP to a loopback
// address where allowed, else TLS verified against RootCAs.
func (f *Fleet) client(a Addr) (*http.Client, string) {
	host, _, _ := net.SplitHostPort(a.HostPort)
	if ip := net.ParseIP(host); f.cfg.PlainLoopback && ip != nil && ip.IsLoopback() {
		return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}, "http://" + a.HostPort
	}
	name := f.cfg.ServerName
	if name == "" {
		name = a.ServerName
	}
	tc := &tls.Config{RootCAs: f.cfg.RootCAs, ServerName: name, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: tc, MaxIdleConnsPerHost: 1}}, "https://" + a.HostPort
}

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
		return nil, nil, fmt.Errorf("%s: %w", strings.TrimPrefix(req.URL.Path, "/"), unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, nil, errDenied
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
		return nil, nil, fmt.Errorf("%s: past %d bytes", strings.TrimPrefix(req.URL.Path, "/"), limit)
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
