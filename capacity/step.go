package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// stepper runs the steps of one search against one engine.
type stepper struct {
	s     *Search
	eng   Engine
	snaps <-chan load.Snapshot
	// drain is set when the last step over-saturated or, in the open
	// loop, broke: the queue it left would be measured by the next one,
	// which drains it first.
	drain bool
	// started is set once the first step began: before it, the load is
	// whatever the search found (a matrix's last cell, a person's
	// saturated open loop), and a backlog in it is drained the same way.
	started bool
}

// next is the next snapshot, or why there will be none.
func (st *stepper) next(ctx context.Context) (load.Snapshot, error) {
	select {
	case <-ctx.Done():
		return load.Snapshot{}, context.Cause(ctx)
	case <-st.eng.Ending():
		return load.Snapshot{}, ErrRunEnded
	case s, ok := <-st.snaps:
		if !ok {
			return load.Snapshot{}, ErrRunEnded
		}
		return s, nil
	}
}

// nextOf is the next snapshot that has phase id in it, and the phase
// (see phaseOf for newest).
func (st *stepper) nextOf(ctx context.Context, id, newest int) (load.Snapshot, load.Phase, error) {
	for {
		snap, err := st.next(ctx)
		if err != nil {
			return snap, load.Phase{}, err
		}
		ph, ok, err := phaseOf(snap, id, newest)
		if err != nil || ok {
			return snap, ph, err
		}
	}
}

// phaseOf finds phase id in s; ok is false when s predates it. A phase
// after newest (the search's own last) means someone else turned a knob:
// taken over.
func phaseOf(s load.Snapshot, id, newest int) (p load.Phase, ok bool, err error) {
	for i := len(s.Phases) - 1; i >= 0; i-- {
		switch ph := s.Phases[i]; {
		case ph.ID > newest:
			return load.Phase{}, false, ErrTakenOver
		case ph.ID == id:
			return ph, true, nil
		}
	}
	return load.Phase{}, false, nil
}

// sample is the load in flight at one snapshot of a measured phase.
type sample struct {
	at       time.Duration // since the measured phase began
	inFlight int           // in flight plus the open loop's backlog
}

