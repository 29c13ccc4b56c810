package load

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/probe"
)

// Windows returns the rolling windows a user can choose, in cycling order.
func Windows() []time.Duration {
	return []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute}
}

// DefaultDrain is how long requests still in flight when a run ends get to
// finish before they are cancelled and counted incomplete (k6's graceful
// stop is 30 s too).
const DefaultDrain = 30 * time.Second

// Why a run ended, as Snapshot.DoneWhy says it.
const (
	EndDuration    = "duration reached"
	EndRequests    = "request limit reached"
	EndStages      = "the last stage ended"
	EndInterrupted = "interrupted"
)

// quickFailPause is the least time a worker spends on a failed request, so
// that an endpoint refusing connections does not spin a core.
const quickFailPause = 10 * time.Millisecond

// Config configures an engine.
type Config struct {
	// Do sends one request and measures it (normally (*probe.Client).Do).
	Do func(context.Context, probe.Request) probe.Result
	// Target describes the endpoint for display.
	Target Target
	// Knobs are the initial knob values.
	Knobs Knobs
	// Tick is the snapshot interval (default 250 ms).
	Tick time.Duration
	// Window is the initial rolling window (default 30 s); any of Windows.
	Window time.Duration
	// Seed makes the prompts repeatable.
	Seed uint64
	// MaxRequests ends the run once this many requests have started (0: no
	// limit); Duration once the run has lasted this long (0: no limit).
	// Either way no new request starts; those in flight get Drain (0:
	// DefaultDrain) to finish, then are cancelled and counted incomplete.
	// The engine is the one place that decides a run is over: its
	// snapshots say so (Done, DoneWhy) and their clock stops there.
	MaxRequests int64
	Duration    time.Duration
	Drain       time.Duration
	// Stages, if set, are walked from the start (see Walk);
	// EndAfterStages ends the run when the last stage is over.
	Stages         []Stage
	EndAfterStages bool
	// Goodput holds the per-request limits a request must meet to count as
	// good (zero limits are not checked).
	Goodput Goodput
	// PromptLength and OutputLength spread the lengths around the knobs
	// (zero: fixed). Draws depend only on Seed and the request's number.
	PromptLength, OutputLength Length
	// NoCalibrate keeps prompts at the asked number of words instead of
	// learning, from the server's reported prompt tokens, how many words
	// make the asked number of tokens.
	NoCalibrate bool
	// PrefixTokens starts every prompt with the same text of about this
	// many tokens (prefix-cache experiments); the rest stays unique.
	PrefixTokens int
	// Dataset, if set, supplies the prompts (the prompt knob and the
	// calibration then do not apply).
	Dataset *Dataset
	// Warmup is the start of the run kept out of the statistics: a phase of
	// its own, marked warm-up, and nothing else.
	Warmup Warmup
	// Arrivals spaces the open loop's requests (default constant).
	Arrivals Arrivals
	// MaxInFlight caps the open loop's requests in flight (0: no cap);
	// arrivals past it wait in a backlog, their wait counted.
	MaxInFlight int
	// OnResult, if set, is called with every finished request (not those
	// infertop cancelled itself), in order, on the aggregator's goroutine:
	// it must not block for long.
	OnResult func(Record)
}

// Warmup is a number of requests or a time (whichever is set).
type Warmup struct {
	Requests int64
	Duration time.Duration
}

// ParseWarmup reads '--warmup N' (requests) or a duration such as '30s'.
func ParseWarmup(s string) (Warmup, error) {
	if s == "" {
		return Warmup{}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return Warmup{Requests: n}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return Warmup{Duration: d}, nil
	}
	return Warmup{}, fmt.Errorf("bad warm-up %q: want a number of requests or a duration", s)
}

func (w Warmup) set() bool { return w.Requests > 0 || w.Duration > 0 }

// Goodput is vLLM's per-request service-level limits: a request is good when
// it succeeded and met every limit given.
type Goodput struct {
	TTFT, TPOT, E2E time.Duration
}

