package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/latest"
)

// phaseInfo is a phase as the workers see it: fixed when created, except
// outstanding, the requests started in it and not yet aggregated.
type phaseInfo struct {
	id          int
	gen         int // reset generation
	warmup      bool
	knobs       Knobs
	start       time.Duration
	outstanding atomic.Int64 // started, not yet counted (the backlog's waiting arrivals too)
	incomplete  atomic.Int64 // cancelled by the engine before they finished
	// waiting is the part of outstanding still in the open loop's backlog,
	// never sent yet; dropped counts the arrivals dropped from it unsent
	// (the run ended, or the loop closed): late, and never sent.
	waiting, dropped atomic.Int64
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
	resetAt  time.Duration // the run time of the last reset
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
	endingAt   time.Duration // the run time ending was set: the sending stopped
	why        string
	done       bool
	endAt      time.Duration
	endingCh   chan struct{} // closed when ending is set
	cancelReqs context.CancelFunc

	workers    sync.WaitGroup
	inflight   atomic.Int64
	backingOff atomic.Int64 // closed-loop workers waiting after failures
	unsettled  atomic.Int64 // started and not yet counted (or dropped)
	scheduled  atomic.Int64 // open-loop arrivals scheduled (sent or waiting), since the start or the last reset, the warm-up's left out
	incomplete atomic.Int64 // cancelled before they finished, since the start or the last reset
	dropped    atomic.Int64 // open-loop arrivals dropped from the backlog unsent, since the start or the last reset, the warm-up's left out
	// scheduledAll and droppedAll count the open loop's arrivals and
	// those dropped unsent since the start, the warm-up's too, never
	// reset: the exporter's counters only go up.
	scheduledAll, droppedAll atomic.Int64
	curGen                   atomic.Int64  // gen, for the counters outside mu: a request begun before a reset counts in none of them
	sentAll                  atomic.Int64  // requests sent since the start, never reset: the exporter's counters only go up
	lostAll                  atomic.Int64  // requests cancelled unfinished since the start, never reset
	abandoned                atomic.Int64  // requests given up on in the transport (see AbandonGrace)
	begun                    atomic.Int64  // requests started, against MaxRequests
	reqSeq                   atomic.Uint64 // numbers requests for their length draws
	mix                      *mixer        // deals the models of Config.Mix (nil: none)
	begunAll                 atomic.Int64  // requests started, for the warm-up
	cal                      calibrator

	// resets counts the prefix cache's resets before the phases; hold,
	// when not nil, keeps closed-loop workers from starting a request
	// until it is closed: from a reset's drain to the phase it readies
	// (see ResetCache). hold is guarded by mu.
	resets cacheResets
	hold   chan struct{}
	// settled is sent to (never blocking) when no request is unsettled:
	// a reset's drain waits on it.
	settled chan struct{}

	// The requests in flight, one slot per closed-loop worker (by id) and
	// per open-loop sender, each on the board the aggregator looks at on
	// every tick: a few thousand loads at most, instead of a lock or a
	// channel send on every message. workerSlots and freeSlots (the
	// open-loop slots not in use) are behind mu.
	board       board
	workerSlots []*slot
	freeSlots   []*slot

	// The open loop's senders and backlog, behind mu.
	openInFlight int
	backlog      []arrival
	backlogHead  int
	backlogLen   atomic.Int64
	results      chan *flight
	nudge        chan struct{}

	hub latest.Hub[Snapshot]

	desk historyDesk // History's and Seconds' way to the aggregator

	replay      *replay       // the trace replayed, nil when none
	replayEnded bool          // its last arrival dispatched (behind mu)
	sessions    *sessionStats // multi-turn sessions' figures, nil when none
	bust        *cacheBust    // the prompts' markers (Config.CacheBust), nil when none
}

