package load

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/probe"
)

// admitLocked counts one more request started, or ends the run when the
// request limit or the duration is reached (false: the request must not
// start).
func (e *Engine) admitLocked() bool {
	if e.ending {
		return false
	}
	// The duration is checked here too, not only by Run's timer: Run takes
	// the timer in the same select as the results and the snapshots, and on
	// a starved machine its turn came seconds late while the senders went
	// on (4.1 s of sending in a run of 2).
	if e.durationPassedLocked() {
		return false
	}
	if e.cfg.MaxRequests > 0 && e.begun.Add(1) > e.cfg.MaxRequests {
		e.finishLocked(EndRequests)
		return false
	}
	e.unsettled.Add(1)
	return true
}

// durationPassedLocked ends the run once it has lasted its duration, and
// says whether it has: no request may start at or after it.
func (e *Engine) durationPassedLocked() bool {
	if e.cfg.Duration > 0 && e.elapsedLocked() >= e.cfg.Duration {
		e.finishLocked(EndDuration)
		return true
	}
	return false
}

// send runs one request and hands its result to the aggregator; intended
// is zero in the closed loop. It reports whether the request succeeded,
// the wait the server asked for (Retry-After) and whether its result was
// delivered (false once the engine is stopping). sl is the sender's
// slot: it shows the request's flight while it is out; item is a trace's
// arrival or a session's turn (nil for the plain loops); d is the
// sender's own request goroutine (nil: one goroutine for this request).
func (e *Engine) send(ctx context.Context, k Knobs, ph *phaseInfo, intended time.Time, sl *slot, item *TraceEntry, d *doer) (succeeded bool, retryAfter time.Duration, delivered bool) {
	promptLen, outputLen := k.PromptTokens, k.OutputTokens
	n := e.reqSeq.Add(1)
	if e.cfg.PromptLength.varies() || e.cfg.OutputLength.varies() {
		rng := rand.New(rand.NewPCG(e.cfg.Seed^0xa0761d6478bd642f, n))
		promptLen = e.cfg.PromptLength.sample(rng, k.PromptTokens, MaxPromptTokens)
		outputLen = e.cfg.OutputLength.sample(rng, k.OutputTokens, MaxOutputTokens)
	}
	words := promptLen
	var req probe.Request
	if item != nil && item.turn != nil { // a session's turn: its context so far
		req, words, promptLen = item.turn.request(), 0, item.Input
	} else if item != nil {
		req, words, promptLen, outputLen = e.traceRequest(item, k)
	} else if e.cfg.Dataset != nil {
		req = e.cfg.Dataset.take()
		words, promptLen = 0, len(strings.Fields(req.Prompt))
		for _, m := range req.Messages {
			promptLen += len(strings.Fields(m.Content))
		}
	} else {
		if !e.cfg.NoCalibrate {
			words = e.cal.words(promptLen, e.promptLimit(outputLen))
		}
		req.Prompt = e.prompts.Next(words)
		words = e.prompts.words(words) // what the calibration learns from
		promptLen = max(promptLen, e.prompts.pwords+1)
	}
	if e.bust != nil && (item == nil || item.turn == nil) { // a session marks its first turn (conversation.next)
		req = e.bust.mark(req, n)
	}
	req.MaxTokens = outputLen
	if e.mix != nil {
		req.Model = e.mix.pick(n - 1)
	}
	if e.cfg.TraceSeed != nil {
		req.Trace = traceOf(*e.cfg.TraceSeed, n)
	}
	f := sl.take(e.t0)
	f.phase, f.intended, f.prompt, f.words = ph, intended, promptLen, words
	f.turn, f.session = 0, 0
	if item != nil && item.turn != nil {
		f.turn = item.turn.turn
	}
	req.Live = &f.live
	e.inflight.Add(1)
	e.sentAll.Add(1)
	f.start = time.Since(e.t0)
	sl.cur.Store(f)
	res, returned := e.do(ctx, req, d)
	sl.cur.Store(nil)
	e.inflight.Add(-1)
	// A flight not handed to the aggregator is never reused: the
	// aggregator may have read it, and an abandoned request's goroutine
	// may still write to it.
	if !returned || res.Class == probe.Canceled || ctx.Err() != nil {
		e.dropUnfinished(ph)
		return false, 0, false
	}
	f.res = res
	if item != nil && item.turn != nil { // the session's context grows by the answer
		f.session = item.turn.done(&res, promptLen)
	}
	select {
	case e.results <- f:
	case <-ctx.Done():
		e.dropUnfinished(ph)
		return false, 0, false
	}
	return res.OK(), res.RetryAfter, true
}