// run holds one step at load l and judges it; good and bad are the
// search's bounds so far, for the progress.
func (st *stepper) run(ctx context.Context, n int, l, good, bad float64) (Step, error) {
	s, h := st.s, st.s.Hold
	prog := Progress{Step: n, Over: s.Over, Load: l, Good: good, Bad: bad, NeedRequests: h.MinRequests}
	tell := func(state string, left, need time.Duration, reqs int64) {
		if s.Progress != nil {
			prog.State, prog.Left, prog.Need, prog.Requests = state, max(left, 0), max(need, 0), reqs
			s.Progress(prog)
		}
	}
	if !st.started {
		st.started = true
		snap, err := st.next(ctx)
		if err != nil {
			return Step{N: n, Load: l}, err
		}
		st.drain = snap.Backlog > 0 // arrivals waiting to be sent: past saturation
	}
	drained := 0
	if st.drain {
		st.drain = false
		id, err := st.drainQueue(ctx, tell)
		if err != nil {
			return Step{N: n, Load: l, DrainPhase: id}, err
		}
		drained = id
	}
	if r, ok := st.eng.(CacheResetter); ok {
		// The step starts cold: a refusal is counted by the engine, and
		// the step goes on warm rather than not at all.
		_ = r.ResetCache(ctx)
	}
	knobs, warm := st.eng.NewPhase(func(k *load.Knobs) { s.set(k, l) })
	step := Step{N: n, Load: l, Knobs: knobs, DrainPhase: drained, WarmupPhase: warm}

	// The warm-up: its least time, and one turnover of what was in
	// flight, so the measured phase starts where the new load settled.
	var startAt time.Duration
	var finished0, turnover int64
	seen := false
	for {
		snap, ph, err := st.nextOf(ctx, warm, warm)
		if err != nil {
			return step, err
		}
		if !seen {
			seen, startAt, finished0 = true, ph.Start, snap.Finished()
			turnover = int64(snap.InFlight + snap.Backlog)
			if knobs.Mode == load.ClosedLoop {
				turnover = max(turnover, int64(knobs.Concurrency))
			}
			step.Start = startAt
		}
		el := snap.Elapsed - startAt
		if el >= h.Warmup && snap.Finished()-finished0 >= turnover || el >= h.MaxTime {
			break
		}
		tell(StateWarmup, h.MaxTime-el, h.Warmup-el, 0)
	}

	_, meas := st.eng.NewPhase(func(*load.Knobs) {})
	step.Phase = meas
	var markAt time.Duration
	var at mark
	var samples []sample
	seen = false
	for {
		snap, ph, err := st.nextOf(ctx, meas, meas)
		if err != nil {
			return step, err
		}
		if !seen {
			seen, markAt = true, ph.Start
			at = mark{scheduled: snap.Scheduled, finished: snap.Finished(), inFlight: snap.InFlight + snap.Backlog}
		}
		el := snap.Elapsed - markAt
		samples = append(samples, sample{el, snap.InFlight + snap.Backlog})
		st.figures(&step, snap, ph, markAt)
		done, final := st.judge(&step, snap, ph, el, samples)
		if done {
			// A verdict more requests could change is judged on every
			// request the phase started, not only on those back first.
			// (Nothing back at all is nothing to wait for.)
			switch {
			case !final && step.Completed+step.Failed+step.Incomplete > 0:
				if err := st.settle(ctx, &step, meas, markAt, at, tell); err != nil {
					return step, err
				}
			case !final:
				st.conclude(&step, snap, ph, at)
			}
			// An open loop's broken step leaves a queue behind (it
			// broke because the queue grew); a closed loop's is its
			// concurrency, which the next warm-up's turnover drains.
			st.drain = step.Saturated || !step.Held && step.Knobs.Mode == load.OpenLoop
			if step.Held {
				tell(StateHeld, 0, 0, step.Completed+step.Failed)
			} else {
				tell(StateBroke, 0, 0, step.Completed+step.Failed)
			}
			return step, nil
		}
		need := h.MinTime - el
		if left := h.MinRequests - (step.Completed + step.Failed); left > 0 && step.ReqPerSec > 0 {
			need = max(need, time.Duration(float64(left)/step.ReqPerSec*float64(time.Second)))
		}
		tell(StateHolding, h.MaxTime-el, min(need, h.MaxTime-el), step.Completed+step.Failed)
	}
}

// figures fills in step's figures from the measured phase ph of snap,
// which began at run time markAt.
func (st *stepper) figures(step *Step, snap load.Snapshot, ph load.Phase, markAt time.Duration) {
	step.Measured = snap.Elapsed - markAt
	step.Completed, step.Failed, step.Incomplete, step.Pending = ph.Completed, ph.Failed, ph.Incomplete, ph.Pending
	step.TTFT, step.TPOT, step.E2E = ph.Latency[load.TTFT], ph.Latency[load.TPOT], ph.Latency[load.E2E]
	step.ErrorRate = 0
	if n := ph.Completed + ph.Failed + ph.Incomplete; n > 0 {
		step.ErrorRate = float64(ph.Failed+ph.Incomplete) / float64(n)
	}
	// The throughput of the load, not of the phase: the phase's own rate
	// counts only requests started in it, low until its first ones come
	// back (a closed loop's first E2E), while the seconds of the measured
	// stretch count every completion at this load's steady state.
	var secs, done int64
	for _, p := range completeSeconds(snap, markAt) {
		secs++
		done += p.Completed
	}
	step.ReqPerSec = ph.ReqPerSec
	if secs > 0 {
		step.ReqPerSec = float64(done) / float64(secs)
	}
	step.ReqKnown, step.PerRequestKnown = secs > 0 || ph.Completed > 0, ph.Completed > 0
	step.OutTokPerSec, step.GoodPerSec = 0, 0
	if ph.Completed > 0 {
		step.OutTokPerSec = step.ReqPerSec * float64(ph.OutTokens) / float64(ph.Completed)
		step.GoodPerSec = step.ReqPerSec * float64(ph.Good) / float64(ph.Completed)
	}
	f := slo.FromPhase(ph)
	f.Incomplete = ph.Incomplete
	f.ReqPerSec, f.OutTokPerSec, f.GoodPerSec = step.ReqPerSec, step.OutTokPerSec, step.GoodPerSec
	if ph.Completed > 0 {
		f.InTokPerSec = step.ReqPerSec * float64(ph.InTokens) / float64(ph.Completed)
	}
	step.Verdicts = slo.CheckAll(st.s.Objectives, f, "step "+strconv.Itoa(step.N))
}

