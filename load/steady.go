package load

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// SteadyShare is the share of the target concurrency that the requests
// in flight must reach for the load to be steady (vllm-bench's and
// SGLang's steady-state window, at 95 %).
const SteadyShare = 0.95

// steadyMetrics are the latencies the steady-state window keeps.
var steadyMetrics = [...]Metric{TTFT, TPOT, ITL, E2E}

// SteadyState is the closed loop's steady-state window: from the first
// snapshot at which the requests in flight reached SteadyShare of the
// target concurrency to the last at which they were there, the figures
// of what happened inside it (what came after its last such snapshot,
// the run's drain, is left out). Target 0: no window is sought (the open
// loop, a pause, the warm-up); Reached false: not steady yet. A change of
// the target starts it over: it is the current setting's.
type SteadyState struct {
	Target  int
	Reached bool
	// Start and End are run times; Completed the requests completed
	// between, OutTokens the output tokens that arrived between (as they
	// arrived, a request's corrected by the server's count at its end:
	// smooth where completions come in batches); the rates are over End
	// - Start (zero while it is).
	Start, End              time.Duration
	Completed, OutTokens    int64
	ReqPerSec, OutTokPerSec float64
	// Latency holds TTFT, TPOT, ITL and E2E inside the window (the
	// other metrics' Count is 0).
	Latency [NumMetrics]Dist
}

// steadyAcc finds the steady-state window as the snapshots go by. The
// figures since the last steady snapshot wait in pend: the next steady
// snapshot moves them into the window, and if none comes they were the
// drain's and stay out.
type steadyAcc struct {
	target     int
	reached    bool
	start, end time.Duration
	in, pend   steadyFigures
}

// steadyFigures are the figures of a stretch of the run.
type steadyFigures struct {
	hist                 [len(steadyMetrics)]*hdr.Histogram
	mom                  [len(steadyMetrics)]moments
	completed, outTokens int64
}

func newSteadyFigures() steadyFigures {
	var f steadyFigures
	for i := range f.hist {
		f.hist[i] = newHist()
	}
	return f
}

func (f *steadyFigures) clear() {
	for i := range f.hist {
		f.hist[i].Reset()
		f.mom[i] = moments{}
	}
	f.completed, f.outTokens = 0, 0
}

// moveTo adds f to g and clears f.
func (f *steadyFigures) moveTo(g *steadyFigures) {
	for i := range f.hist {
		if f.mom[i].n > 0 {
			g.hist[i].Merge(f.hist[i])
			g.mom[i].merge(f.mom[i])
		}
	}
	g.completed += f.completed
	g.outTokens += f.outTokens
	f.clear()
}

func newSteadyAcc() *steadyAcc {
	return &steadyAcc{in: newSteadyFigures(), pend: newSteadyFigures()}
}

// record adds one latency of the measured run (its microseconds v).
func (s *steadyAcc) record(m Metric, v int64) {
	for i, sm := range steadyMetrics {
		if sm == m {
			_ = s.pend.hist[i].RecordValue(v) // v is clamped into range
			s.pend.mom[i].add(v)
			return
		}
	}
}

// complete counts one completed request of the measured run.
func (s *steadyAcc) complete() { s.pend.completed++ }

// deliver counts n output tokens of the measured run that arrived (or a
// request's correction of them at its end).
func (s *steadyAcc) deliver(n int64) { s.pend.outTokens += n }

// tick looks at the load at run time now: inflight requests out against
// the target concurrency (0: none sought).
func (s *steadyAcc) tick(now time.Duration, inflight, target int) {
	if target != s.target {
		s.target, s.reached = target, false
		s.in.clear()
		s.pend.clear()
	}
	if target == 0 || float64(inflight) < SteadyShare*float64(target) {
		return
	}
	if !s.reached { // what came before is the ramp's
		s.reached, s.start = true, now
		s.pend.clear()
	} else {
		s.pend.moveTo(&s.in)
	}
	s.end = now
}

// reset forgets everything (a reset of the run's figures).
func (s *steadyAcc) reset() {
	s.target, s.reached = 0, false
	s.in.clear()
	s.pend.clear()
}

// steadyTarget is the concurrency the steady state is sought at in
// phase p (0: none: the open loop, a pause, the warm-up, a phase of a
// generation before the last reset).
func steadyTarget(p *phaseInfo, gen int) int {
	if p == nil || p.gen != gen || p.warmup || p.knobs.Mode != ClosedLoop || p.knobs.Paused {
		return 0
	}
	return p.knobs.Concurrency
}

// figures is the window as it stands.
func (s *steadyAcc) figures() SteadyState {
	out := SteadyState{Target: s.target, Reached: s.reached}
	if !s.reached {
		return out
	}
	out.Start, out.End = s.start, s.end
	out.Completed, out.OutTokens = s.in.completed, s.in.outTokens
	if d := (s.end - s.start).Seconds(); d > 0 {
		out.ReqPerSec, out.OutTokPerSec = float64(out.Completed)/d, float64(out.OutTokens)/d
	}
	for i, m := range steadyMetrics {
		out.Latency[m] = summarise(s.in.hist[i], s.in.mom[i])
	}
	return out
}
