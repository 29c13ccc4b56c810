package load

import (
	"time"

	"github.com/infertop/infertop/probe"
)

// Metric names a latency distribution the engine keeps.
type Metric int

// The latency metrics, defined in DESIGN.md.
const (
	TTFT Metric = iota
	TPOT
	ITL
	E2E
	TTFB
	// Queue is the open loop's client queue time: from the intended send
	// time to the actual start, when every slot was busy.
	Queue
	// TTFTIntended and E2EIntended are TTFT and E2E counted from the
	// intended send time (open loop): the coordinated-omission-safe figures.
	TTFTIntended
	E2EIntended
	// TTFO is the time to the first token of the answer, after any
	// reasoning (AIPerf's time to first output); TTFT is the first token
	// of either kind.
	TTFO
	NumMetrics
)

var metricNames = [NumMetrics]string{"TTFT", "TPOT", "ITL", "E2E", "TTFB", "queue", "TTFT*", "E2E*", "TTFO"}

// String is the metric's display name.
func (m Metric) String() string { return metricNames[m] }

// Target says what is being measured, for display.
type Target struct {
	URL   string // credentials removed
	Model string
	API   string
	// Sim is true when the target is infertop's embedded simulated endpoint.
	Sim bool
}

// Snapshot is the engine's state at one tick: plain values and slices that
// belong to the snapshot alone, safe to keep and read from any goroutine.
type Snapshot struct {
	// Seq counts snapshots from 1; Elapsed is the run time.
	Seq     uint64
	Elapsed time.Duration
	Target  Target
	Knobs   Knobs
	// InFlight is requests sent and not yet finished; Backlog is open-loop
	// arrivals waiting for a free slot (MaxInFlight).
	InFlight, Backlog int
	// MaxInFlight is the most requests seen in flight (at a snapshot)
	// since the start or the last reset.
	MaxInFlight int
	// BackingOff is the closed-loop workers waiting now before their next
	// request because their last ones failed in a row (or the server asked
	// them to wait with Retry-After): the load is below the concurrency
	// knob, on purpose.
	BackingOff int
	// OldestInFlight is the age of the oldest request in flight (0: none):
	// a hung endpoint shows as a growing number, not as silence. In the
	// open loop it counts from the actual send, not the intended one.
	OldestInFlight time.Duration
	// Streams sorts the requests in flight into those waiting for their
	// first message and those generating, with the oldest of each, and
	// counts the stalled: generating, and silent past StallAfter.
	Streams Streams
	// PromptLength and OutputLength are the length distributions around the
	// knobs; Dataset is the number of prompts in the dataset in use (0: the
	// prompts are synthesised and the prompt knob applies).
	PromptLength, OutputLength Length
	Dataset                    int
	// Trace is where a trace replay is (the zero value: none).
	Trace TraceStatus
	// Sessions are the multi-turn sessions' figures, turn by turn (the
	// zero value: none).
	Sessions SessionFigures
	// PrefixTokens is the shared prefix every prompt starts with (0:
	// none); a prompt shorter than it grows to hold it.
	PrefixTokens int
	// Window is the rolling window selected; Covered how much of it holds
	// data (less than Window early in a run, after the warm-up or a
	// reset): the window's rates are over it.
	Window, Covered time.Duration
	// Latency holds the window's distribution of each metric.
	Latency [NumMetrics]Dist
	// TTFTSplit is the window's client TTFT split by where it went (as
	// Phase.TTFTSplit, by SplitConnection...SplitGap), of the requests
	// whose server gave its timings (--server-timings); Count 0: none.
	TTFTSplit [NumSplitParts]Dist
	// Steady is the closed loop's steady-state window (SteadyState):
	// whether the load has been steady yet, and its figures.
	Steady SteadyState
	// Rates over the window, per second. GoodPerSec counts requests that
	// met every goodput limit. OutTokPerSec counts the tokens that arrived
	// in the window (see Point.OutTokens), as they arrived, those of
	// requests that then failed too (they were delivered). InTokPerSec is
	// known from the server's usage at the end of a request only.
	ReqPerSec, OutTokPerSec, InTokPerSec, ErrPerSec, GoodPerSec float64
	// Completed and Failed are counts in the window; ErrorRate is
	// Failed/(Completed+Failed); ByClass counts failures by class.
	Completed, Failed int64
	ErrorRate         float64
	ByClass           [probe.NumClasses]int64
	// Valid and Invalid count the window's completed requests whose
	// answers were judged (structured output, tools), by the verdict.
	Valid, Invalid int64
	// Totals since the start or the last reset.
	TotalCompleted, TotalFailed int64
	TotalByClass                [probe.NumClasses]int64
	TotalOutTokens              int64
	// OutputEstimated is true when some output counts in the window were
	// counted from messages because the server reported no usage.
	OutputEstimated bool
	// LastError is the newest failure's message (redacted, short), and
	// LastErrorAt the run time it happened.
	LastError   string
	LastErrorAt time.Duration
	// Errors counts the failures since the start or the last reset (the
	// warm-up's left out, as from the totals) by class, status and
	// message, most frequent first; the counts sum to TotalFailed. Past
	// 64 distinct ones, the rest of a class count under OtherErrors.
	Errors []ErrorCount
	// Series holds one Point per whole second, oldest first, for charts.
	Series []Point
	// Phases lists every phase, oldest first.
	Phases []Phase
	// Run is the whole run since the start or the last reset, as one phase
	// (ID 0), with its full distributions; it starts where the first
	// measured phase does (after the warm-up).
	Run Phase
	// Limits are the run's limits (zero: none), for a countdown.
	Limits Limits
	// DoneWhy says why the run is ending (empty while it is not): no new
	// request starts. Done is true once every request started has been
	// counted; Elapsed then stays at the time the last one finished.
	// Incomplete counts requests the engine cancelled before they
	// finished (the drain ran out, or the engine stopped).
	Done       bool
	DoneWhy    string
	Incomplete int64
	// Scheduled counts the open loop's arrivals scheduled since the start
	// or the last reset, the warm-up's left out (as from Run.Sent): sent,
	// waiting in the backlog, or dropped from it unsent (Dropped, as
	// Run.Dropped) when the run ended or the loop closed.
	Scheduled, Dropped int64
	// Since is the run time the figures start from: the last reset (0:
	// none), before which every counter here was set back to zero. The
	// clock (Elapsed) keeps counting from the start.
	Since time.Duration
	// SentEver and IncompleteEver count the requests sent and those
	// cancelled unfinished since the start, the warm-up's too, never
	// reset: counters that only go up, as Prometheus' must.
	SentEver, IncompleteEver int64
	// ScheduledEver and DroppedEver count the open loop's arrivals and
	// those dropped unsent since the start, the warm-up's too, never
	// reset.
	ScheduledEver, DroppedEver int64

	// Calibration says how the prompts were calibrated when the server's
	// tokenizer was tried (Config.Tokenize; empty: it was not).
	Calibration string
	// CacheResets counts the server's prefix cache emptied before the
	// phases (Config.ResetPrefixCache).
	CacheResets CacheResets
}

