package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// Load is the load an agent runs, as its board reads it: the newest
// snapshot, and the report of a snapshot (a runner is one).
type Load interface {
	Latest() load.Snapshot
	Report(ctx context.Context, s load.Snapshot) *report.Report
}

// Board is what an agent serves: its share, and its load once it has
// started (behind mu: the handler reads it from its own goroutines).
type Board struct {
	Share   Share
	StartAt *time.Time
	Version string
	// Compare says the agent loads a canary beside its baseline (its
	// --compare): it serves the canary's state, result and seconds too
	// (under CanaryPrefix), set before Handler.
	Compare bool
	seed    uint64

	mu sync.Mutex
	// loads are the load (a comparison's baseline) and a comparison's
	// canary, once started; final their last words' result JSON (nil:
	// not yet), fetched closed once a follower has fetched every one
	// (unfetched counts those not yet).
	loads     [2]Load
	since     time.Time
	final     [2][]byte
	fetched   chan struct{}
	unfetched [2]bool

	// The followers' controls (behind cmu): the whole load's knobs as
	// the last control (or the flags) gave them, the last control's
	// seq, and what waits for the load's start.
	cmu     sync.Mutex
	ctl     load.Controller
	whole   load.Knobs
	applied uint64
	window  time.Duration
	pending bool // the whole changed before the start
	phase   int  // the last phase a control named (Control.Phase)
	finish  bool // a control ended the run (before the start: at it)
}

// Cut makes l this agent's share of the whole load it describes: the
// concurrency (a sessions run's sessions) and the request count split
// with the remainder spread, the rate split, each stage of a walk split
// alike, the prompts of a dataset (its conversations whole) and the
// arrivals of a trace partitioned by the index, the seed derived from
// the index. requestsGiven says a count of requests was asked for (a
// share of none is then refused).
func (b *Board) Cut(l *load.Config, requestsGiven bool) error {
	share := b.Share
	if err := share.cutPrompts(l); err != nil { // before the seed is this agent's: a trace's blocks are the whole's
		return err
	}
	var err error
	if l.Stages, err = share.cutWalk(l.Stages); err != nil {
		return err
	}
	b.whole = l.Knobs // the whole, as the controls change it
	whole := l.Knobs.Concurrency
	l.Knobs.Concurrency = int(share.Count(int64(whole)))
	l.Knobs.Rate = share.Rate(l.Knobs.Rate)
	k := l.Knobs
	if len(l.Stages) > 0 { // the walk starts at its first stage
		l.Stages[0].Apply(&k)
	}
	if k.Concurrency == 0 && k.Rate == 0 && l.Trace == nil { // a replay is the open loop at the rate of its arrivals
		what := "a concurrency of"
		if l.Sessions.Turns > 0 {
			what = "--sessions"
		}
		return fmt.Errorf("agent: %s %d split %d ways leaves agent %d none", what, whole, share.Of, share.Index)
	}
	l.MaxRequests = share.Count(l.MaxRequests)
	if requestsGiven && l.MaxRequests == 0 {
		return fmt.Errorf("agent: --requests split %d ways leaves agent %d none", share.Of, share.Index)
	}
	// The prefixes (--prefix-tokens) are the whole load's, its prompts
	// this share's own.
	if l.PrefixSeed == nil {
		whole := l.Seed
		l.PrefixSeed = &whole
	}
	l.Seed = share.Seed(l.Seed)
	if l.TraceSeed != nil { // each agent's trace ids its own too
		ts := share.Seed(*l.TraceSeed)
		l.TraceSeed = &ts
	}
	b.seed = l.Seed
	return nil
}

// WaitStart waits for the common start (StartAt; none: no wait), or for a
// signal on sigs or the end of ctx, which end the wait with an error.
func (b *Board) WaitStart(ctx context.Context, sigs <-chan os.Signal) error {
	if b.StartAt == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return WaitUntil(ctx, *b.StartAt)
}

// StartedCanary records a comparison's canary, once it runs, before
// Started records its baseline.
func (b *Board) StartedCanary(l Load) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loads[1] = l
}

// Started records the load, once it runs, and ctl, its controller
// (nil: the load takes no control): what controls came before the start
// are applied now.
func (b *Board) Started(l Load, ctl load.Controller) {
	b.mu.Lock()
	b.loads[0], b.since = l, time.Now()
	b.mu.Unlock()
	b.cmu.Lock()
	defer b.cmu.Unlock()
	b.ctl = ctl
	if ctl == nil {
		return
	}
	if b.pending {
		b.setShare(b.whole)
	}
	if b.window > 0 {
		ctl.SetWindow(b.window)
	}
	if f, ok := ctl.(load.Finisher); ok && b.finish {
		f.Finish(FinishWhy)
	}
}