// completeSeconds are the whole seconds of snap's series inside the
// measured stretch that began at markAt.
func completeSeconds(snap load.Snapshot, markAt time.Duration) []load.Point {
	first := int64(math.Ceil(markAt.Seconds()))
	var out []load.Point
	for _, p := range snap.Series {
		if p.Sec >= first && time.Duration(p.Sec+1)*time.Second <= snap.Elapsed {
			out = append(out, p)
		}
	}
	return out
}

// judge decides whether the step is over. A final verdict (over-saturated,
// or a breach already certain) sets Held and Why for good; one that is
// not (the hold is over) sets Why to how it ended and leaves the verdict
// to conclude, once the phase's last requests are in.
func (st *stepper) judge(step *Step, snap load.Snapshot, ph load.Phase, el time.Duration, samples []sample) (done, final bool) {
	s, h := st.s, st.s.Hold
	n := ph.Completed + ph.Failed + ph.Incomplete
	if why, ok := saturated(step, snap, el, samples, h); ok {
		step.Held, step.Saturated, step.Why = false, true, "over-saturated: "+why
		return true, true
	}
	// What the phase will have counted by its end, at the least: a breach
	// that stands even then is certain now. The steady state's rate, not
	// this phase's so far (a closed loop's first completions lag by an
	// E2E, which would understate the end), and every request the phase
	// has in flight, which will count too.
	end := max(ph.Sent(), h.MinRequests)
	if step.ReqPerSec > 0 {
		end = max(end, int64(step.ReqPerSec*h.MinTime.Seconds())+ph.Pending)
	} else if el > 0 {
		end = max(end, int64(float64(n)*h.MinTime.Seconds()/el.Seconds())+ph.Pending)
	}
	for i, o := range s.Objectives {
		if certain(o, step.Verdicts[i], ph, end) {
			step.Held, step.Why = false, "breach certain: "+breached(step.Verdicts)
			return true, true
		}
	}
	held := allHeld(step.Verdicts)
	switch {
	case el >= h.MinTime && n >= h.MinRequests:
		step.Why = "held"
	case el >= h.MinTime && held && n >= min(h.MinRequests, 10) && clearOf(s.Objectives, step.Verdicts, h.ClearMargin):
		step.Why = fmt.Sprintf("held, clear of every objective by %.0f%%", (1-h.ClearMargin)*100)
	case el >= h.MaxTime:
		step.Why = "held (time up)"
	default:
		return false, false
	}
	return true, false
}

// settle closes the measured phase (a new phase at the same load) and
// waits for the requests it started to finish, at most MaxTime, then
// concludes the step on all of them. Judged on the requests back first,
// a step is judged on the quickest: in a closed loop past the server's
// slots, the requests that queued come back a whole request after those
// that did not, so a phase's first dozen can all be quick while a tenth
// of it waits (seen: concurrency 36 held on the default sim's 32 slots on
// its first 12 requests, where 40 broke at 2 s).
func (st *stepper) settle(ctx context.Context, step *Step, meas int, markAt time.Duration, at mark, tell func(string, time.Duration, time.Duration, int64)) error {
	h := st.s.Hold
	measured := step.Measured
	_, tail := st.eng.NewPhase(func(*load.Knobs) {})
	step.TailPhase = tail
	var closedAt time.Duration
	seen := false
	var last load.Snapshot
	var lastPh load.Phase
	for {
		// A snapshot with the tail in it: the measured phase starts no
		// request after that.
		snap, _, err := st.nextOf(ctx, tail, tail)
		if err != nil {
			if errors.Is(err, ErrRunEnded) && seen {
				// The hold was over: judge it on what came back, and
				// let the search keep it.
				step.Measured = measured
				st.conclude(step, last, lastPh, at)
				step.judged = true
			}
			return err
		}
		ph, _, err := phaseOf(snap, meas, tail)
		if err != nil {
			return err
		}
		if !seen {
			seen, closedAt = true, snap.Elapsed
		}
		st.figures(step, snap, ph, markAt)
		last, lastPh = snap, ph
		el := snap.Elapsed - closedAt
		if ph.Pending == 0 || el >= h.MaxTime {
			break
		}
		tell(StateSettling, h.MaxTime-el, 0, ph.Completed+ph.Failed)
	}
	step.Measured = measured
	st.conclude(step, last, lastPh, at)
	return nil
}