// Set reports whether any limit is given.
func (g Goodput) Set() bool { return g.TTFT > 0 || g.TPOT > 0 || g.E2E > 0 }

// good reports whether r met every limit.
func (g Goodput) good(r *probe.Result) bool {
	if !r.OK() {
		return false
	}
	if g.TTFT > 0 && (!r.HasTTFT || r.TTFT > g.TTFT) {
		return false
	}
	if g.TPOT > 0 {
		if tpot, ok := r.TPOT(); ok && tpot > g.TPOT {
			return false
		}
	}
	return g.E2E <= 0 || r.E2E <= g.E2E
}

// Record is one finished request as OnResult sees it.
type Record struct {
	probe.Result
	// Phase is the phase the request started in; Knobs its settings.
	Phase int
	Knobs Knobs
	// At is the run time the request started; Queue is the open loop's
	// wait from its intended send time to At (zero in the closed loop).
	At, Queue time.Duration
	// PromptTokens is the prompt length asked for.
	PromptTokens int
	// Good is true when the request met the goodput limits; Warmup when it
	// belongs to the warm-up.
	Good, Warmup bool
}

// phaseInfo is a phase as the workers see it: fixed when created, except
// outstanding, the requests started in it and not yet aggregated.
type phaseInfo struct {
	id          int
	gen         int // reset generation
	warmup      bool
	knobs       Knobs
	start       time.Duration
	outstanding atomic.Int64
}

// Engine runs the load. Its knob methods are safe from any goroutine and
// never block on the load or on subscribers.
type Engine struct {
	cfg     Config
	prompts *PromptGen

	mu       sync.Mutex
	knobs    Knobs
	phase    *phaseInfo
	phaseSeq int
	gen      int
	window   time.Duration
	changed  chan struct{} // closed and replaced on every knob change
	alive    map[int]bool  // worker ids running
	runCtx   context.Context
	started  bool
	stopping bool
	t0       time.Time

	// The end of the run, behind mu: ending is set once no new request
	// may start (why says why), done once every request started has been
	// counted; endAt is then the run time the clock stops at.
	ending     bool
	why        string
	done       bool
	endAt      time.Duration
	endingCh   chan struct{} // closed when ending is set
	cancelReqs context.CancelFunc

	workers    sync.WaitGroup
	inflight   atomic.Int64
	unsettled  atomic.Int64 // started and not yet counted (or dropped)
	incomplete atomic.Int64 // cancelled by the engine before they finished
	begun    atomic.Int64  // requests started, against MaxRequests
	reqSeq   atomic.Uint64 // numbers requests for their length draws
	begunAll atomic.Int64  // requests started, for the warm-up
	cal      calibrator

	// The open loop's senders and backlog, behind mu.
	openInFlight int
	backlog      []arrival
	backlogHead  int
	backlogLen   atomic.Int64
	results      chan outcome
	nudge        chan struct{}

	subMu  sync.Mutex
	subs   map[chan Snapshot]struct{}
	closed bool
	latest atomic.Pointer[Snapshot]
}

// New returns an engine ready to Run.
func New(cfg Config) (*Engine, error) {
	if cfg.Do == nil {
		return nil, errors.New("load: no request function")
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 250 * time.Millisecond
	}
	if cfg.Window <= 0 {
		cfg.Window = 30 * time.Second
	}
	if cfg.Arrivals.Kind == "" {
		cfg.Arrivals.Kind = "constant"
	}
	if len(cfg.Stages) > 0 { // the first stage is where the run starts
		cfg.Stages[0].Apply(&cfg.Knobs)
	}
	if cfg.Knobs.Concurrency < 0 {
		return nil, fmt.Errorf("load: concurrency must be positive, got %d", cfg.Knobs.Concurrency)
	}
	e := &Engine{
		cfg: cfg, prompts: NewPromptGen(cfg.Seed, cfg.PrefixTokens), knobs: cfg.Knobs.clamp(), window: cfg.Window,
		changed: make(chan struct{}), alive: map[int]bool{}, results: make(chan outcome, 4096),
		nudge: make(chan struct{}, 1), subs: map[chan Snapshot]struct{}{}, endingCh: make(chan struct{}),
	}
	if e.cfg.Drain <= 0 {
		e.cfg.Drain = DefaultDrain
	}
	e.phase = &phaseInfo{id: 1, knobs: e.knobs, warmup: cfg.Warmup.set()}
	e.phaseSeq = 1
	return e, nil
}