// Handler is the agent's handler over b: its state, its result, its
// sealed seconds and the followers' controls, behind token; logf hears of refusals and of every
// control applied.
func (b *Board) Handler(token []byte, logf func(string, ...any)) *Handler {
	h := NewHandler(token, b.State, b.Result, logf).WithControl(b.Control).WithSeconds(b.Seconds)
	if b.Compare {
		h.WithCanary(func() State { return b.stateOf(1) }, func(ctx context.Context, w io.Writer) (bool, error) { return b.resultOf(ctx, w, 1) },
			func(ctx context.Context, since int64) (*Seconds, error) { return b.secondsOf(ctx, since, 1) })
	}
	return h
}

// Control applies c (POST /control): this share of its whole knobs, its
// window, its reset, once: a control whose seq is not past the last one
// taken is not applied again. Before the start the knobs and the window
// wait for it (a reset then has nothing to forget). said is the change
// in a line ("": none); a control refused is ErrControl.
func (b *Board) Control(c Control) (said string, err error) {
	var whole load.Knobs
	if c.Knobs != nil {
		if whole, err = c.Knobs.Load(); err != nil {
			return "", err
		}
		if err := b.Share.CheckKnobs(whole); err != nil {
			return "", err
		}
	}
	w, err := c.window()
	if err != nil {
		return "", err
	}
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if c.Seq <= b.applied {
		return "", nil
	}
	var parts []string
	// A reset first: the engine's reset begins a phase of its own, and
	// the phase the control names must come after it, under its id.
	if c.ResetSeq > b.applied && b.ctl != nil {
		b.ctl.Reset()
		parts = append(parts, "statistics reset")
	}
	newPhase := c.Phase > b.phase
	if newPhase {
		b.phase = c.Phase
	}
	if c.Knobs != nil && whole != b.whole || newPhase {
		if c.Knobs != nil {
			b.whole = whole
		}
		k := b.Share.Knobs(b.whole)
		if b.ctl != nil {
			k = b.setShare(b.whole)
		} else {
			b.pending = true
		}
		part := fmt.Sprintf("the whole %s; this share %s", knobText(b.whole), knobText(k))
		if newPhase {
			part = fmt.Sprintf("phase %d: %s", c.Phase, part)
		}
		parts = append(parts, part)
	}
	if w > 0 && w != b.window {
		b.window = w
		if b.ctl != nil {
			b.ctl.SetWindow(w)
		}
		parts = append(parts, fmt.Sprintf("window %v", w))
	}
	if c.Finish && !b.finish {
		b.finish = true
		if f, ok := b.ctl.(load.Finisher); ok {
			f.Finish(FinishWhy)
		}
		parts = append(parts, "the run ended")
	}
	b.applied = c.Seq
	said = strings.Join(parts, "; ")
	if said != "" && b.ctl == nil {
		said += " (at the start)"
	}
	return said, nil
}

// setShare sets the load's knobs to this share of whole, in a new phase
// where the controller starts one (every agent's phases then line up,
// its own share changed or not), of the id the last control named where
// one did; b.cmu is held.
func (b *Board) setShare(whole load.Knobs) load.Knobs {
	b.pending = false
	k := b.Share.Knobs(whole)
	set := func(l *load.Knobs) { *l = k }
	if p, ok := b.ctl.(load.Phaser); ok {
		got, _ := p.NewPhaseFrom(b.phase, set)
		return got
	}
	return b.ctl.Update(set)
}

// State is the agent's state now (Handler's GET /state): its load's, a
// comparison's baseline's.
func (b *Board) State() State { return b.stateOf(0) }

// stateOf is the state of load i (1: a comparison's canary).
func (b *Board) stateOf(i int) State {
	b.mu.Lock()
	l, at := b.loads[i], b.since
	final := b.final[i] != nil
	b.mu.Unlock()
	b.cmu.Lock()
	whole, seq, ctl, phase := KnobsOf(b.whole), b.applied, b.ctl, b.phase
	b.cmu.Unlock()
	if l == nil {
		at = time.Time{} // a canary not yet started with its baseline
	}
	st := State{Version: b.Version, Index: b.Share.Index, Of: b.Share.Of, StartAt: b.StartAt, Started: at, Seed: b.seed,
		Now: time.Now(), Final: final, Whole: &whole, ControlSeq: seq, Compare: b.Compare, Canary: i == 1}
	if b.StartAt != nil && !at.IsZero() {
		st.OffsetMS = float64(at.Sub(*b.StartAt)) / 1e6
	}
	if l != nil {
		snap := l.Latest()
		if k, ok := ctl.(load.KnobReader); ok && i == 0 { // the knobs now, not at the last snapshot's tick
			snap.Knobs = k.Knobs()
		}
		st.fill(snap)
	}
	st.Phase = max(st.Phase, phase) // one started since the snapshot
	return st
}

