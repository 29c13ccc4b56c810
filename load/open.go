package load

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/crash"
)

// Arrivals is how the open loop spaces its requests.
type Arrivals struct {
	// Kind is "constant", "poisson" or "gamma".
	Kind string
	// Burstiness is the gamma distribution's shape (vLLM's burstiness): 1
	// is Poisson, below 1 burstier, above 1 more regular.
	Burstiness float64
}

// ParseArrivals checks an arrival process, as Config.Validate does (a
// *SettingError naming the process or its burstiness).
func ParseArrivals(kind string, burstiness float64) (Arrivals, error) {
	a := Arrivals{Kind: kind, Burstiness: burstiness}
	if err := a.check(); err != nil {
		return Arrivals{}, err
	}
	return a, nil
}

// gap draws the time to the next arrival at rate per second.
func (a Arrivals) gap(rng *rand.Rand, rate float64) time.Duration {
	mean := float64(time.Second) / rate
	switch a.Kind {
	case "poisson":
		return time.Duration(rng.ExpFloat64() * mean)
	case "gamma":
		return time.Duration(gammaRand(rng, a.Burstiness) / a.Burstiness * mean)
	}
	return time.Duration(mean)
}

// gammaRand draws from Gamma(shape, 1) (Marsaglia and Tsang).
func gammaRand(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gammaRand(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// arrival is one open-loop request waiting to start.
type arrival struct {
	intended time.Time
	knobs    Knobs
	phase    *phaseInfo
	item     *TraceEntry // a trace's arrival, nil otherwise
}

// dispatch is the open loop: it schedules arrivals at the rate knob and
// starts each at once, or queues it in the backlog when MaxInFlight
// requests are already out. Arrivals are timed from their intended send
// time, so a loop that falls behind catches up instead of skipping.
func (e *Engine) dispatch(ctx context.Context) {
	defer e.workers.Done()
	defer crash.Recover()
	if e.replay != nil {
		e.runReplay(ctx)
		return
	}
	rng := rand.New(rand.NewPCG(e.cfg.Seed, e.cfg.Seed^0x51ed27))
	var next time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		k, changed, stop := e.dispatching(ctx)
		if stop {
			e.dropOwed(next, func() time.Duration { return e.cfg.Arrivals.gap(rng, k.Rate) })
			return
		}
		if k.Mode != OpenLoop || k.Paused || k.Rate <= 0 {
			next = time.Time{}
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		now := time.Now()
		if next.IsZero() {
			next = now
		}
		if wait := next.Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-changed:
				continue // the rate or mode changed: look again
			case <-ctx.Done():
				return
			}
		}
		if !e.arrive(ctx, next, nil) {
			e.dropOwed(next, func() time.Duration { return e.cfg.Arrivals.gap(rng, k.Rate) })
			return
		}
		next = next.Add(e.cfg.Arrivals.gap(rng, k.Rate))
	}
}

// dropOwed counts the open loop's arrivals from next on that were due
// before the duration but never sent, when the duration ended the run: a
// dispatcher that fell behind (a stalled machine) owed them. Each is
// scheduled and dropped, as the backlog's are at the end (a late
// request, failed in the error rate), so that the figures show the
// client fell behind rather than a schedule that was kept. gap is the
// schedule's next gap.
func (e *Engine) dropOwed(next time.Time, gap func() time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.why != EndDuration || e.cfg.Duration <= 0 || next.IsZero() {
		return
	}
	end := e.t0.Add(e.cfg.Duration)
	for n := 0; next.Before(end) && n < MaxBacklog; n++ {
		ph := e.phase
		ph.dropped.Add(1)
		if !ph.warmup {
			e.scheduled.Add(1)
			e.dropped.Add(1)
		}
		e.scheduledAll.Add(1)
		e.droppedAll.Add(1)
		next = next.Add(gap())
	}
}

// dispatching is what an open loop's dispatcher goes by: the knobs, a
// channel closed at their next change, and whether it must stop.
func (e *Engine) dispatching(ctx context.Context) (k Knobs, changed <-chan struct{}, stop bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.knobs, e.changed, e.stopping || e.ending || ctx.Err() != nil
}

