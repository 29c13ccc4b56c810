package load

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// ringSeconds is how many sealed seconds are kept: enough for the longest
// window (5 minutes) and the charts.
const ringSeconds = 300

// counts are the request and token counters kept per second and per phase.
// A second's outTok is the output tokens that arrived in it (the live
// count, see fold); a phase's is its completed requests' (vLLM's
// definition), its delivered every token that arrived for its requests
// and failedTok the part of those whose request then failed.
type counts struct {
	completed, failed, good, outTok, inTok, retried int64
	delivered, failedTok                            int64
	byClass                                         [probe.NumClasses]int64
	// reasonTok and inputs are the phase's reasoning tokens and inputs
	// embedded; estimated and unstreamed its completed requests whose
	// output count was estimated and whose answer came whole though
	// streamed was asked (kept per phase; the seconds leave them at zero).
	reasonTok, inputs, estimated, unstreamed int64
	// judgedOK and judgedBad count the completed requests whose answers
	// were judged valid and invalid (probe.Result.Output).
	judgedOK, judgedBad int64
}

// addJudged counts a completed request's judged answer.
func (c *counts) addJudged(r *probe.Result) {
	switch {
	case !r.Output.Judged:
	case r.Output.Valid:
		c.judgedOK++
	default:
		c.judgedBad++
	}
}

// addKinds counts a successful result's reasoning tokens and inputs, and
// whether its output count was estimated and its answer unstreamed.
func (c *counts) addKinds(r *probe.Result) {
	c.reasonTok += int64(r.ReasoningTokens)
	c.inputs += int64(r.Inputs)
	if r.OutputEstimated {
		c.estimated++
	}
	if r.Unstreamed {
		c.unstreamed++
	}
}

// secSlot is one second of the run, sealed.
type secSlot struct {
	counts
	sec       int64
	valid     bool
	hist      [NumMetrics]sparse
	mom       [NumMetrics]moments
	estimated bool
	inflight  int
	point     Point
	// split and splitMom are the second's TTFT split (splitWindow).
	split    [NumSplitParts]sparse
	splitMom [NumSplitParts]moments
}

// phaseAcc accumulates one phase. Its histograms are released once the
// phase is over and its last request has come back.
type phaseAcc struct {
	counts
	info    *phaseInfo
	end     time.Duration
	hist    [NumMetrics]*hdr.Histogram
	mom     [NumMetrics]moments
	lastEnd time.Duration
	final   *Phase
	// encoded keeps the histograms, encoded, once they are released.
	encoded [NumMetrics][]byte
	// server is where its requests' time went (nil once released).
	server *serverAcc
}

// completionMetrics calls rec with every latency a successful result
// yields at its end: TPOT, E2E, TTFB, and in the open loop the queue time
// and E2E from the intended send. TTFT and the ITLs were taken from its
// stream as they arrived (see fold).
func completionMetrics(r *probe.Result, intended time.Time, rec func(Metric, time.Duration)) {
	if tpot, ok := r.TPOT(); ok {
		rec(TPOT, tpot)
	}
	rec(E2E, r.E2E)
	if r.TTFB > 0 {
		rec(TTFB, r.TTFB)
	}
	if !intended.IsZero() {
		queue := max(r.Start.Sub(intended), 0)
		rec(Queue, queue)
		rec(E2EIntended, queue+r.E2E)
	}
}

// aheadSeconds is how many seconds past the current one the aggregator
// holds tokens for: a message folded a tick after a second ended arrived
// in the next one at most, unless the engine's loop was held up.
const aheadSeconds = 4