// Knobs returns the current knob values.
func (e *Engine) Knobs() Knobs {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.knobs
}

// Window returns the rolling window in use.
func (e *Engine) Window() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.window
}

// Update changes the knobs through f (values are clamped to their limits).
// A change of concurrency, prompt or output length starts a new phase;
// added workers start at once, removed ones finish their request first.
func (e *Engine) Update(f func(*Knobs)) Knobs { return e.update(f, false) }

// update changes the knobs; newPhase starts a phase even when the setting
// is the same (a stage of a walk).
func (e *Engine) update(f func(*Knobs), newPhase bool) Knobs {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.knobs
	f(&k)
	k = k.clamp()
	if k == e.knobs && !newPhase {
		return k
	}
	if newPhase || !k.samePhase(e.knobs) {
		e.phaseSeq++
		e.phase = &phaseInfo{id: e.phaseSeq, gen: e.gen, knobs: k, start: e.elapsedLocked(), warmup: e.phase.warmup}
	}
	if k.Mode != OpenLoop {
		e.dropBacklogLocked()
	}
	e.knobs = k
	close(e.changed)
	e.changed = make(chan struct{})
	e.spawnLocked()
	e.poke()
	return k
}

// SetConcurrency sets the number of requests in flight.
func (e *Engine) SetConcurrency(n int) Knobs { return e.Update(func(k *Knobs) { k.Concurrency = n }) }

// SetPaused pauses or resumes the load.
func (e *Engine) SetPaused(p bool) Knobs { return e.Update(func(k *Knobs) { k.Paused = p }) }

// SetWindow selects the rolling window.
func (e *Engine) SetWindow(w time.Duration) {
	e.mu.Lock()
	e.window = w
	e.mu.Unlock()
	e.poke()
}

// endWarmupLocked starts the first measured phase once the warm-up's
// requests have started or its time has passed.
func (e *Engine) endWarmupLocked() {
	if !e.phase.warmup || !e.started {
		return
	}
	w := e.cfg.Warmup
	if w.Requests > 0 && e.begunAll.Load() < w.Requests || w.Duration > 0 && e.elapsedLocked() < w.Duration {
		return
	}
	e.phaseSeq++
	e.phase = &phaseInfo{id: e.phaseSeq, gen: e.gen, knobs: e.knobs, start: e.elapsedLocked()}
}

// Reset forgets every statistic and starts a new phase; the load goes on.
func (e *Engine) Reset() {
	e.mu.Lock()
	e.gen++
	e.phaseSeq++
	e.phase = &phaseInfo{id: e.phaseSeq, gen: e.gen, knobs: e.knobs, start: e.elapsedLocked()}
	e.mu.Unlock()
	e.poke()
}

// Finish ends the run for why: no new request starts, those in flight get
// the drain time to finish. It is a no-op once the run is ending.
func (e *Engine) Finish(why string) {
	e.mu.Lock()
	e.finishLocked(why)
	e.mu.Unlock()
	e.poke()
}

// finishLocked marks the run as ending and wakes every waiting worker.
func (e *Engine) finishLocked(why string) {
	if e.ending {
		return
	}
	e.ending, e.why = true, why
	close(e.endingCh)
	e.dropBacklogLocked() // never sent: not counted
	close(e.changed)
	e.changed = make(chan struct{})
}

// Ending returns a channel closed once the run is ending (a limit reached,
// Finish called): no new request starts after it.
func (e *Engine) Ending() <-chan struct{} { return e.endingCh }