// arrive starts or queues one arrival due at intended (a trace's item, or
// nil); false when the request limit is reached.
func (e *Engine) arrive(ctx context.Context, intended time.Time, item *TraceEntry) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.admitLocked() {
		return false
	}
	e.endWarmupLocked(intended.Sub(e.t0))
	if !e.phase.warmup { // as the sent it is set beside, the warm-up's left out
		e.scheduled.Add(1)
	}
	e.scheduledAll.Add(1)
	e.begunAll.Add(1)
	e.phase.outstanding.Add(1)
	a := arrival{intended: intended, knobs: e.knobs, phase: e.phase, item: item}
	if most := e.maxOpenInFlight(); e.openInFlight >= most {
		a.phase.waiting.Add(1)
		if len(e.backlog)-e.backlogHead >= MaxBacklog {
			// Past the bound the arrival is dropped at once, counted as
			// one dropped at the end is: a schedule far ahead of what
			// the slots send (a trace looped with every arrival at 0)
			// grew the backlog by 1.7 GB in 5 s.
			e.dropLocked(a)
			return true
		}
		e.backlog = append(e.backlog, a)
		e.backlogLen.Store(int64(len(e.backlog) - e.backlogHead))
		return true
	}
	e.openInFlight++
	var sl *slot
	if n := len(e.freeSlots); n > 0 {
		sl, e.freeSlots = e.freeSlots[n-1], e.freeSlots[:n-1]
	} else {
		sl = e.board.add()
	}
	e.workers.Add(1)
	go e.fire(ctx, a, sl)
	return true
}

// maxOpenInFlight is the open loop's cap on its requests in flight:
// MaxInFlight, and never past what the open-file limit allows.
func (e *Engine) maxOpenInFlight() int {
	most := e.cfg.maxConcurrency()
	if e.cfg.MaxInFlight > 0 {
		most = min(most, e.cfg.MaxInFlight)
	} else if e.cfg.OpenFiles == 0 {
		return math.MaxInt // no cap given, none known
	}
	return most
}

// fire sends arrivals one after another: its own, then any waiting in the
// backlog, so the number of senders never passes MaxInFlight. slot is
// where it shows its request in flight, handed back when it stops.
func (e *Engine) fire(ctx context.Context, a arrival, slot *slot) {
	defer e.workers.Done()
	defer crash.Recover()
	for {
		// No back-off here: the open loop keeps its schedule and counts
		// the failures (the result went to the aggregator).
		e.send(ctx, a.knobs, a.phase, a.intended, slot, a.item, nil) //nolint:errcheck // see above

		e.mu.Lock()
		if !e.ending && e.backlogHead < len(e.backlog) {
			// A backlogged arrival is a request starting too: none at or
			// after the duration (the backlog is then dropped, counted).
			e.durationPassedLocked()
		}
		if e.backlogHead == len(e.backlog) || ctx.Err() != nil || e.stopping || e.ending {
			e.openInFlight--
			e.freeSlots = append(e.freeSlots, slot)
			e.mu.Unlock()
			return
		}
		a = e.backlog[e.backlogHead]
		e.backlog[e.backlogHead] = arrival{}
		e.backlogHead++
		if e.backlogHead == len(e.backlog) {
			e.backlog, e.backlogHead = e.backlog[:0], 0
		}
		e.backlogLen.Store(int64(len(e.backlog) - e.backlogHead))
		a.phase.waiting.Add(-1) // sent now: pending, no longer waiting
		e.replaySentLocked(a.intended)
		e.mu.Unlock()
	}
}

// dropBacklog drops the arrivals still waiting (when the loop closes or
// the engine stops): never sent, each is counted dropped, in its phase
// and (when it is of the figures since the last reset, the warm-up left
// out) in the run's, and its phase stops waiting for it. A dropped
// arrival was due and never sent: a late request, which the error rate
// counts as failed.
func (e *Engine) dropBacklogLocked() {
	for _, a := range e.backlog[e.backlogHead:] {
		e.dropLocked(a)
	}
	e.backlog, e.backlogHead = nil, 0
	e.backlogLen.Store(0)
}

// dropLocked counts a waiting arrival dropped unsent (dropBacklogLocked's,
// and one past MaxBacklog's).
func (e *Engine) dropLocked(a arrival) {
	// dropped before waiting, waiting before outstanding: a reader that
	// sees one gone sees it counted in the next.
	a.phase.dropped.Add(1)
	if int64(a.phase.gen) == e.curGen.Load() && !a.phase.warmup {
		e.dropped.Add(1)
	}
	e.droppedAll.Add(1)
	a.phase.waiting.Add(-1)
	a.phase.outstanding.Add(-1)
	e.settleOne()
}

// MaxBacklog bounds the open loop's arrivals waiting for a free slot
// (--max-in-flight): about 25 MB of them (96 bytes each). Past it an arrival is dropped
// at once, and counted so (a late request, failed in the error rate):
// a minute of 4,000 req/s behind still waits.
const MaxBacklog = 1 << 18

// ParseRate reads a rate: a number of requests per second ("inf" is not
// allowed: an open loop needs a schedule).
func ParseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || r < 0 || r > MaxRate || math.IsNaN(r) {
		return 0, fmt.Errorf("bad rate %q: want requests per second, 0..%d", s, MaxRate)
	}
	return r, nil
}
