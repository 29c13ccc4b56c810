package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// seq is one request inside the engine. The scheduler goroutine owns its
// bookkeeping fields; the handler reads generated and done atomically and
// waits on wake.
type seq struct {
	prompt    int  // prompt tokens
	maxTokens int  // output tokens to generate
	embed     bool // an embeddings batch: its one step makes no token
	// pace is the tokens a step of the batch makes for this sequence, at
	// most 1 (an adapter's 1/Slowdown; 0 is 1); credit gathers it until a token.
	pace, credit float64
	prefillLeft  int
	reserved     int // KV tokens reserved
	arrived      time.Time
	queued       atomic.Int64 // ns from arrival to admission; -1 until admitted

	generated atomic.Int64
	done      atomic.Bool
	cancelled atomic.Bool
	wake      chan struct{} // capacity 1: "something changed"
}

func (s *seq) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// scheduler is the continuous-batching loop.
type scheduler struct {
	p      Params
	rng    *rand.Rand
	prefix *prefixCache // the pod's prefix cache, nil when off

	mu      sync.Mutex
	waiting []*seq
	arrive  chan struct{} // capacity 1: wakes an idle loop

	// Owned by the loop goroutine: the batch, and the step in progress
	// (stepping) that ends at next (after it, the end of the last step).
	running  []*seq
	wake     []*seq // emit's reused list of sequences to notify
	kvUsed   int
	next     time.Time
	stepping bool

	// Gauges read by /metrics.
	nRunning, nWaiting, kvUsedG atomic.Int64
	promptTotal, genTotal       atomic.Int64
	steps                       atomic.Int64
}

func newScheduler(p Params) *scheduler {
	return &scheduler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)), arrive: make(chan struct{}, 1),
		prefix: newPrefixCache(p.PrefixCacheBlocks, p.BlockTokens)}
}

func (s *scheduler) submit(q *seq) {
	s.mu.Lock()
	s.waiting = append(s.waiting, q)
	s.nWaiting.Store(int64(len(s.waiting)))
	s.mu.Unlock()
	select {
	case s.arrive <- struct{}{}:
	default:
	}
}

// runPods steps the stable pod and the canary's (nil: none) in the
// caller's goroutine until ctx ends; then every sequence is woken so its
// handler can see the server stopping. Each pod's steps follow one
// another as in a loop of its own (admit, plan, wait out the step, emit);
// the loop sleeps until the earliest step due or an arrival at an idle
// pod. One goroutine for both keeps Run in the caller's goroutine (its
// guard covers the engine); one pod's emit delays the other's by that
// emit's cost, microseconds at a sim's load. With one pod it is the
// single loop it always was: a stepping pod's arrivals are not listened
// for, since admission follows its emit.
func runPods(ctx context.Context, stable, canary *scheduler) {
	pods := []*scheduler{stable}
	if canary != nil {
		pods = append(pods, canary)
	}
	for _, s := range pods {
		defer s.wakeAll()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var due time.Time
		stepping := false
		var arrive [2]chan struct{} // nil for a stepping pod or none
		for i, s := range pods {
			if !s.stepping {
				s.admit()
				if len(s.running) > 0 {
					start := s.next
					if now := time.Now(); now.After(start) {
						start = now // the loop fell behind (or was idle): do not try to catch up
					}
					s.next = start.Add(s.plan())
					s.stepping = true
				}
			}
			if !s.stepping {
				arrive[i] = s.arrive
				continue
			}
			if !stepping || s.next.Before(due) {
				due, stepping = s.next, true
			}
		}
		var tick <-chan time.Time
		if stepping {
			timer.Reset(time.Until(due))
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-arrive[0]:
		case <-arrive[1]:
		case <-tick:
		}
		now := time.Now()
		for _, s := range pods {
			if s.stepping && !now.Before(s.next) {
				s.emit()
				s.stepping = false
			}
		}
	}
}

