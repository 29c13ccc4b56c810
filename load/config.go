package load

import (
	"context"
	"fmt"
	"strconv"
	"time"

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

// Config configures an engine. New refuses one that Validate refuses.
type Config struct {
	// Do sends one request and measures it (normally (*probe.Client).Do).
	Do func(context.Context, probe.Request) probe.Result
	// Target describes the endpoint for display.
	Target Target
	// Knobs are the initial knob values.
	Knobs Knobs
	// Tick is the snapshot interval (0: DefaultTick; else at least
	// MinTick).
	Tick time.Duration
	// Window is the initial rolling window (0: DefaultWindow); one of
	// Windows.
	Window time.Duration
	// Seed makes the prompts repeatable.
	Seed uint64
	// TraceSeed, if set, makes the requests' trace ids repeatable (the
	// traceparent and x-request-id: see probe.TraceContext), drawn from it
	// and the request's number; nil leaves them random, so that two runs
	// with the default seed send no trace id twice to a tracing backend.
	TraceSeed *uint64
	// MaxRequests ends the run once this many requests have started (0: no
	// limit); Duration once the run has lasted this long (0: no limit).
	// Either way no new request starts; those in flight get Drain (0:
	// DefaultDrain) to finish, then are cancelled and counted incomplete.
	// NoDrain cancels them the moment the run ends instead (Drain is then
	// zero): a zero Drain already means the default, so no drain needs a
	// word of its own. The engine is the one place that decides a run is
	// over: its snapshots say so (Done, DoneWhy) and their clock stops
	// there.
	MaxRequests int64
	Duration    time.Duration
	Drain       time.Duration
	NoDrain     bool
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
	// ByTokenizer asks for the prompts to be calibrated by the server's
	// own tokenizer, through Tokenize, which counts a text's tokens (its
	// /tokenize: probe's Client.Tokenize; the runner sets it): the
	// calibration then learns from it before the first request, and the
	// prompt's text is its asked length in the server's tokens, rather
	// than its usage's count (a chat template's tokens included) after
	// some requests. With no tokenizer (an error) the usage calibrates,
	// and the run's summary says so (Snapshot.Calibration).
	ByTokenizer bool
	Tokenize    func(ctx context.Context, text string) (int, error)
	// ResetPrefixCache asks for the server's prefix cache to be emptied
	// before every stage of a walk and every step of a capacity search
	// (Engine.ResetCache), through ResetCache (probe's
	// Client.ResetPrefixCache; the runner sets it, and empties it once
	// before the run, refusing a server with no such endpoint).
	ResetPrefixCache bool
	ResetCache       func(ctx context.Context) error
	// CacheBust opens every request's prompt (its first message) with a
	// marker of its own, a session's once for the session, so that no
	// two share a prefix block in a server's prefix cache (see
	// cacheBust). It does not go with a shared prefix (PrefixTokens).
	CacheBust bool
	// MaxContext is the server's context in tokens, prompt and output
	// together (0: not known): the calibration keeps a prompt asked to
	// fit inside it from going past it.
	MaxContext int
	// PrefixTokens starts every prompt with the same text of about this
	// many tokens (prefix-cache experiments); the rest stays unique.
	PrefixTokens int
	// PrefixGroups, past 1, makes that many distinct prefixes of
	// PrefixTokens, each shared by every PrefixGroups-th request (G system
	// prompts across the load); 0 or 1 is one prefix for all.
	PrefixGroups int
	// PrefixSeed writes the shared prefixes (nil: Seed does): an agent's
	// share of a load keeps the whole load's seed here, so that every
	// agent sends the same prefixes while its prompts are its own.
	PrefixSeed *uint64
	// Trace, if set, is replayed: its arrivals at their times (scaled by
	// Knobs.Speed), its lengths (scaled by the length knobs against their
	// values at the start, which New sets to the trace's means), in the
	// open loop, which it keeps (see Trace).
	Trace *Trace
	// Sessions, if set, makes each closed-loop worker a multi-turn
	// conversation (see Sessions).
	Sessions Sessions
	// Mix, if set, shares the requests among models by weight (see
	// Mix): each request names its own (probe.Request.Model), drawn from
	// Seed and the request's number.
	Mix Mix
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
	// OpenFiles is the process's open-file limit (RLIMIT_NOFILE; 0: not
	// known), FilesPerRequest the descriptors each request in flight
	// holds (0: one; two when the endpoint is served by this process too,
	// as the embedded sim is, its end of every connection a descriptor).
	// Past what they allow (MaxConcurrencyFor) requests fail in the
	// client, not the endpoint, so the concurrency is held below it: a
	// configuration past it is refused, a key stops at it, and the open
	// loop's requests in flight are capped by it as well.
	OpenFiles       uint64
	FilesPerRequest int
	// OnResult, if set, is called with every finished request (not those
	// infertop cancelled itself), in order, on the aggregator's goroutine:
	// it must not block for long.
	OnResult func(Record)
	// OnProgress, if set, is told on the aggregator's goroutine what the
	// streams in flight showed since its last look, request by request,
	// within a tick of its arrival: first tokens, gaps, tokens. It must
	// not block for long.
	OnProgress func(Progress)
}

// Progress is what one request's stream showed since the aggregator's
// last look at it, or the correction of its output count at its end.
type Progress struct {
	// TTFT is the request's time to its first timed message, when this
	// look saw it (HasTTFT).
	TTFT    time.Duration
	HasTTFT bool
	// ITLs are the gaps between the messages seen, valid during the call
	// only.
	ITLs []time.Duration
	// Tokens is the output tokens that arrived (a token a message), or at
	// the end of a completed request the server's correction of those
	// (its usage count less the messages'), which may be negative.
	Tokens int64
	// Warmup is true for a request of the warm-up.
	Warmup bool
}

// Warmup is a number of requests or a time (whichever is set).
type Warmup struct {
	Requests int64
	Duration time.Duration
}

// ParseWarmup reads a number of requests ('100') or a duration ('30s').
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
// it succeeded and met every limit given. In the open loop the times to
// the first token, the first answer token and the last are counted from
// the intended send time (TTFT*, E2E*): an arrival that waited for a free
// slot waited for its answer too, as vLLM's client, which never holds an
// arrival back, would have measured.
type Goodput struct {
	TTFT, TPOT, E2E time.Duration
	// TTFO limits the time to the answer's first token, after any
	// reasoning; a request with no answer token fails it.
	TTFO time.Duration
	// Valid, where answers are judged (structured output, tools), counts
	// a request good only when its answer was valid.
	Valid bool
}

// Set reports whether any limit is given.
func (g Goodput) Set() bool { return g.TTFT > 0 || g.TPOT > 0 || g.E2E > 0 || g.TTFO > 0 || g.Valid }

// good reports whether r met every limit; queue is the open loop's wait
// from the intended send time to the start (0 in the closed loop).
func (g Goodput) good(r *probe.Result, queue time.Duration) bool {
	if !r.OK() || (g.Valid && r.Output.Judged && !r.Output.Valid) {
		return false
	}
	if g.TTFT > 0 && (!r.HasTTFT || queue+r.TTFT > g.TTFT) {
		return false
	}
	if g.TTFO > 0 && (!r.HasTTFO || queue+r.TTFO > g.TTFO) {
		return false
	}
	if g.TPOT > 0 {
		if tpot, ok := r.TPOT(); ok && tpot > g.TPOT {
			return false
		}
	}
	return g.E2E <= 0 || queue+r.E2E <= g.E2E
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
	// Turn is a session's turn the request was (1..Sessions.Turns; 0: no
	// session), Session the whole session's time when it ended one.
	Turn    int
	Session time.Duration

	// Live holds the request's message times, valid during the OnResult
	// call that received the record only (the engine reuses it after).
	Live *probe.Live
}

// ITLs calls fn with every gap between the request's timed messages, as
// the requests log writes them; only during the OnResult call that
// received the record.
func (r *Record) ITLs(fn func(time.Duration)) { r.Live.ITLs(fn) }