// New returns an engine ready to Run. It refuses a configuration Validate
// refuses (the error is a *SettingError) and fills in the defaults that
// zero stands for.
func New(cfg Config) (*Engine, error) {
	if cfg.Do == nil {
		return nil, errors.New("no request function")
	}
	if err := cfg.prepareTrace(); err != nil {
		return nil, err
	}
	if err := cfg.prepareSessions(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Arrivals.Kind == "" {
		cfg.Arrivals.Kind = "constant"
	}
	if cfg.Drain == 0 && !cfg.NoDrain {
		cfg.Drain = DefaultDrain
	}
	if len(cfg.Stages) > 0 { // the first stage is where the run starts
		cfg.Stages[0].Apply(&cfg.Knobs)
	}
	// Validate has held the knobs to their limits; clamp only turns an
	// open loop's concurrency of 0 into the 1 a closed loop starts at.
	e := &Engine{
		cfg: cfg, prompts: NewPromptGen(cfg.Seed, cfg.PrefixTokens).withPrefixSeed(cfg.PrefixSeed).withGroups(cfg.PrefixGroups), knobs: cfg.Knobs.clamp(), window: cfg.Window,
		changed: make(chan struct{}), alive: map[int]bool{}, results: make(chan *flight, 4096),
		nudge: make(chan struct{}, 1), endingCh: make(chan struct{}), settled: make(chan struct{}, 1),
	}
	e.replay, e.sessions = newReplay(&e.cfg), newSessionStats(&e.cfg)
	e.mix = newMixer(cfg.Mix, cfg.Seed)
	e.bust = newCacheBust(cfg.CacheBust, cfg.Seed)
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
// A change of a knob, a pause and a resume each start a new phase;
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
	e.holdTraceLocked(&k)
	k.Concurrency = min(k.Concurrency, e.cfg.maxConcurrency()) // a key stops where the open files do
	if k == e.knobs && !newPhase {
		return k
	}
	e.releaseLocked() // the phase a reset readied, or any other change: held no longer
	// Once the run is ending nothing more is sent: a phase begun then
	// would hold no request and end the last one's span where it began.
	if (newPhase || !k.samePhase(e.knobs)) && !e.ending {
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
// requests have started or its time has passed, judged at run time at: an
// admission's (an open loop's arrival: when it was due, so one due in the
// warm-up and sent late after a stall stays the warm-up's) or a
// snapshot's. A warm-up of a time ends at that time exactly, though it is
// seen later: on a machine that stalled there, the measured phase holds
// the stall (its throughput is what the run did).
func (e *Engine) endWarmupLocked(at time.Duration) {
	if !e.phase.warmup || !e.started {
		return
	}
	w := e.cfg.Warmup
	if w.Requests > 0 && e.begunAll.Load() < w.Requests || w.Duration > 0 && at < w.Duration {
		return
	}
	start := e.elapsedLocked()
	if w.Requests == 0 && w.Duration > 0 {
		start = max(w.Duration, e.phase.start) // a knob changed in the warm-up started its phase later
	}
	e.phaseSeq++
	e.phase = &phaseInfo{id: e.phaseSeq, gen: e.gen, knobs: e.knobs, start: start}
}

// Reset forgets every statistic and starts a new phase; the load goes on.
func (e *Engine) Reset() {
	e.mu.Lock()
	e.gen++
	e.curGen.Store(int64(e.gen))
	e.incomplete.Store(0)
	e.scheduled.Store(0)
	e.dropped.Store(0)
	e.phaseSeq++
	e.phase = &phaseInfo{id: e.phaseSeq, gen: e.gen, knobs: e.knobs, start: e.elapsedLocked()}
	e.resetAt = e.phase.start
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
	e.ending, e.why, e.endingAt = true, why, e.elapsedLocked()
	if why == EndDuration && e.cfg.Duration > 0 {
		// No request was admitted past the duration (admitLocked), so the
		// sending stopped there, however late the timer's turn came.
		e.endingAt = min(e.endingAt, e.cfg.Duration)
	}
	close(e.endingCh)
	e.releaseLocked()
	e.dropBacklogLocked() // never sent: not counted
	close(e.changed)
	e.changed = make(chan struct{})
}

// Ending returns a channel closed once the run is ending (a limit reached,
// Finish called): no new request starts after it.
func (e *Engine) Ending() <-chan struct{} { return e.endingCh }

// Started is the instant the run's clock counts from (zero before Run):
// every run time in a snapshot is an offset from it.
func (e *Engine) Started() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.t0
}

// Abandoned returns how many requests the engine gave up on because their
// request function had not returned AbandonGrace after their context
// ended; each is counted incomplete.
func (e *Engine) Abandoned() int64 { return e.abandoned.Load() }

// InFlight returns the requests in flight now.
func (e *Engine) InFlight() int { return int(e.inflight.Load()) }
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
	// Before the lock: the tokenizer's requests must not hold a key or a
	// snapshot, and the run's clock starts after them.
	calNote, tokenized := e.tokenizerNote(ctx)
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return errors.New("load: engine already run")
	}
	reqCtx, cancelReqs := context.WithCancel(ctx)
	defer cancelReqs()
	e.started, e.runCtx, e.t0, e.cancelReqs = true, reqCtx, time.Now(), cancelReqs
	agg := newAggregator(e.t0, e.window)
	agg.goodput, agg.onResult, agg.onProgress = e.cfg.Goodput, e.cfg.OnResult, e.cfg.OnProgress
	agg.flying, agg.calNote = e.board.flying, calNote
	if !e.cfg.NoCalibrate && !tokenized { // the tokenizer's counts are of the text alone: usage's must not mix in
		agg.cal = &e.cal
	}
	e.desk.open()
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
		e.mu.Lock()
		now := time.Since(e.t0) // under the lock: never before the run's end stamped by another goroutine
		e.endWarmupLocked(now)
		if e.ending && !e.done && e.unsettled.Load() == 0 {
			e.done, e.endAt = true, now
		}
		if e.done { // the clock stops where the run ended
			now = e.endAt
		}
		cur, gen, win, knobs, resetAt := e.phase, e.gen, e.window, e.knobs, e.resetAt
		done, why := e.done, e.why
		agg.stopped, agg.stopAt = e.ending, e.endingAt
		e.mu.Unlock()
		if gen != agg.gen { // from the reset's own moment, however late the loop saw it
			agg.reset(resetAt, gen)
		}
		agg.setWindow(win)
		streams := agg.look(now)
		s := agg.snapshot(now, cur, int(e.inflight.Load()))
		s.Backlog, s.BackingOff, s.Streams = int(e.backlogLen.Load()), int(e.backingOff.Load()), streams
		s.OldestInFlight = max(streams.OldestWaiting, streams.OldestGenerating)
		seq++
		s.Seq, s.Target, s.Knobs = seq, e.cfg.Target, knobs
		s.Done, s.DoneWhy, s.Scheduled = done, why, e.scheduled.Load()
		s.SentEver, s.IncompleteEver = e.sentAll.Load(), e.lostAll.Load()
		s.ScheduledEver, s.DroppedEver = e.scheduledAll.Load(), e.droppedAll.Load()
		s.Dropped, s.Run.Dropped = e.dropped.Load(), e.dropped.Load()
		s.CacheResets = e.resets.figures()
		// Every phase's incomplete requests are in the total, even a phase
		// none of whose requests ever came back; the run's leave out the
		// warm-up's.
		s.Incomplete, s.Run.Incomplete = e.incomplete.Load(), e.incomplete.Load()
		for _, p := range s.Phases {
			if p.Warmup {
				s.Run.Incomplete -= p.Incomplete
			}
		}
		s.Limits = Limits{Duration: e.cfg.Duration, Requests: e.cfg.MaxRequests}
		s.PromptLength, s.OutputLength, s.PrefixTokens = e.cfg.PromptLength, e.cfg.OutputLength, e.prompts.pwords
		s.Trace, s.Sessions = e.traceStatus(), e.sessions.figures(int64(gen))
		if e.cfg.Dataset != nil {
			s.Dataset = e.cfg.Dataset.Len()
		}
		e.publish(s)
	}
	// begun starts the aggregator on the engine's generation when a reset
	// came since its last snapshot.
	begun := func() {
		e.mu.Lock()
		gen, at := e.gen, e.resetAt
		e.mu.Unlock()
		if gen != agg.gen {
			agg.reset(at, gen)
		}
	}
	// take counts one finished request; one of a generation the
	// aggregator has not begun (a reset since its last snapshot) begins
	// it first, else the reset would forget it.
	take := func(f *flight) {
		if f.phase.gen != agg.gen {
			begun()
		}
		ph := f.phase
		agg.add(f, time.Since(e.t0))
		ph.outstanding.Add(-1)
		if e.settleOne() == 0 && ending == nil {
			snap() // the last request of an ending run: done now
		}
	}
	// takeWaiting counts the requests whose results wait in the channel,
	// as many as wait now, before a snapshot: select picks among the
	// ready cases at random, and a snapshot that takes longer than a
	// tick (80 ms under the race detector on a busy machine) keeps the
	// ticker always ready, so results were taken at every other turn
	// only, behind the snapshots: a run that had sent its last request
	// waited seconds to count the results already back ("ending:
	// draining" with nothing in flight).
	takeWaiting := func() {
		for range len(e.results) {
			take(<-e.results)
		}
	}
	snap()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case f := <-e.results:
			take(f)
		case <-limit:
			limit = nil
			e.Finish(EndDuration)
		case <-ending:
			ending = nil
			drainTimer.Reset(e.cfg.Drain) // NoDrain: 0, fired at once
			drain = drainTimer.C
			snap()
		case <-drain: // what is still out is cancelled, counted incomplete
			drain = nil
			cancelReqs()
		case <-ticker.C:
			takeWaiting()
			snap()
		case <-e.nudge:
			takeWaiting()
			snap()
		case fn := <-e.desk.req:
			fn(agg)
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
		case f := <-e.results:
			ph := f.phase
			agg.add(f, time.Since(e.t0))
			ph.outstanding.Add(-1)
			e.settleOne()
		default:
			drained = true
		}
	}
	snap()
	e.desk.close(agg)
	e.closeSubscriptions()
	return nil
}