// aggregator owns every histogram; only the engine's Run goroutine calls it.
type aggregator struct {
	cal        *calibrator // nil: no calibration
	goodput    Goodput
	onResult   func(Record)
	onProgress func(Progress)
	// flying calls its argument with every request in flight (the
	// engine's board); nil in tests that feed finished requests alone.
	flying func(func(*flight))
	// ahead holds the tokens of the seconds after the current one, which
	// messages folded late in a second arrived in.
	ahead   [aheadSeconds]int64
	gaps    []time.Duration // fold's scratch
	medians []time.Duration // look's scratch
	// calNote says how the prompts were calibrated, when the tokenizer
	// was tried (Snapshot.Calibration).
	calNote string
	// run accumulates everything since the start or the last reset;
	// maxInflight is the most requests seen in flight over it.
	run         *phaseAcc
	maxInflight int

	t0     time.Time // the run's start
	window time.Duration
	gen    int
	// resetAt is the run time of the last reset; seconds before it are out.
	resetAt time.Duration
	// stopped is set once the run sends no more, stopAt the run time it
	// stopped: the end of the last phase's sending.
	stopped bool
	stopAt  time.Duration

	cur     secSlot
	curHist [NumMetrics]*hdr.Histogram
	ring    [ringSeconds]secSlot

	sealed      [NumMetrics]*hdr.Histogram
	sealedMom   [NumMetrics]moments
	sealedFor   int64 // the current second the sealed window was built for; -1: stale
	scratch     [NumMetrics]*hdr.Histogram
	split       splitWindow // the window's TTFT split
	steady      *steadyAcc  // the steady-state window
	phases      []*phaseAcc
	pool        []*hdr.Histogram
	totalOK     int64
	totalFailed int64
	totalOut    int64
	totalClass  [probe.NumClasses]int64
	lastErr     string
	lastErrAt   time.Duration
	errors      errorTable
	overflows   int64
	hist        secHistory // every second of the run, for the reports
	// held is the window's figures as a pause found them once its last
	// request was in (nil: not paused): while nothing is sent they stay
	// as they were, rather than drift as the window slides off measured
	// seconds and onto a pause that is in none of its denominators.
	held *heldWindow
}

// heldWindow is a snapshot's window figures, held through a pause, and
// the window length they are of.
type heldWindow struct {
	window                                         time.Duration
	covered                                        time.Duration
	latency                                        [NumMetrics]Dist
	split                                          [NumSplitParts]Dist
	completed, failed                              int64
	byClass                                        [probe.NumClasses]int64
	estimated                                      bool
	req, outTok, inTok, errPerSec, good, errorRate float64
}

// hold keeps s's window figures (see aggregator.held).
func (h *heldWindow) hold(s *Snapshot, window time.Duration) {
	*h = heldWindow{window: window, covered: s.Covered, latency: s.Latency, split: s.TTFTSplit, completed: s.Completed, failed: s.Failed, byClass: s.ByClass,
		estimated: s.OutputEstimated, req: s.ReqPerSec, outTok: s.OutTokPerSec, inTok: s.InTokPerSec, errPerSec: s.ErrPerSec, good: s.GoodPerSec, errorRate: s.ErrorRate}
}

// apply puts the held window figures in s.
func (h *heldWindow) apply(s *Snapshot) {
	s.Covered, s.Latency, s.Completed, s.Failed, s.ByClass, s.OutputEstimated = h.covered, h.latency, h.completed, h.failed, h.byClass, h.estimated
	s.TTFTSplit = h.split
	s.ReqPerSec, s.OutTokPerSec, s.InTokPerSec, s.ErrPerSec, s.GoodPerSec, s.ErrorRate = h.req, h.outTok, h.inTok, h.errPerSec, h.good, h.errorRate
}

func newAggregator(t0 time.Time, window time.Duration) *aggregator {
	a := &aggregator{t0: t0, window: window, sealedFor: -1, split: newSplitWindow(), steady: newSteadyAcc()}
	for m := range NumMetrics {
		a.curHist[m], a.sealed[m], a.scratch[m] = newHist(), newHist(), newHist()
	}
	a.run = a.newRunAcc(0)
	return a
}