// conclude gives a step whose hold is over its verdict, on the measured
// phase's figures: over-saturated when an open loop's completions fell
// behind its arrivals, broken when an objective broke or nothing was
// measured, held otherwise (Why keeps how the hold ended).
func (st *stepper) conclude(step *Step, snap load.Snapshot, ph load.Phase, at mark) {
	if why, ok := fallsBehind(step, snap, at); ok {
		step.Held, step.Saturated, step.Why = false, true, "over-saturated: "+why
		return
	}
	step.Held = allHeld(step.Verdicts)
	switch {
	case ph.Completed+ph.Failed+ph.Incomplete == 0:
		step.Held, step.Why = false, "nothing measured in "+st.s.Hold.MaxTime.String()
	case !step.Held:
		step.Why = "breached: " + breached(step.Verdicts)
	case ph.Pending > 0:
		// The requests not back a MaxTime after the hold are its slowest:
		// held on the others, the step would be held on the quick.
		step.Held = false
		step.Why = fmt.Sprintf("not held: %d of its requests still in flight %s after its hold, the slowest, unjudged", ph.Pending, st.s.Hold.MaxTime)
	}
}

// fallsBehind reports an open loop whose completions fell behind its
// arrivals over the measured stretch (arrivals and finished at its start
// in at): the queue grows by the difference, and held longer the step
// would break. A steady queue wanders too, by about the square root of
// what is in flight; a tenth of the arrivals and three of those are
// allowed.
func fallsBehind(step *Step, snap load.Snapshot, at mark) (string, bool) {
	if step.Knobs.Mode != load.OpenLoop {
		return "", false
	}
	arrived := snap.Scheduled - at.scheduled
	finished := snap.Finished() - at.finished
	growth := float64(arrived - finished)
	if arrived <= 0 || growth <= 0.1*float64(arrived) || growth <= 3*math.Sqrt(float64(at.inFlight)+1)+2 {
		return "", false
	}
	return fmt.Sprintf("%d of %d arrivals finished: the queue grew by %.0f", finished, arrived, growth), true
}

// mark is the engine's counters when a measured phase began.
type mark struct {
	scheduled, finished int64
	inFlight            int
}

// drainQueue pauses the load until what the last step left in flight has
// finished (at most MaxTime), and drops the open loop's backlog (arrivals
// never sent, never counted): a step past saturation leaves a queue the
// next, lower step would measure instead of its own load (seen: four
// steps under the capacity "nothing measured in 15s" after one at 64
// req/s over 23).
func (st *stepper) drainQueue(ctx context.Context, tell func(string, time.Duration, time.Duration, int64)) (_ int, err error) {
	h := st.s.Hold
	// A closed loop paused sends nothing and holds no backlog.
	var before load.Knobs
	_, id := st.eng.NewPhase(func(k *load.Knobs) { before = *k; k.Mode, k.Paused = load.ClosedLoop, true })
	defer func() {
		// A search stopped mid-drain (closed, or its context cancelled)
		// leaves the load as the last step had it, not paused; one taken
		// over is the person's, and an ended run nobody's.
		if err != nil && !errors.Is(err, ErrTakenOver) && !errors.Is(err, ErrRunEnded) {
			st.eng.NewPhase(func(k *load.Knobs) { *k = before })
		}
	}()
	var start time.Duration
	seen := false
	for {
		snap, ph, err := st.nextOf(ctx, id, id)
		if err != nil {
			return id, err
		}
		if !seen {
			seen, start = true, ph.Start
		}
		el := snap.Elapsed - start
		if snap.InFlight+snap.Backlog == 0 || el >= h.MaxTime {
			return id, nil
		}
		tell(StateDraining, h.MaxTime-el, 0, int64(snap.InFlight+snap.Backlog))
	}
}

// breached lists the verdicts that broke: "ttft_p99<=500ms 612ms".
func breached(vs []slo.Verdict) string {
	var out []string
	for _, v := range vs {
		switch {
		case !v.Known:
			out = append(out, v.Expr+" nothing measured")
		case !v.Held:
			out = append(out, v.Expr+" "+v.Format(v.Actual))
		}
	}
	return strings.Join(out, "; ")
}