// Limits are the limits that end a run (zero: none).
type Limits struct {
	Duration time.Duration
	Requests int64
}

// Ending reports whether the run is ending or over: no new request starts.
func (s *Snapshot) Ending() bool { return s.DoneWhy != "" }

// Point is what happened in one second of the run.
type Point struct {
	// Sec is the second of the run (0 is the first).
	Sec int64
	// Latency percentiles of this second (zero when none): TTFTs that
	// arrived in it, E2Es of the requests that finished in it.
	TTFTP50, TTFTP99, E2EP50, E2EP95, E2EP99 time.Duration
	// The same from the intended send time, TTFT* and E2E* (the open
	// loop's; zero in the closed loop).
	TTFTIntendedP50, TTFTIntendedP99               time.Duration
	E2EIntendedP50, E2EIntendedP95, E2EIntendedP99 time.Duration
	Completed, Failed                              int64
	// OutTokens are the output tokens that arrived in this second: a
	// token for each output message, in the second it arrived (learnt
	// within a tick), and a completed request's correction from the
	// server's usage count in the second it ended. InTokens are counted
	// in the second their request completed.
	OutTokens, InTokens int64
	// InFlight is the most requests in flight seen in this second.
	InFlight int
}

// Phase is one stretch of the run under one setting of the knobs (a pause
// is one too, with no request); requests belong to the phase in which they
// started.
type Phase struct {
	ID    int
	Knobs Knobs
	// Start and End are run times; End is zero for the current phase.
	Start, End time.Duration
	Current    bool
	// Warmup marks the warm-up phase: its requests are in no other figure.
	Warmup    bool
	Completed int64
	Failed    int64
	Good      int64
	ByClass   [probe.NumClasses]int64
	// OutTokens and InTokens are the completed requests' (vLLM's
	// definition). DeliveredTokens is every output token that arrived
	// for the phase's requests, counted as it came (with the server's
	// correction at a completion), and FailedOutTokens the part of those
	// whose request then failed: output that was delivered.
	OutTokens       int64
	InTokens        int64
	DeliveredTokens int64
	FailedOutTokens int64
	// Latency holds the phase's distributions: a TTFT and ITLs as they
	// arrived, for every request begun in the phase (a TTFT stays when
	// its request then fails: it was measured); TPOT, E2E and the rest
	// at the completion of each.
	Latency [NumMetrics]Dist
	// HTTP holds the phase's HTTP phases (probe.HTTPPhase: k6's
	// http_req_blocked, ...), over every request that got an answer;
	// zero where unknown (a merge of agents' results keeps none).
	HTTP [probe.NumHTTPPhases]Dist
	// TTFTSplit is the phase's client TTFT split by where it went
	// (indexed by SplitConnection, ...), over the requests whose server
	// gave its timings (ServerTimed counts those that gave any).
	// CachedTokens of CachedOf, the prompt tokens of the completed
	// requests whose server said how many its prefix cache held, were
	// held: CachedTokens/CachedOf is the cache's hit rate.
	TTFTSplit                           [NumSplitParts]Dist
	ServerTimed, CachedTokens, CachedOf int64
	// ServerCounted is the completed streamed requests whose output
	// count is the server's (its usage); CountMismatch those of them
	// where the client's own count, a token a message, differs from it:
	// the client's estimate, where it has to stand in, is off that often.
	ServerCounted, CountMismatch int64
	// SpecAccepted of SpecDrafted are the draft tokens the server's
	// speculative decoding accepted of those it proposed, by its own
	// count, over the completed requests whose server said (vLLM's
	// per-request speculative_decoding): their ratio is the acceptance
	// rate, exactly, however the requests' lengths differ.
	SpecAccepted, SpecDrafted int64
	// ReasoningTokens is the part of OutTokens spent reasoning; Inputs
	// the inputs embedded (the embeddings kinds' batches).
	ReasoningTokens, Inputs int64
	// EstimatedOutput counts the completed requests whose output count
	// was estimated (a token a message: the server reported no usage);
	// Unstreamed those answered whole though streamed was asked (the
	// server ignored "stream": no TTFT, TPOT or ITL of them).
	EstimatedOutput, Unstreamed int64
	// Valid and Invalid count the completed requests whose answers were
	// judged against the structured output or tools asked for (see
	// probe.Result.Output), by the verdict; InvalidRate is their share.
	Valid, Invalid int64
	// Incomplete counts the phase's requests cancelled before they
	// finished (the drain ran out); Pending those sent and not yet
	// counted; Retried those sent again on a new connection (not
	// failures). Sent is every request started in the phase.
	Incomplete, Pending, Retried int64
	// Waiting and Dropped are the open loop's arrivals of the phase never
	// sent: Waiting those in the backlog now, for a free slot (neither
	// sent nor in flight), Dropped those dropped from it when the run
	// ended or the loop closed. A dropped arrival was due and never sent:
	// the error rate counts it as failed. Scheduled is every arrival.
	Waiting, Dropped int64
	// Duration is the phase's span: from its start to its end or the last
	// completion of its requests, whichever is later (or now); the rates
	// are over it. The run's (Snapshot.Run) is the measured time: from
	// the first send to the last completion, the warm-up left out.
	// DeliveredPerSec is DeliveredTokens over it: the phase's output rate
	// as it streams, where OutTokPerSec (vLLM's) waits for completions.
	Duration                                         time.Duration
	OutTokPerSec, InTokPerSec, ReqPerSec, GoodPerSec float64
	DeliveredPerSec                                  float64
	// Sending is the time requests were being sent in the phase: from
	// its start to its end, or to the moment the run stopped sending
	// (the drain is no part of it), or now; SentPerSec is Sent over it.
	// The run's is the sum over its phases but the warm-up.
	Sending    time.Duration
	SentPerSec float64
}