// newRunAcc is the whole-run accumulator, a phase with id 0.
func (a *aggregator) newRunAcc(start time.Duration) *phaseAcc {
	p := &phaseAcc{info: &phaseInfo{start: start}, server: newServerAcc()}
	for m := range NumMetrics {
		p.hist[m] = newHist()
	}
	return p
}

func (a *aggregator) getHist() *hdr.Histogram {
	if n := len(a.pool); n > 0 {
		h := a.pool[n-1]
		a.pool = a.pool[:n-1]
		return h
	}
	return newHist()
}

func (a *aggregator) putHist(h *hdr.Histogram) {
	h.Reset()
	a.pool = append(a.pool, h)
}

// advance seals whole seconds up to now.
func (a *aggregator) advance(now time.Duration) {
	sec := int64(now / time.Second)
	for a.cur.sec < sec {
		a.seal()
	}
}

func (a *aggregator) seal() {
	c := &a.cur
	c.valid = true
	p := Point{Sec: c.sec, Completed: c.completed, Failed: c.failed, OutTokens: c.outTok, InTokens: c.inTok, InFlight: c.inflight}
	// The second's percentiles of each charted metric (zero: none).
	for _, q := range []struct {
		m   Metric
		out []*time.Duration
		at  []float64
	}{
		{TTFT, []*time.Duration{&p.TTFTP50, &p.TTFTP99}, []float64{50, 99}},
		{E2E, []*time.Duration{&p.E2EP50, &p.E2EP95, &p.E2EP99}, []float64{50, 95, 99}},
		{TTFTIntended, []*time.Duration{&p.TTFTIntendedP50, &p.TTFTIntendedP99}, []float64{50, 99}},
		{E2EIntended, []*time.Duration{&p.E2EIntendedP50, &p.E2EIntendedP95, &p.E2EIntendedP99}, []float64{50, 95, 99}},
	} {
		if c.mom[q.m].n == 0 {
			continue
		}
		for i, v := range a.curHist[q.m].ValueAtPercentilesSlice(q.at) {
			*q.out[i] = time.Duration(v) * time.Microsecond
		}
	}
	c.point = p
	a.recordSecond(c)
	for m := range NumMetrics {
		c.hist[m] = sparsify(a.curHist[m])
		a.curHist[m].Reset()
	}
	a.split.seal(c)
	a.ring[c.sec%ringSeconds] = *c
	a.cur = secSlot{sec: c.sec + 1}
	a.cur.outTok = a.ahead[0]
	copy(a.ahead[:], a.ahead[1:])
	a.ahead[aheadSeconds-1] = 0
}

// inWindow reports whether sealed second sec is inside the rolling window.
func (a *aggregator) inWindow(s *secSlot) bool {
	w := int64(a.window / time.Second)
	return s.valid && s.sec < a.cur.sec && s.sec > a.cur.sec-w && s.sec >= int64(a.resetAt/time.Second)
}