// promptLimit is the most prompt tokens a request of outputLen output
// tokens may have within the server's context (0: not known).
func (e *Engine) promptLimit(outputLen int) int {
	if e.cfg.MaxContext <= 0 {
		return 0
	}
	return max(e.cfg.MaxContext-outputLen, 1)
}

// AbandonGrace is how long a request may go on after its context ended
// before its sender gives up on it. A request function is meant to return
// soon after its context ends, but an HTTP transport can be stuck past any
// context (Go's bundled HTTP/2 client deadlocked on a WINDOW_UPDATE that
// overflowed its window): a worker waiting on it for good would keep the
// run from its end and its reports, the drain and a second signal alike.
const AbandonGrace = time.Second

// do runs the request function on a goroutine other than its sender's,
// so that the sender can give up on it AbandonGrace after ctx ends:
// returned is false then, and the goroutine is left to end by itself, if
// it ever does (it holds no lock of the engine's and touches nothing of
// it). The goroutine is d's, kept from one request to the next (nil: one
// started for this request alone): a goroutine started per request grew
// its stack again on every request, a few percent of the client's time at
// a thousand streams.
func (e *Engine) do(ctx context.Context, req probe.Request, d *doer) (res probe.Result, returned bool) {
	var done chan probe.Result
	if d != nil {
		d.jobs <- job{ctx, req}
		d.busy = true
		defer func() { d.busy = !returned }()
		done = d.done
	} else {
		done = make(chan probe.Result, 1) // buffered: an abandoned request's send never blocks
		go func() {
			defer crash.Recover()
			done <- e.cfg.Do(ctx, req)
		}()
	}
	select {
	case res = <-done:
		return res, true
	case <-ctx.Done():
	}
	t := time.NewTimer(AbandonGrace)
	defer t.Stop()
	select {
	case res = <-done:
		return res, true
	case <-t.C:
		e.abandoned.Add(1)
		return probe.Result{}, false
	}
}

// doer is one sender's request goroutine: it runs the sender's requests
// one at a time, each handed over by do. Its sender owns it and stops it
// (stop) when it stops; a request abandoned by do is left to it, and it
// ends once that request returns.
type doer struct {
	jobs   chan job
	done   chan probe.Result // buffered: an abandoned request's send never blocks
	exited chan struct{}     // closed when the goroutine ends
	busy   bool              // the sender's: a request was abandoned to it
}

// job is one request for a doer.
type job struct {
	ctx context.Context
	req probe.Request
}

// newDoer starts a request goroutine for a sender.
func (e *Engine) newDoer() *doer {
	d := &doer{jobs: make(chan job), done: make(chan probe.Result, 1), exited: make(chan struct{})}
	go func() {
		defer close(d.exited)
		defer crash.Recover()
		for j := range d.jobs {
			d.done <- e.cfg.Do(j.ctx, j.req)
		}
	}()
	return d
}

// stop ends d's goroutine, and waits for it unless a request was
// abandoned to it (which it ends with, if ever).
func (d *doer) stop() {
	close(d.jobs)
	if !d.busy {
		<-d.exited
	}
}

// dropUnfinished counts a request the engine cancelled before it finished
// (the drain ran out, or the engine stopped) as incomplete.
func (e *Engine) dropUnfinished(ph *phaseInfo) {
	// Before outstanding: a phase is summed up for good once nothing is
	// outstanding. One begun before a reset is in no figure since.
	ph.incomplete.Add(1)
	if int64(ph.gen) == e.curGen.Load() {
		e.incomplete.Add(1)
	}
	e.lostAll.Add(1)
	ph.outstanding.Add(-1)
	e.settleOne()
	e.poke()
}