// InFlight returns the requests in flight now.
func (e *Engine) InFlight() int { return int(e.inflight.Load()) }

// Latest returns the newest snapshot (zero before the first tick).
func (e *Engine) Latest() Snapshot {
	if s := e.latest.Load(); s != nil {
		return *s
	}
	return Snapshot{}
}

// Subscribe returns a channel that always holds the newest snapshot not yet
// read (a new one replaces an unread one), and a function to unsubscribe.
// The channel is closed when the engine stops.
func (e *Engine) Subscribe() (<-chan Snapshot, func()) {
	ch := make(chan Snapshot, 1)
	e.subMu.Lock()
	defer e.subMu.Unlock()
	if e.closed {
		close(ch)
		return ch, func() {}
	}
	e.subs[ch] = struct{}{}
	if s := e.latest.Load(); s != nil {
		ch <- *s
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			e.subMu.Lock()
			defer e.subMu.Unlock()
			if _, ok := e.subs[ch]; ok {
				delete(e.subs, ch)
				close(ch)
			}
		})
	}
}

func (e *Engine) publish(s Snapshot) {
	e.latest.Store(&s)
	e.subMu.Lock()
	defer e.subMu.Unlock()
	for ch := range e.subs {
		select { // drop the unread one: latest wins
		case <-ch:
		default:
		}
		select {
		case ch <- s:
		default:
		}
	}
}

func (e *Engine) poke() {
	select {
	case e.nudge <- struct{}{}:
	default:
	}
}

func (e *Engine) elapsedLocked() time.Duration {
	if e.t0.IsZero() {
		return 0
	}
	return time.Since(e.t0)
}

// Run puts the load on the endpoint until ctx ends, then cancels what is
// in flight, waits for every worker, publishes a last snapshot and closes
// the subscriptions. It may be called once.
func (e *Engine) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("load: engine already run")
	}
	reqCtx, cancelReqs := context.WithCancel(ctx)
	defer cancelReqs()
	e.started, e.runCtx, e.t0, e.cancelReqs = true, reqCtx, time.Now(), cancelReqs
	agg := newAggregator(e.t0, e.window)
	agg.goodput, agg.onResult = e.cfg.Goodput, e.cfg.OnResult
	if !e.cfg.NoCalibrate {
		agg.cal = &e.cal
	}
	e.spawnLocked()
	e.workers.Add(1)
	go e.dispatch(reqCtx)
	e.mu.Unlock()
	if len(e.cfg.Stages) > 0 {
		e.workers.Add(1)
		go func() {
			defer e.workers.Done()
			defer crash.Recover()
			if e.Walk(reqCtx, e.cfg.Stages) == nil && e.cfg.EndAfterStages {
				e.Finish(EndStages)
			}
		}()
	}
	var limit <-chan time.Time
	if e.cfg.Duration > 0 {
		t := time.NewTimer(e.cfg.Duration)
		defer t.Stop()
		limit = t.C
	}
	var drain <-chan time.Time
	drainTimer := time.NewTimer(time.Hour)
	drainTimer.Stop()
	defer drainTimer.Stop()
	ending := e.endingCh

	ticker := time.NewTicker(e.cfg.Tick)
	defer ticker.Stop()
	var seq uint64
	snap := func() {
		now := time.Since(e.t0)
		e.mu.Lock()
		e.endWarmupLocked()
		if e.ending && !e.done && e.unsettled.Load() == 0 {
			e.done, e.endAt = true, now
		}
		if e.done { // the clock stops where the run ended
			now = e.endAt
		}
		cur, gen, win, knobs := e.phase, e.gen, e.window, e.knobs
		done, why := e.done, e.why
		e.mu.Unlock()
		if gen != agg.gen {
			agg.reset(now, gen)
		}
		agg.setWindow(win)
		s := agg.snapshot(now, cur, int(e.inflight.Load()))
		s.Backlog = int(e.backlogLen.Load())
		seq++
		s.Seq, s.Target, s.Knobs = seq, e.cfg.Target, knobs
		s.Done, s.DoneWhy, s.Incomplete = done, why, e.incomplete.Load()
		s.Limits = Limits{Duration: e.cfg.Duration, Requests: e.cfg.MaxRequests}
		s.PromptLength, s.OutputLength = e.cfg.PromptLength, e.cfg.OutputLength
		if e.cfg.Dataset != nil {
			s.Dataset = e.cfg.Dataset.Len()
		}
		e.publish(s)
	}
	snap()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case o := <-e.results:
			agg.add(o, time.Since(e.t0))
			o.phase.outstanding.Add(-1)
			if e.unsettled.Add(-1) == 0 && ending == nil {
				snap() // the last request of an ending run: done now
			}
		case <-limit:
			limit = nil
			e.Finish(EndDuration)
		case <-ending:
			ending = nil
			drainTimer.Reset(e.cfg.Drain)
			drain = drainTimer.C
			snap()
		case <-drain: // what is still out is cancelled, counted incomplete
			drain = nil
			cancelReqs()
		case <-ticker.C:
			snap()
		case <-e.nudge:
			snap()
		}
	}
	e.mu.Lock()
	e.finishLocked(EndInterrupted) // a no-op when the run was already ending
	e.stopping = true
	e.dropBacklogLocked()
	close(e.changed) // wake a waiting dispatcher and paused workers
	e.changed = make(chan struct{})
	e.mu.Unlock()
	e.workers.Wait()
	for drained := false; !drained; { // results sent before the stop still count
		select {
		case o := <-e.results:
			agg.add(o, time.Since(e.t0))
			o.phase.outstanding.Add(-1)
			e.unsettled.Add(-1)
		default:
			drained = true
		}
	}
	snap()
	e.subMu.Lock()
	e.closed = true
	for ch := range e.subs {
		close(ch)
		delete(e.subs, ch)
	}
	e.subMu.Unlock()
	return nil
}