// add folds a finished request: what its stream showed since the last
// look (fold), then what only its end tells: its class, E2E, TPOT and
// goodput, its input tokens, and the server's correction of the output
// count. The flight is released after.
func (a *aggregator) add(f *flight, now time.Duration) {
	a.catchUp(now)
	a.fold(f) // its messages since the last look, each in its own second
	defer f.release()
	r := &f.res
	if r.Class == probe.Canceled {
		return
	}
	if r.HasTTFT && !f.first { // a request function that told no Live: its TTFT learnt at its end
		f.first = true
		a.firstMessage(f, r.TTFT)
	}
	if r.HasTTFO && !f.answered { // likewise its TTFO
		f.answered = true
		ph, inRun := a.target(f)
		a.record(TTFO, r.TTFO, ph, inRun)
	}
	var ph *phaseAcc
	end := r.Start.Sub(a.t0) + r.E2E
	if f.phase.gen == a.gen {
		ph = a.phase(f.phase)
		ph.lastEnd = max(ph.lastEnd, end)
	}
	var queue time.Duration // the open loop's: the limits count from the intended send
	if !f.intended.IsZero() {
		queue = max(r.Start.Sub(f.intended), 0)
	}
	good := a.goodput.good(r, queue)
	warm := f.phase.warmup
	if a.onResult != nil {
		rec := Record{Result: *r, PromptTokens: f.prompt, Good: good, At: r.Start.Sub(a.t0), Phase: f.phase.id, Knobs: f.phase.knobs, Warmup: warm, Live: &f.live,
			Turn: f.turn, Session: f.session}
		if !f.intended.IsZero() && !warm {
			rec.Queue = max(r.Start.Sub(f.intended), 0)
		}
		a.onResult(rec)
	}
	if f.phase.gen != a.gen {
		// Begun before the last reset: in the log and the exporter, in no
		// figure since.
		if r.OK() {
			a.correctTokens(f, nil, false)
		}
		return
	}
	run := a.run
	if warm {
		run = nil // the warm-up's requests are in their phase alone
	} else {
		run.lastEnd = max(run.lastEnd, end)
	}
	both := func(fn func(*phaseAcc)) {
		if run != nil {
			fn(run)
		}
		if ph != nil {
			fn(ph)
		}
	}
	both(func(p *phaseAcc) { p.server.record(r) })
	if run != nil { // the window takes what the run does
		a.split.add(&a.cur, r)
	}
	if n := r.Retries(); n > 0 { // sent again (on a new connection, or by the transport): not a failure, but counted
		both(func(p *phaseAcc) { p.retried += n })
	}
	c := &a.cur
	if !r.OK() {
		both(func(p *phaseAcc) { p.failed++; p.byClass[r.Class]++; p.failedTok += f.counted })
		if run == nil {
			return
		}
		c.failed++
		c.byClass[r.Class]++
		a.totalFailed++
		a.totalClass[r.Class]++
		a.lastErr, a.lastErrAt = r.Class.String()+": "+r.Err, now
		a.errors.add(r)
		return
	}
	in := r.InputTokens
	if r.InputEstimated {
		in = f.prompt
	} else if a.cal != nil && run != nil {
		a.cal.observe(f.words, r.InputTokens/max(r.Inputs, 1)) // an embeddings batch: per input
	}
	both(func(p *phaseAcc) {
		p.completed++
		if good {
			p.good++
		}
		p.outTok += int64(r.OutputTokens)
		p.inTok += int64(in)
		p.addKinds(r)
		p.addJudged(r)
	})
	a.correctTokens(f, ph, run != nil)
	if run == nil {
		completionMetrics(r, f.intended, func(m Metric, d time.Duration) { a.record(m, d, ph, false) })
		return
	}
	if good {
		c.good++
	}
	c.completed++
	a.steady.complete()
	c.addJudged(r)
	c.inTok += int64(in)
	c.estimated = c.estimated || r.OutputEstimated
	a.totalOK++
	a.totalOut += int64(r.OutputTokens)
	completionMetrics(r, f.intended, func(m Metric, d time.Duration) { a.record(m, d, ph, true) })
}

// record adds one latency to the window's current second and the run's
// histograms (inRun) and to phase ph's (nil: none).
func (a *aggregator) record(m Metric, d time.Duration, ph *phaseAcc, inRun bool) {
	v, over := us(d)
	if inRun {
		if over {
			a.overflows++
		}
		_ = a.curHist[m].RecordValue(v) // v is clamped into range
		a.cur.mom[m].add(v)
		a.steady.record(m, v)
		_ = a.run.hist[m].RecordValue(v)
		a.run.mom[m].add(v)
	}
	if ph != nil && ph.hist[m] != nil {
		_ = ph.hist[m].RecordValue(v)
		ph.mom[m].add(v)
	}
}