// InvalidRate is the share of the judged answers that were invalid; ok
// is false when none was judged.
func (p Phase) InvalidRate() (rate float64, ok bool) { return invalidRate(p.Valid, p.Invalid) }

// InvalidRate is the window's share of judged answers that were invalid;
// ok is false when none was judged.
func (s *Snapshot) InvalidRate() (rate float64, ok bool) { return invalidRate(s.Valid, s.Invalid) }

func invalidRate(valid, invalid int64) (float64, bool) {
	if n := valid + invalid; n > 0 {
		return float64(invalid) / float64(n), true
	}
	return 0, false
}

// Sent is every request started in the phase: completed, failed,
// incomplete or still pending.
func (p Phase) Sent() int64 { return p.Completed + p.Failed + p.Incomplete + p.Pending }

// Scheduled is every request the phase was to send: those sent, and the
// open loop's arrivals waiting in the backlog or dropped from it unsent.
// In the closed loop it is Sent.
func (p Phase) Scheduled() int64 { return p.Sent() + p.Waiting + p.Dropped }

// ArrivalCounts are the open loop's arrivals: Scheduled = Sent + Waiting +
// Dropped.
type ArrivalCounts struct{ Scheduled, Sent, Waiting, Dropped int64 }

// Arrivals sums the open loop's arrivals over its phases (the warm-up
// left out): those sent, waiting in the backlog and dropped from it, each
// phase's read together, so that they add up in a snapshot taken while
// arrivals come. In a walk that mixes the loops Sent is less than
// Run.Sent, which counts the closed loop's requests too.
func (s *Snapshot) Arrivals() ArrivalCounts {
	var a ArrivalCounts
	for _, p := range s.Phases {
		if p.Warmup || p.Knobs.Mode != OpenLoop {
			continue
		}
		a.Sent += p.Sent()
		a.Waiting += p.Waiting
		a.Dropped += p.Dropped
	}
	a.Scheduled = a.Sent + a.Waiting + a.Dropped
	return a
}