// Result writes the result so far, as the run's JSON will be at its end:
// what a dashboard merges (report/merge) while the agents run (Handler's
// GET /result); final says it is the run's last word (Finish): once
// every side's has been fetched, Linger ends.
func (b *Board) Result(ctx context.Context, w io.Writer) (final bool, err error) {
	return b.resultOf(ctx, w, 0)
}

// resultOf is Result of load i (1: a comparison's canary).
func (b *Board) resultOf(ctx context.Context, w io.Writer, i int) (final bool, err error) {
	b.mu.Lock()
	l, last := b.loads[i], b.final[i]
	if last != nil && b.unfetched[i] {
		b.unfetched[i] = false
		if !b.unfetched[0] && !b.unfetched[1] {
			close(b.fetched)
		}
	}
	b.mu.Unlock()
	if last != nil {
		_, err := w.Write(last)
		return true, err
	}
	if l == nil {
		return false, errors.New("the load has not started")
	}
	return false, l.Report(ctx, l.Latest()).WriteJSON(w)
}

// Finish keeps reps, the run's last word (a comparison's baseline's and
// canary's), as the results /result (and /canary/result) serve from now
// on: the baseline's without its comparison (infertop.compare), each side
// being merged by the followers on its own, and a comparison's result no
// merge's.
func (b *Board) Finish(reps ...*report.Report) {
	var finals [2][]byte
	for i, r := range reps[:min(len(reps), 2)] {
		if r != nil && r.Compare != nil {
			own := *r
			own.Compare = nil
			r = &own
		}
		var buf bytes.Buffer
		if r != nil && r.WriteJSON(&buf) == nil { // a side without one: its result so far stays served
			finals[i] = buf.Bytes()
		}
	}
	if finals[0] == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.final, b.fetched = finals, make(chan struct{})
	b.unfetched = [2]bool{true, finals[1] != nil}
}

// Linger serves the final result until a follower has fetched it, d is
// over or a signal comes on sigs; at once without a final result.
func (b *Board) Linger(d time.Duration, sigs <-chan os.Signal) {
	b.mu.Lock()
	fetched := b.fetched
	b.mu.Unlock()
	if fetched == nil || d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-fetched:
	case <-t.C:
	case <-sigs:
	}
}

// fill takes the counters and knobs of snapshot s.
func (st *State) fill(s load.Snapshot) {
	r := s.Run
	st.Mode, st.Concurrency, st.Rate = s.Knobs.Mode.String(), s.Knobs.Concurrency, s.Knobs.Rate
	st.PromptTokens, st.OutputTokens = s.Knobs.PromptTokens, s.Knobs.OutputTokens
	st.Sent, st.Completed, st.Failed, st.Incomplete, st.InFlight = r.Sent(), r.Completed, r.Failed, r.Incomplete, r.Pending
	st.Streams = StreamsOf(s.Streams)
	st.TTFTP99MS = float64(r.Latency[load.TTFT].P99) / 1e6
	st.Done = s.Done
	st.Scheduled, st.Backlog = s.Scheduled, s.Backlog
	if n := len(s.Phases); n > 0 {
		st.Phase = s.Phases[n-1].ID
	}
}

// LoadTLS is an agent's TLS configuration from a certificate and its key
// (PEM files), nil with neither.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("agent: give --tls-cert and --tls-key together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("agent: the certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// StreamsState is load.Streams in an agent's state.
type StreamsState struct {
	Waiting            int     `json:"waiting"`
	Generating         int     `json:"generating"`
	Stalled            int     `json:"stalled"`
	OldestWaitingMS    float64 `json:"oldest_waiting_ms"`
	OldestGeneratingMS float64 `json:"oldest_generating_ms"`
	LongestStallMS     float64 `json:"longest_stall_ms"`
}

// StreamsOf is s as an agent's state says it.
func StreamsOf(s load.Streams) StreamsState {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return StreamsState{Waiting: s.Waiting, Generating: s.Generating, Stalled: s.Stalled, OldestWaitingMS: ms(s.OldestWaiting),
		OldestGeneratingMS: ms(s.OldestGenerating), LongestStallMS: ms(s.LongestStall)}
}

// Load is the state as load.Streams; ages past a day, or negative, are
// none (an agent's word is untrusted).
func (s StreamsState) Load() load.Streams {
	d := func(ms float64) time.Duration {
		if !(ms > 0 && ms < 24*3600*1000) {
			return 0
		}
		return time.Duration(ms * float64(time.Millisecond))
	}
	n := func(v int) int { return max(v, 0) }
	return load.Streams{Waiting: n(s.Waiting), Generating: n(s.Generating), Stalled: n(s.Stalled), OldestWaiting: d(s.OldestWaitingMS),
		OldestGenerating: d(s.OldestGeneratingMS), LongestStall: d(s.LongestStallMS)}
}