// target is where f's live figures go: its phase's accumulator (nil: a
// phase begun before the last reset) and whether the run's figures and
// the window take them too (not the warm-up's, nor a stale phase's).
func (a *aggregator) target(f *flight) (ph *phaseAcc, inRun bool) {
	if f.phase.gen != a.gen {
		return nil, false
	}
	return a.phase(f.phase), !f.phase.warmup
}

// fold takes what f's stream has shown since the last look: the first
// message (its TTFT, and in the open loop the TTFT from the intended send
// time), each gap after it (ITL), and a token for each output-bearing
// message, counted in the second it arrived. The server's own count
// corrects the tokens when the request ends (correctTokens).
func (a *aggregator) fold(f *flight) {
	n := f.live.Len()
	if n <= f.taken {
		return
	}
	ph, inRun := a.target(f)
	start, _ := f.live.Start()
	gaps := a.gaps[:0]
	var tokens int64
	for i := f.taken; i < n; i++ {
		at, mark := f.live.At(i)
		if !f.first {
			f.first = true
			a.firstMessage(f, at-start)
		} else {
			d := at - f.last
			gaps = append(gaps, d)
			a.record(ITL, d, ph, inRun)
		}
		f.last = at
		if mark.Answer() && !f.answered {
			f.answered = true
			a.record(TTFO, at-start, ph, inRun)
		}
		if mark.Output() {
			tokens++
			if inRun {
				a.creditTokens(secOf(at), 1)
			}
		}
	}
	f.taken = n
	f.counted += tokens
	if ph != nil {
		ph.delivered += tokens
	}
	if inRun {
		a.run.delivered += tokens
		a.steady.deliver(tokens)
	}
	a.gaps = gaps
	if a.onProgress != nil && (len(gaps) > 0 || tokens > 0) {
		a.onProgress(Progress{ITLs: gaps, Tokens: tokens, Warmup: f.phase.warmup})
	}
}

// firstMessage records f's TTFT as it arrives.
func (a *aggregator) firstMessage(f *flight, ttft time.Duration) {
	ph, inRun := a.target(f)
	a.record(TTFT, ttft, ph, inRun)
	if !f.intended.IsZero() {
		start, ok := f.live.Start()
		if !ok {
			start = f.res.Start.Sub(a.t0)
		}
		queue := max(start-f.intended.Sub(a.t0), 0)
		a.record(TTFTIntended, queue+ttft, ph, inRun)
	}
	if a.onProgress != nil {
		a.onProgress(Progress{TTFT: ttft, HasTTFT: true, Warmup: f.phase.warmup})
	}
}

// correctTokens credits the difference between a completed request's
// output count (the server's usage, or its messages) and the tokens its
// messages were credited with as they came, at the request's end: what
// the live count could not know. It may be negative (a server that sent
// more messages than it counts tokens).
func (a *aggregator) correctTokens(f *flight, ph *phaseAcc, inRun bool) {
	d := int64(f.res.OutputTokens) - f.counted
	if d == 0 {
		return
	}
	f.counted += d
	if ph != nil {
		ph.delivered += d
	}
	if inRun {
		a.run.delivered += d
		a.cur.outTok += d
		a.steady.deliver(d)
	}
	if a.onProgress != nil {
		a.onProgress(Progress{Tokens: d, Warmup: f.phase.warmup})
	}
}

// catchUp seals the seconds up to now once every stream's messages up
// to now are in (see Engine.look): a second is sealed with the tokens
// that arrived in it.
func (a *aggregator) catchUp(now time.Duration) {
	if int64(now/time.Second) > a.cur.sec && a.flying != nil {
		a.flying(a.fold)
	}
	a.advance(now)
}

// secOf is the second of the run at run time d (a time before the start
// counts in the first second).
func secOf(d time.Duration) int64 { return max(int64(d/time.Second), 0) }