// quantiles are the percentiles a Dist carries, lowest first, as
// fractions.
var quantiles = []struct {
	q    float64
	pick func(load.Dist) time.Duration
}{
	{0.5, func(d load.Dist) time.Duration { return d.P50 }},
	{0.9, func(d load.Dist) time.Duration { return d.P90 }},
	{0.95, func(d load.Dist) time.Duration { return d.P95 }},
	{0.99, func(d load.Dist) time.Duration { return d.P99 }},
	{0.999, func(d load.Dist) time.Duration { return d.P999 }},
}

// certain reports whether the breach of upper bound o can no longer be
// undone by the requests the step has still to finish (final in all): a
// maximum over its limit, failures already past the error rate of the
// whole, or so many requests over a latency limit that a percentile must
// stay over it.
func certain(o slo.Objective, v slo.Verdict, ph load.Phase, final int64) bool {
	if o.Op != "<" && o.Op != "<=" || !v.Known || v.Held {
		return false
	}
	if o.Metric == "error_rate" { // failures stay failures: over the whole they only thin out
		least := float64(ph.Failed+ph.Incomplete) / float64(final)
		return least > o.Value || o.Op == "<" && least == o.Value
	}
	m, ok := slo.LatencyMetric(o.Metric)
	if !ok {
		return false
	}
	d := ph.Latency[m]
	if o.Stat == "max" {
		return true // a maximum only grows
	}
	q, err := strconv.ParseFloat(strings.TrimPrefix(o.Stat, "p"), 64)
	if !strings.HasPrefix(o.Stat, "p") || err != nil || d.Count < 5 {
		return false
	}
	q /= 100
	limit := time.Duration(o.Value * float64(time.Second))
	for _, p := range quantiles { // the lowest percentile over the limit bounds how many are
		if p.pick(d) > limit {
			over := (1 - p.q) * float64(d.Count)
			return over > (1-q)*float64(final)
		}
	}
	return false
}

// clearOf reports whether every verdict is within margin of its limit.
func clearOf(objs []slo.Objective, vs []slo.Verdict, margin float64) bool {
	if margin <= 0 || margin >= 1 {
		return false
	}
	for i, o := range objs {
		v := vs[i]
		if !v.Known || !v.Held {
			return false
		}
		switch o.Op {
		case "<", "<=":
			if v.Actual > margin*o.Value {
				return false
			}
		default:
			if v.Actual < o.Value/margin {
				return false
			}
		}
	}
	return true
}

// saturated reports an open loop past what the endpoint carries: the
// requests in flight growing across the step while completions stall
// below the rate asked for, and TTFT not falling. A closed loop cannot
// over-saturate (its queue is its concurrency); its breach shows in the
// latencies.
func saturated(step *Step, snap load.Snapshot, el time.Duration, samples []sample, h Hold) (string, bool) {
	if step.Knobs.Mode != load.OpenLoop || el < max(min(h.MinTime, 5*time.Second), 3*time.Second) || len(samples) < 6 {
		return "", false
	}
	third := el / 3
	var first, last []float64
	for _, s := range samples {
		switch {
		case s.at < third:
			first = append(first, float64(s.inFlight))
		case s.at >= el-third:
			last = append(last, float64(s.inFlight))
		}
	}
	if len(first) == 0 || len(last) == 0 {
		return "", false
	}
	f, l := mean(first), mean(last)
	rate := step.Knobs.Rate
	if l < f*1.5+4 || step.ReqPerSec >= 0.9*rate {
		return "", false
	}
	secs := completeSeconds(snap, snap.Elapsed-el)
	if k := len(secs) / 3; k > 0 {
		var a, b []float64
		for _, p := range secs[:k] {
			a = append(a, p.TTFTP50.Seconds())
		}
		for _, p := range secs[len(secs)-k:] {
			b = append(b, p.TTFTP50.Seconds())
		}
		if mean(b) < mean(a) {
			return "", false
		}
	}
	return fmt.Sprintf("in flight %.0f → %.0f while %.1f of %.3g req/s completed", f, l, step.ReqPerSec, rate), true
}

func mean(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// allHeld reports whether every verdict held (none: true).
func allHeld(vs []slo.Verdict) bool {
	for _, v := range vs {
		if !v.Held {
			return false
		}
	}
	return true
}