// Finished counts every request that came back since the start or the last
// reset, the warm-up's included (the totals leave those out): what a
// request limit counts.
func (s *Snapshot) Finished() int64 {
	n := s.TotalCompleted + s.TotalFailed
	for _, p := range s.Phases {
		if p.Warmup {
			n += p.Completed + p.Failed
		}
	}
	return n
}

// SetWindowRates sets the window's rates and error rate from its counts
// (Completed, Failed and the tokens and good requests given) over the
// time it covers: the engine's window and a merge of agents' seconds
// compute them alike.
func (s *Snapshot) SetWindowRates(outTok, inTok, good int64) {
	s.ReqPerSec, s.ErrPerSec, s.OutTokPerSec, s.InTokPerSec, s.GoodPerSec, s.ErrorRate = 0, 0, 0, 0, 0, 0
	if secs := s.Covered.Seconds(); secs > 0 {
		s.ReqPerSec = float64(s.Completed) / secs
		s.ErrPerSec = float64(s.Failed) / secs
		s.OutTokPerSec = float64(outTok) / secs
		s.InTokPerSec = float64(inTok) / secs
		s.GoodPerSec = float64(good) / secs
	}
	if n := s.Completed + s.Failed; n > 0 {
		s.ErrorRate = float64(s.Failed) / float64(n)
	}
}