// creditTokens adds n output tokens to second sec: the current one (or a
// later one, which the clock has not reached: only when the result's clock
// runs ahead of the aggregator's), or a sealed one still in the ring and
// since the last reset; older seconds are gone.
func (a *aggregator) creditTokens(sec, n int64) {
	if n == 0 {
		return
	}
	if sec == a.cur.sec {
		a.cur.outTok += n
		return
	}
	if sec > a.cur.sec { // arrived after the second the clock is in: held for its own
		a.ahead[min(sec-a.cur.sec, aheadSeconds)-1] += n
		return
	}
	if sec <= a.cur.sec-ringSeconds || sec < int64(a.resetAt/time.Second) {
		return
	}
	if s := &a.ring[sec%ringSeconds]; s.valid && s.sec == sec {
		s.outTok += n
	}
}

// phase returns the accumulator of info, creating it (and ending the phase
// before it) on first sight.
func (a *aggregator) phase(info *phaseInfo) *phaseAcc {
	for i := len(a.phases) - 1; i >= 0; i-- {
		if a.phases[i].info == info {
			return a.phases[i]
		}
		if a.phases[i].info.id < info.id {
			break
		}
	}
	p := &phaseAcc{info: info, server: newServerAcc()}
	for m := range NumMetrics {
		p.hist[m] = a.getHist()
	}
	// Keep the list ordered by id; phases arrive nearly in order.
	i := len(a.phases)
	for i > 0 && a.phases[i-1].info.id > info.id {
		i--
	}
	a.phases = append(a.phases, nil)
	copy(a.phases[i+1:], a.phases[i:])
	a.phases[i] = p
	return p
}

// reset forgets every statistic; the run goes on.
func (a *aggregator) reset(now time.Duration, gen int) {
	a.advance(now)
	a.gen = gen
	a.resetAt = now
	a.maxInflight = 0
	for m := range NumMetrics {
		a.curHist[m].Reset()
	}
	a.split.reset()
	a.steady.reset()
	a.cur = secSlot{sec: a.cur.sec}
	a.ahead = [aheadSeconds]int64{}
	for _, p := range a.phases {
		for m := range NumMetrics {
			if p.hist[m] != nil {
				a.putHist(p.hist[m])
			}
		}
	}
	a.phases = nil
	a.held = nil
	a.run = a.newRunAcc(now)
	a.totalOK, a.totalFailed, a.totalOut, a.totalClass = 0, 0, 0, [probe.NumClasses]int64{}
	a.lastErr, a.lastErrAt = "", 0
	a.errors.reset()
	a.sealedFor = -1
	a.hist.reset()
}

func (a *aggregator) setWindow(w time.Duration) {
	if w != a.window {
		a.window, a.sealedFor = w, -1
	}
}

// rebuildSealed merges the window's sealed seconds into the sealed
// histograms, once per second (or after the window changes).
func (a *aggregator) rebuildSealed() {
	if a.sealedFor == a.cur.sec {
		return
	}
	for m := range NumMetrics {
		a.sealed[m].Reset()
		a.sealedMom[m] = moments{}
	}
	a.split.clearSealed()
	for i := range a.ring {
		s := &a.ring[i]
		if !a.inWindow(s) {
			continue
		}
		for m := range NumMetrics {
			s.hist[m].addTo(a.sealed[m])
			a.sealedMom[m].merge(s.mom[m])
		}
		a.split.addSealed(s)
	}
	a.sealedFor = a.cur.sec
}