// admit moves waiting sequences into the batch while slots and KV budget
// allow, in FIFO order (a head that does not fit blocks the rest, as vLLM's
// FCFS policy does).
func (s *scheduler) admit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for ; i < len(s.waiting); i++ {
		q := s.waiting[i]
		if q.cancelled.Load() {
			q.done.Store(true)
			continue
		}
		need := q.prompt + q.maxTokens
		if len(s.running) >= s.p.Slots || s.kvUsed+need > s.p.KVTokens {
			break
		}
		q.reserved = need
		q.queued.Store(int64(time.Since(q.arrived)))
		s.kvUsed += need
		s.running = append(s.running, q)
	}
	if i > 0 {
		n := copy(s.waiting, s.waiting[i:])
		clear(s.waiting[n:])
		s.waiting = s.waiting[:n]
	}
	s.nWaiting.Store(int64(len(s.waiting)))
	s.nRunning.Store(int64(len(s.running)))
	s.kvUsedG.Store(int64(s.kvUsed))
}

// plan decides what the next step does and how long it takes: decode
// tokens first, then prefill chunks in admission order within the budget.
func (s *scheduler) plan() time.Duration {
	budget := s.p.MaxBatchTokens
	decoding, ctxTokens := 0, 0
	for _, q := range s.running {
		if q.prefillLeft == 0 {
			decoding++
			budget--
		}
		ctxTokens += q.prompt - q.prefillLeft + int(q.generated.Load())
	}
	prefillTokens := 0
	for _, q := range s.running {
		if q.prefillLeft == 0 || budget <= 0 {
			continue
		}
		c := min(q.prefillLeft, budget)
		q.prefillLeft -= c
		budget -= c
		prefillTokens += c
	}
	d := float64(s.p.StepBase) + float64(s.p.StepPerSeq)*float64(len(s.running)) +
		float64(s.p.StepPerKTok)*float64(ctxTokens)/1000
	if s.p.PrefillRate > 0 {
		d += float64(prefillTokens) / s.p.PrefillRate * float64(time.Second)
	}
	if s.p.Jitter > 0 {
		d *= math.Max(0.5, 1+s.p.Jitter*s.rng.NormFloat64())
	}
	return max(time.Duration(d), s.p.MinStep)
}

// emit ends a step: every sequence with its prefill complete (those that
// were decoding and those whose last prefill chunk ran in this step) gets
// one token; finished sequences leave the batch.
func (s *scheduler) emit() {
	s.steps.Add(1)
	kept := s.running[:0]
	tokens := 0
	// Handlers are woken only after the counters below are stored, so a
	// client that has its answer never reads a /metrics page without it.
	wake := s.wake[:0]
	for _, q := range s.running {
		if q.cancelled.Load() {
			s.kvUsed -= q.reserved
			q.done.Store(true)
			wake = append(wake, q)
			continue
		}
		if q.prefillLeft == 0 && q.pace > 0 && q.pace < 1 {
			if q.credit += q.pace; q.credit < 1-1e-9 {
				kept = append(kept, q) // an adapter's slower sequence: no token this step
				continue
			}
			q.credit--
		}
		if q.prefillLeft == 0 {
			n := q.generated.Add(1)
			if n == 1 {
				s.promptTotal.Add(int64(q.prompt))
			}
			if !q.embed {
				tokens++
			}
			if int(n) >= q.maxTokens {
				s.kvUsed -= q.reserved
				q.done.Store(true)
				wake = append(wake, q)
				continue
			}
			wake = append(wake, q)
		}
		kept = append(kept, q)
	}
	clear(s.running[len(kept):])
	s.running = kept
	s.genTotal.Add(int64(tokens))
	s.nRunning.Store(int64(len(s.running)))
	s.kvUsedG.Store(int64(s.kvUsed))
	for _, q := range wake {
		q.notify()
	}
	clear(wake)
	s.wake = wake
}

func (s *scheduler) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.waiting {
		q.notify()
	}
	for _, q := range s.running {
		q.notify()
	}
}