// spawnLocked starts the workers the concurrency asks for and are not
// running. Workers above the concurrency stop by themselves.
func (e *Engine) spawnLocked() {
	if !e.started || e.stopping || e.ending || e.runCtx.Err() != nil {
		return
	}
	if e.knobs.Mode != ClosedLoop {
		return
	}
	for id := range e.knobs.Concurrency {
		if !e.alive[id] {
			e.alive[id] = true
			e.workers.Add(1)
			go e.worker(e.runCtx, id)
		}
	}
}

// admitLocked counts one more request started, or ends the run when the
// request limit is reached (false: the request must not start).
func (e *Engine) admitLocked() bool {
	if e.ending {
		return false
	}
	if e.cfg.MaxRequests > 0 && e.begun.Add(1) > e.cfg.MaxRequests {
		e.finishLocked(EndRequests)
		return false
	}
	e.unsettled.Add(1)
	return true
}

// next tells worker id what to do: its knobs and phase, a channel closed at
// the next knob change, and false when it must stop.
func (e *Engine) next(id int) (Knobs, *phaseInfo, <-chan struct{}, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id >= e.knobs.Concurrency || e.stopping || e.ending || e.knobs.Mode != ClosedLoop {
		delete(e.alive, id)
		return Knobs{}, nil, nil, false
	}
	if !e.knobs.Paused {
		if !e.admitLocked() {
			delete(e.alive, id)
			return Knobs{}, nil, nil, false
		}
		e.endWarmupLocked()
		e.begunAll.Add(1)
		e.phase.outstanding.Add(1)
	}
	return e.knobs, e.phase, e.changed, true
}

func (e *Engine) worker(ctx context.Context, id int) {
	defer e.workers.Done()
	defer crash.Recover()
	for ctx.Err() == nil {
		k, ph, changed, ok := e.next(id)
		if !ok {
			return
		}
		if k.Paused {
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		start := time.Now()
		succeeded, delivered := e.send(ctx, k, ph, time.Time{})
		if !delivered {
			return
		}
		if !succeeded {
			if wait := quickFailPause - time.Since(start); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
		}
	}
}