// snapshot builds the published view at run time now. Phases whose
// requests have all returned are summarised and their histograms freed.
func (a *aggregator) snapshot(now time.Duration, current *phaseInfo, inflight int) Snapshot {
	a.advance(now)
	a.cur.inflight = max(a.cur.inflight, inflight)
	a.maxInflight = max(a.maxInflight, inflight)
	if current != nil && current.gen == a.gen {
		a.phase(current)
	}
	a.rebuildSealed()

	s := Snapshot{Elapsed: now, Window: a.window, InFlight: inflight, MaxInFlight: a.maxInflight, Since: a.resetAt, Calibration: a.calNote}
	s.Phases = a.summarisePhases(now, current)
	// The rates are over the measured time alone: the window's over its
	// part of it, the run's over all of it (see measuredSpans).
	spans := measuredSpans(s.Phases)
	if len(a.phases) == 0 { // no phase known (only a test feeds none): the run is one
		spans = []span{{a.run.info.start, now}}
	}
	winStart := max(time.Duration(a.cur.sec+1)*time.Second-a.window, a.resetAt, 0)
	s.Covered = within(spans, winStart, now)
	for m := range NumMetrics {
		a.scratch[m].Reset()
		a.scratch[m].Merge(a.sealed[m])
		a.scratch[m].Merge(a.curHist[m])
		mom := a.sealedMom[m]
		mom.merge(a.cur.mom[m])
		s.Latency[m] = summarise(a.scratch[m], mom)
	}
	a.split.dists(&a.cur, &s.TTFTSplit)
	if !a.stopped { // the drain is no new setting: the window stays as it was
		a.steady.tick(now, inflight, steadyTarget(current, a.gen))
	}
	s.Steady = a.steady.figures()
	var out, in, good int64
	addCounts := func(c *secSlot) {
		s.Completed += c.completed
		s.Failed += c.failed
		s.Valid += c.judgedOK
		s.Invalid += c.judgedBad
		good += c.good
		out += c.outTok
		in += c.inTok
		s.OutputEstimated = s.OutputEstimated || c.estimated
		for i := range c.byClass {
			s.ByClass[i] += c.byClass[i]
		}
	}
	addCounts(&a.cur)
	first := a.cur.sec - ringSeconds + 1
	for sec := max(first, 0); sec < a.cur.sec; sec++ {
		slot := &a.ring[sec%ringSeconds]
		if slot.valid && slot.sec == sec && slot.sec >= int64(a.resetAt/time.Second) {
			p := slot.point
			p.OutTokens = slot.outTok // tokens keep arriving after the seal
			s.Series = append(s.Series, p)
			if a.inWindow(slot) {
				addCounts(slot)
			}
		}
	}
	s.SetWindowRates(out, in, good)
	// Paused with nothing out: the window as the pause found it.
	switch paused := current != nil && current.knobs.Paused && inflight == 0; {
	case !paused:
		a.held = nil
	case a.held != nil && a.held.window == a.window:
		a.held.apply(&s)
	default:
		a.held = new(heldWindow)
		a.held.hold(&s, a.window)
	}
	s.TotalCompleted, s.TotalFailed, s.TotalByClass, s.TotalOutTokens = a.totalOK, a.totalFailed, a.totalClass, a.totalOut
	s.LastError, s.LastErrorAt = a.lastErr, a.lastErrAt
	s.Errors = a.errors.list()
	s.Run = a.summarisePhase(a.run, now, true)
	s.Run.End = now
	if len(spans) > 0 { // from the first send
		s.Run.Start = spans[0].from
	}
	// The run's setting is the one it started at: its first phase that
	// sent anything, the warm-up left out (or, before any did, its first).
	s.Run.Knobs = firstSetting(s.Phases)
	s.Run.setRates(total(spans))
	s.Run.Sending = 0
	for _, p := range s.Phases { // the run's share of what is still out, and its sending time
		if !p.Warmup {
			s.Run.Pending += p.Pending
			s.Run.Waiting += p.Waiting
			s.Run.Sending += p.Sending
		}
	}
	s.Run.setSentRate()
	return s
}

// firstSetting is the knobs of the first phase but the warm-up that sent
// anything, or of the first but the warm-up when none has yet.
func firstSetting(phases []Phase) Knobs {
	var first *Phase
	for i := range phases {
		switch p := &phases[i]; {
		case p.Warmup:
		case p.Sent() > 0:
			return p.Knobs
		case first == nil:
			first = p
		}
	}
	if first == nil {
		return Knobs{}
	}
	return first.Knobs
}

// summarisePhases summarises every phase, oldest first; a phase over
// whose requests have all come back is summed up for good, its
// histograms encoded and freed.
func (a *aggregator) summarisePhases(now time.Duration, current *phaseInfo) []Phase {
	var out []Phase
	for i, p := range a.phases {
		if i+1 < len(a.phases) {
			p.end = a.phases[i+1].info.start
		}
		isCurrent := p.info == current
		if p.final != nil {
			out = append(out, *p.final)
			continue
		}
		ph := a.summarisePhase(p, now, isCurrent)
		if !isCurrent && p.info.outstanding.Load() == 0 && i+1 < len(a.phases) {
			p.final = &ph
			p.encoded = encodeHists(&p.hist)
			for m := range NumMetrics {
				a.putHist(p.hist[m])
				p.hist[m] = nil
			}
			p.server = nil
		}
		out = append(out, ph)
	}
	return out
}

func (a *aggregator) summarisePhase(p *phaseAcc, now time.Duration, current bool) Phase {
	ph := Phase{
		ID: p.info.id, Knobs: p.info.knobs, Start: p.info.start, Current: current, Warmup: p.info.warmup,
		Completed: p.completed, Failed: p.failed, Good: p.good, ByClass: p.byClass, OutTokens: p.outTok, InTokens: p.inTok,
		DeliveredTokens: p.delivered, FailedOutTokens: p.failedTok, ReasoningTokens: p.reasonTok, Inputs: p.inputs,
		EstimatedOutput: p.estimated, Unstreamed: p.unstreamed, Valid: p.judgedOK, Invalid: p.judgedBad,
		Retried: p.retried, Incomplete: p.info.incomplete.Load(), Dropped: p.info.dropped.Load(),
	}
	// waiting before outstanding (which holds it): an arrival sent between
	// the two reads is pending, not counted twice.
	ph.Waiting = p.info.waiting.Load()
	ph.Pending = max(p.info.outstanding.Load()-ph.Waiting, 0)
	if !current {
		ph.End = p.end
	}
	for m := range NumMetrics {
		if p.hist[m] != nil {
			ph.Latency[m] = summarise(p.hist[m], p.mom[m])
		}
	}
	p.server.fill(&ph)
	// An ended phase lasts to its end or its last completion, whichever
	// is later: the load was on until the end even when the last request
	// came back before it (an open loop at a low rate).
	span := max(p.end, p.lastEnd) - p.info.start
	if current || p.info.outstanding.Load() > 0 {
		span = now - p.info.start
	}
	ph.setRates(span)
	sendEnd := p.end
	if current {
		sendEnd = now
		if a.stopped {
			sendEnd = min(a.stopAt, now)
		}
	}
	if !p.info.knobs.Paused { // a paused phase sends nothing
		ph.Sending = max(sendEnd-p.info.start, 0)
	}
	ph.setSentRate()
	return ph
}

// setSentRate sets the rate of sending over the sending time.
func (p *Phase) setSentRate() {
	p.SentPerSec = 0
	if secs := p.Sending.Seconds(); secs > 0 {
		p.SentPerSec = float64(p.Sent()) / secs
	}
}

// setRates sets the duration and the rates over it.
func (p *Phase) setRates(span time.Duration) {
	p.Duration = max(span, 0)
	p.OutTokPerSec, p.InTokPerSec, p.ReqPerSec, p.GoodPerSec, p.DeliveredPerSec = 0, 0, 0, 0, 0
	if secs := p.Duration.Seconds(); secs > 0 {
		p.OutTokPerSec = float64(p.OutTokens) / secs
		p.DeliveredPerSec = float64(p.DeliveredTokens) / secs
		p.InTokPerSec = float64(p.InTokens) / secs
		p.ReqPerSec = float64(p.Completed) / secs
		p.GoodPerSec = float64(p.Good) / secs
	}
}
