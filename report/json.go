package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/telemetry"
)

// Percentiles written for every latency, as vLLM's --metric-percentiles
// names them (p99.9 keeps its dot).
var percentiles = []struct {
	name string
	pick func(DistJSON) float64
}{
	{"p50", func(d DistJSON) float64 { return d.P50 }},
	{"p90", func(d DistJSON) float64 { return d.P90 }},
	{"p95", func(d DistJSON) float64 { return d.P95 }},
	{"p99", func(d DistJSON) float64 { return d.P99 }},
	{"p99.9", func(d DistJSON) float64 { return d.P999 }},
}

// vllmMetric is the key stem vLLM uses for each latency.
var vllmMetric = []struct {
	key string
	m   load.Metric
}{{"ttft", load.TTFT}, {"tpot", load.TPOT}, {"itl", load.ITL}, {"e2el", load.E2E}, {"ttfb", load.TTFB}}

// allMetrics adds infertop's open-loop figures to vLLM's: the client queue
// time and TTFT and E2E from the intended send time.
var allMetrics = append(append([]struct {
	key string
	m   load.Metric
}{}, vllmMetric...), []struct {
	key string
	m   load.Metric
}{{"queue", load.Queue}, {"ttft_intended", load.TTFTIntended}, {"e2el_intended", load.E2EIntended}, {"ttfo", load.TTFO}}...)

// topMetrics are the latencies with vLLM-style keys at the top level:
// vLLM's, and TTFO (the time to the answer's first token, AIPerf's time
// to first output) in the same pattern (mean_ttfo_ms, p99_ttfo_ms, ...).
var topMetrics = append(append([]struct {
	key string
	m   load.Metric
}{}, vllmMetric...), struct {
	key string
	m   load.Metric
}{"ttfo", load.TTFO})

// DistJSON is one distribution in milliseconds.
type DistJSON struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	Std   float64 `json:"std_ms"`
	Min   float64 `json:"min_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func dist(d load.Dist) DistJSON {
	return DistJSON{Count: d.Count, Mean: ms(d.Mean), Std: ms(d.Std), Min: ms(d.Min), P50: ms(d.P50), P90: ms(d.P90),
		P95: ms(d.P95), P99: ms(d.P99), P999: ms(d.P999), Max: ms(d.Max)}
}

// PhaseJSON is a phase (or the whole run) in the JSON result.
type PhaseJSON struct {
	ID         int       `json:"id"`
	Warmup     bool      `json:"warmup"`
	Knobs      KnobsJSON `json:"knobs"`
	StartS     float64   `json:"start_s"`
	DurationS  float64   `json:"duration_s"`
	Sent       int64     `json:"sent"`
	Completed  int64     `json:"completed"`
	Failed     int64     `json:"failed"`
	Incomplete int64     `json:"incomplete"`
	// Backlog and Dropped are the open loop's arrivals never sent:
	// waiting for a free slot (a report saved while the run goes on), or
	// dropped from the backlog unsent when the run ended or the loop
	// closed (failed, late, in the error rate).
	Backlog              int64               `json:"backlog,omitempty"`
	Dropped              int64               `json:"dropped,omitempty"`
	Retried              int64               `json:"retried"`
	Good                 int64               `json:"good"`
	ErrorsByClass        map[string]int64    `json:"errors_by_class"`
	InputTokens          int64               `json:"total_input_tokens"`
	OutputTokens         int64               `json:"total_output_tokens"`
	DeliveredTokens      int64               `json:"delivered_output_tokens"`
	FailedOutputTokens   int64               `json:"failed_output_tokens"`
	ReasoningTokens      int64               `json:"total_reasoning_tokens"`
	Inputs               int64               `json:"total_inputs"`
	Output               *OutputJSON         `json:"output,omitempty"`
	RequestThroughput    float64             `json:"request_throughput"`
	RequestGoodput       float64             `json:"request_goodput"`
	OutputThroughput     float64             `json:"output_throughput"`
	InputThroughput      float64             `json:"input_throughput"`
	TotalTokenThroughput float64             `json:"total_token_throughput"`
	Latency              map[string]DistJSON `json:"latency"`
	// HTTP is the HTTP phases by k6's name (http_req_blocked, ...),
	// absent where none is known.
	HTTP map[string]DistJSON `json:"http,omitempty"`
	// TTFTSplit is the client's TTFT split by where it went
	// (connection, queue, prefill, rest, gap), over the ServerTimed
	// requests whose server gave its timings; absent with none.
	TTFTSplit   map[string]DistJSON `json:"ttft_split,omitempty"`
	ServerTimed int64               `json:"server_timed,omitempty"`
	// CachedPromptTokens of PromptTokensCacheKnown were held by the
	// server's prefix cache (the completed requests whose server said).
	CachedPromptTokens     int64 `json:"cached_prompt_tokens,omitempty"`
	PromptTokensCacheKnown int64 `json:"prompt_tokens_cache_known,omitempty"`
	// SpecAcceptedTokens of SpecDraftTokens are the draft tokens the
	// server's speculative decoding accepted of those it proposed, by
	// its own per-request count (vLLM's speculative_decoding).
	SpecAcceptedTokens int64 `json:"spec_decode_accepted_tokens,omitempty"`
	SpecDraftTokens    int64 `json:"spec_decode_draft_tokens,omitempty"`
	// ServerCounted is the completed streamed requests whose output
	// count is the server's; OutputCountMismatch those of them where the
	// client's own count (a token a message) differs.
	ServerCounted       int64 `json:"server_counted_outputs,omitempty"`
	OutputCountMismatch int64 `json:"output_count_mismatch,omitempty"`
}

func phaseJSON(p load.Phase) PhaseJSON {
	out := PhaseJSON{
		ID: p.ID, Warmup: p.Warmup, Knobs: knobs(p.Knobs), StartS: p.Start.Seconds(), DurationS: p.Duration.Seconds(),
		Sent: p.Sent(), Completed: p.Completed, Failed: p.Failed, Incomplete: p.Incomplete, Backlog: p.Waiting, Dropped: p.Dropped, Retried: p.Retried,
		Good: p.Good, ErrorsByClass: classCounts(p.ByClass),
		InputTokens: p.InTokens, OutputTokens: p.OutTokens, DeliveredTokens: p.DeliveredTokens, FailedOutputTokens: p.FailedOutTokens, ReasoningTokens: p.ReasoningTokens, Inputs: p.Inputs, RequestThroughput: p.ReqPerSec, RequestGoodput: p.GoodPerSec,
		OutputThroughput: p.OutTokPerSec, InputThroughput: p.InTokPerSec, TotalTokenThroughput: p.OutTokPerSec + p.InTokPerSec,
		Latency: map[string]DistJSON{},
	}
	for _, m := range allMetrics {
		out.Latency[m.key] = dist(p.Latency[m.m])
	}
	if rate, ok := p.InvalidRate(); ok {
		out.Output = &OutputJSON{Valid: p.Valid, Invalid: p.Invalid, InvalidRate: rate}
	}
	out.HTTP = httpPhasesJSON(p.HTTP)
	if p.TTFTSplit[load.SplitGap].Count > 0 {
		out.TTFTSplit = make(map[string]DistJSON, load.NumSplitParts)
		for i, k := range SplitKeys() {
			out.TTFTSplit[k] = dist(p.TTFTSplit[i])
		}
	}
	out.ServerTimed, out.CachedPromptTokens, out.PromptTokensCacheKnown = p.ServerTimed, p.CachedTokens, p.CachedOf
	out.ServerCounted, out.OutputCountMismatch = p.ServerCounted, p.CountMismatch
	out.SpecAcceptedTokens, out.SpecDraftTokens = p.SpecAccepted, p.SpecDrafted
	return out
}

// SplitKeys are the keys of PhaseJSON.TTFTSplit, in load's order
// (load.SplitConnection, ...).
func SplitKeys() []string { return []string{"connection", "queue", "prefill", "rest", "gap"} }

// HTTPPhaseKeys are the keys of PhaseJSON.HTTP, k6's names, in the
// order a request goes through its phases.
func HTTPPhaseKeys() []string {
	out := make([]string, probe.NumHTTPPhases)
	for i := range out {
		out[i] = probe.HTTPPhase(i).String()
	}
	return out
}

// httpPhasesJSON is the HTTP phases by their k6 names; nil when no
// request of the phase got an answer, or none was measured (a merge).
func httpPhasesJSON(h [probe.NumHTTPPhases]load.Dist) map[string]DistJSON {
	if h[probe.Blocked].Count == 0 {
		return nil
	}
	out := make(map[string]DistJSON, len(h))
	for i, d := range h {
		out[probe.HTTPPhase(i).String()] = dist(d)
	}
	return out
}

// OutputJSON is a phase's judged answers (structured output, tools).
type OutputJSON struct {
	Valid       int64   `json:"valid"`
	Invalid     int64   `json:"invalid"`
	InvalidRate float64 `json:"invalid_rate"`
}

// VerdictJSON is one SLO verdict.
type VerdictJSON struct {
	Expr   string   `json:"expr"`
	Scope  string   `json:"scope"`
	Held   bool     `json:"held"`
	Known  bool     `json:"known"`
	Actual *float64 `json:"actual"`
	Target float64  `json:"target"`
	Text   string   `json:"text"`
	// Of says which figure a latency objective judged (slo.Verdict.Of).
	Of string `json:"of,omitempty"`
}

// WriteJSON writes the result: vLLM's keys at the top level for the whole
// run, infertop's own under "infertop".
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Merged != nil {
		return r.writeMergedJSON(w)
	}
	run := r.Final.Run
	top := vllmKeys(r.Manifest, phaseJSON(run), max(r.Final.MaxInFlight, 1)) // vLLM's max_concurrency: the most in flight, not the knob
	var phases []PhaseJSON
	for _, p := range r.Final.Phases {
		if p.Scheduled() > 0 {
			phases = append(phases, phaseJSON(p))
		}
	}
	verdicts := verdictsJSON(r.Verdicts)
	if phases == nil {
		phases = []PhaseJSON{}
	}
	inf := InfertopJSON{
		Manifest: r.Manifest, Run: phaseJSON(run), Phases: phases, ErrorsByClass: classCounts(run.ByClass),
		Errors: errorsJSON(r.Final.Errors), Retried: run.Retried, SLO: verdicts, SLOHeld: Held(r.Verdicts),
		Compare: r.Compare,
	}
	if r.Final.Scheduled > 0 {
		a := r.Final.Arrivals() // its parts, read together
		inf.ArrivalsScheduled, inf.ArrivalsSent, inf.ArrivalsDropped = a.Scheduled, &a.Sent, a.Dropped
		if run.Sending > 0 { // over the time requests were being sent, not the drain
			rate := run.SentPerSec
			inf.SentRate = &rate
		}
	}
	if e := r.Energy; e != nil && e.Run.OK {
		// vLLM's names for the whole run.
		top["gpu_avg_power_w"] = e.Run.AvgWatts
		top["gpu_energy_j"] = e.Run.Joules
		top["gpu_energy_per_output_token_j"] = e.Run.JoulesPerToken
		ej := &EnergySectionJSON{Source: e.Source, Run: energyJSON(0, e.Run)}
		for _, p := range r.Final.Phases {
			if f, ok := e.Phases[p.ID]; ok && p.Sent() > 0 {
				ej.Phases = append(ej.Phases, energyJSON(p.ID, f))
			}
		}
		inf.Energy = ej
	}
	inf.ServerPerf = serverPerfJSON(r.ServerPerf)
	r.addHistory(&inf)
	inf.SteadyState = steadyJSON(r.Final.Steady)
	inf.Sessions, inf.Trace = sessionsJSON(r.Final.Sessions), traceJSON(r.Final.Trace)
	if r.Capacity != nil {
		inf.Capacity = capacityJSON(r.Capacity)
	}
	top["infertop"] = inf
	return encodeTop(w, top)
}

// SteadyJSON is infertop.steady_state: whether the requests in flight
// reached share of the target concurrency, and when they did, the
// window's figures (SteadyWindowJSON, inline).
type SteadyJSON struct {
	TargetConcurrency int     `json:"target_concurrency"`
	Share             float64 `json:"share"`
	Reached           bool    `json:"reached"`
	*SteadyWindowJSON
}

// SteadyWindowJSON is the steady-state window's figures: its run times,
// the requests completed inside it and the output tokens that arrived
// in it, the rates over it, and the latencies with vLLM's keys.
type SteadyWindowJSON struct {
	StartS            float64             `json:"start_s"`
	EndS              float64             `json:"end_s"`
	DurationS         float64             `json:"duration_s"`
	Completed         int64               `json:"completed"`
	DeliveredTokens   int64               `json:"delivered_output_tokens"`
	RequestThroughput float64             `json:"request_throughput"`
	OutputThroughput  float64             `json:"output_throughput"`
	Latency           map[string]DistJSON `json:"latency"`
}

// steadyJSON is s in the JSON; nil when no steady state was sought.
func steadyJSON(s load.SteadyState) *SteadyJSON {
	if s.Target == 0 {
		return nil
	}
	out := &SteadyJSON{TargetConcurrency: s.Target, Share: load.SteadyShare, Reached: s.Reached}
	if !s.Reached {
		return out
	}
	w := &SteadyWindowJSON{StartS: s.Start.Seconds(), EndS: s.End.Seconds(), DurationS: (s.End - s.Start).Seconds(),
		Completed: s.Completed, DeliveredTokens: s.OutTokens, RequestThroughput: s.ReqPerSec, OutputThroughput: s.OutTokPerSec,
		Latency: map[string]DistJSON{}}
	for _, m := range vllmMetric {
		if m.m != load.TTFB {
			w.Latency[m.key] = dist(s.Latency[m.m])
		}
	}
	out.SteadyWindowJSON = w
	return out
}

// encodeTop writes a result's top-level object.
func encodeTop(w io.Writer, top map[string]any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // read by people too: <redacted>, not \u003c
	if err := enc.Encode(top); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	// A server's text (an error, a model name, a group) may hold C1
	// controls and bidi overrides, which encoding/json leaves raw: as
	// \u escapes the file is safe to cat and decodes the same.
	if _, err := w.Write(sanitize.JSON(buf.Bytes())); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// vllmKeys are the result's top-level keys, vLLM's names for the whole
// run's figures: written from the run's PhaseJSON, so a result built from
// other results (infertop merge) has the same keys from the same code.
func vllmKeys(m Manifest, run PhaseJSON, maxConcurrency int) map[string]any {
	top := map[string]any{
		"date":                   m.Start.Format("20060102-150405"),
		"model_id":               m.Model,
		"backend":                m.API,
		"duration":               run.DurationS,
		"sent":                   run.Sent,
		"completed":              run.Completed,
		"failed":                 run.Failed,
		"incomplete":             run.Incomplete,
		"dropped":                run.Dropped,
		"total_input_tokens":     run.InputTokens,
		"total_output_tokens":    run.OutputTokens,
		"total_reasoning_tokens": run.ReasoningTokens,
		"total_inputs":           run.Inputs,
		"request_throughput":     run.RequestThroughput,
		"request_goodput":        run.RequestGoodput,
		"output_throughput":      run.OutputThroughput,
		"total_token_throughput": run.TotalTokenThroughput,
		"max_concurrency":        maxConcurrency,
	}
	for _, mt := range topMetrics {
		d := run.Latency[mt.key]
		top["mean_"+mt.key+"_ms"] = d.Mean
		top["median_"+mt.key+"_ms"] = d.P50
		top["std_"+mt.key+"_ms"] = d.Std
		top["max_"+mt.key+"_ms"] = d.Max
		for _, p := range percentiles {
			top[p.name+"_"+mt.key+"_ms"] = p.pick(d)
		}
	}
	return top
}

// ErrorJSON is one distinct error and how often it came.
type ErrorJSON struct {
	Class   string `json:"class"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

func errorsJSON(es []load.ErrorCount) []ErrorJSON {
	out := make([]ErrorJSON, 0, len(es))
	for _, e := range es {
		out = append(out, ErrorJSON{Class: e.Class.String(), Status: e.Status, Message: e.Message, Count: e.Count})
	}
	return out
}

// EnergyJSON is the GPUs' energy over one stretch: the run (ID 0) or a
// phase.
type EnergyJSON struct {
	ID             int     `json:"id"`
	Joules         float64 `json:"energy_j"`
	AvgWatts       float64 `json:"avg_power_w"`
	JoulesPerToken float64 `json:"energy_per_output_token_j"`
	TokensPerJoule float64 `json:"output_tokens_per_j"`
	// From is "energy counter" or "power × time".
	From string `json:"from"`
}

// EnergySectionJSON is infertop.energy: where the figures came from
// (DCGM or nvidia-smi), the run's and each phase's with requests (null
// when none had figures).
type EnergySectionJSON struct {
	Source string       `json:"source"`
	Run    EnergyJSON   `json:"run"`
	Phases []EnergyJSON `json:"phases"`
}

func energyJSON(id int, f EnergyFigures) EnergyJSON {
	return EnergyJSON{ID: id, Joules: f.Joules, AvgWatts: f.AvgWatts, JoulesPerToken: f.JoulesPerToken, TokensPerJoule: f.TokensPerJoule, From: f.From}
}

// InfertopJSON is a result's "infertop" object: infertop's own figures
// beside vLLM's keys at the top level. A reader decodes the member into
// it; the parts of one kind of run are nil in the others.
type InfertopJSON struct {
	Manifest      Manifest         `json:"manifest"`
	Run           PhaseJSON        `json:"run"`
	Phases        []PhaseJSON      `json:"phases"`
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	Errors        []ErrorJSON      `json:"errors"`
	Retried       int64            `json:"retried"`
	SLO           []VerdictJSON    `json:"slo"`
	SLOHeld       bool             `json:"slo_held"`
	// ArrivalsScheduled and SentRate are the open loop's: arrivals
	// scheduled, and requests sent per second over the run.
	// ArrivalsSent and ArrivalsDropped split them: scheduled = sent +
	// dropped (+ the backlog, in a report saved while the run goes on).
	ArrivalsScheduled int64    `json:"arrivals_scheduled,omitempty"`
	ArrivalsSent      *int64   `json:"arrivals_sent,omitempty"`
	ArrivalsDropped   int64    `json:"arrivals_dropped,omitempty"`
	SentRate          *float64 `json:"sent_rate,omitempty"`
	// Energy is there with GPU telemetry; Series and Histograms with the
	// run's history, Telemetry with the server's or GPUs' readings.
	Energy     *EnergySectionJSON `json:"energy,omitempty"`
	Series     *SeriesJSON        `json:"series,omitempty"`
	Histograms *HistogramsJSON    `json:"histograms,omitempty"`
	Telemetry  *TelemetryJSON     `json:"telemetry,omitempty"`
	// Capacity is a capacity run's (--find-max, --matrix), Compare a
	// comparison's (--compare, --split-by).
	Capacity *CapacityJSON `json:"capacity,omitempty"`
	Compare  *Compare      `json:"compare,omitempty"`
	// SteadyState is the closed loop's steady-state window beside the
	// whole run's figures (absent: none sought, the open loop).
	SteadyState *SteadyJSON `json:"steady_state,omitempty"`
	// Sessions is a sessions run's per-turn table (--sessions), Trace a
	// replay's account (--trace).
	Sessions *SessionsJSON `json:"sessions,omitempty"`
	Trace    *TraceJSON    `json:"trace,omitempty"`
	// ServerPerf is the server's own per-request performance from its
	// /perf_metrics (TensorRT-LLM; --server-timings), unjoined.
	ServerPerf *ServerPerfJSON `json:"server_perf,omitempty"`
	// Merged is a merged result's (infertop merge): the runs it holds.
	Merged *MergedJSON `json:"merged,omitempty"`
	// Agents are a run --agents' agents, each with its own result.
	Agents *AgentsJSON `json:"agents,omitempty"`
}

// Compare is a result's infertop.compare: a pair's (--compare: the
// baseline's result holds it, with the canary's whole result inside) or
// a split's (--split-by), exactly one of the two.
type Compare struct {
	Pair  *compare.PairJSON
	Split *compare.SplitJSON
}

// errCompareKind is a Compare with both parts, or neither.
var errCompareKind = errors.New("a comparison is a pair's or a split's: exactly one")

// MarshalJSON writes the one part set, as infertop.compare.
func (c Compare) MarshalJSON() ([]byte, error) {
	if (c.Pair == nil) == (c.Split == nil) {
		return nil, errCompareKind
	}
	if c.Split != nil {
		return json.Marshal(c.Split)
	}
	return json.Marshal(c.Pair)
}

// UnmarshalJSON reads infertop.compare: a split's has split_by, a
// pair's has not.
func (c *Compare) UnmarshalJSON(b []byte) error {
	var kind struct {
		SplitBy *string `json:"split_by"`
	}
	if err := json.Unmarshal(b, &kind); err != nil {
		return fmt.Errorf("infertop.compare: %w", err)
	}
	*c = Compare{}
	if kind.SplitBy != nil {
		c.Split = new(compare.SplitJSON)
		if err := json.Unmarshal(b, c.Split); err != nil {
			return fmt.Errorf("infertop.compare: %w", err)
		}
		return nil
	}
	c.Pair = new(compare.PairJSON)
	if err := json.Unmarshal(b, c.Pair); err != nil {
		return fmt.Errorf("infertop.compare: %w", err)
	}
	return nil
}

// ServerPerfJSON is infertop.server_perf: the server's own per-request
// performance over the run, read from its /perf_metrics (TensorRT-LLM).
// Its entries carry the server's own request numbers: the spans and
// counts are the server's distribution over the requests it finished
// while the run lasted, unjoined; where the server names its answers by
// those numbers (recent versions), the entries are joined to infertop's
// requests too (Joined, JoinedRequests) and their client TTFTs split.
type ServerPerfJSON struct {
	Source  string `json:"source"`
	Joined  bool   `json:"joined"`
	Offered bool   `json:"offered"`
	Error   string `json:"error,omitempty"`
	// Entries were read during the run; EntriesBeforeRun drained by the
	// first read (left out); Refused had no figure in bounds; Lost were
	// past a read's entry bound; ReadsLost are reads past its byte or
	// value bound, their entries lost uncounted.
	Entries          int64 `json:"entries"`
	EntriesBeforeRun int64 `json:"entries_before_run"`
	Refused          int64 `json:"entries_refused"`
	Lost             int64 `json:"entries_lost"`
	ReadsLost        int64 `json:"reads_lost"`
	// Spans are the distributions of the server's queue, prefill, TTFT
	// and generation (telemetry.PerfPartKeys), absent with no entry.
	Spans map[string]DistJSON `json:"spans,omitempty"`
	// JoinedRequests are the entries joined to infertop's requests
	// through the server's number naming its answer
	// (chatcmpl-<request_id>); TTFTSplit their client TTFTs split by
	// where they went (SplitKeys), absent with none joined.
	JoinedRequests int64               `json:"joined_requests"`
	TTFTSplit      map[string]DistJSON `json:"ttft_split,omitempty"`
	// KVReusedBlocks and KVMissedBlocks are the prefix cache's hits and
	// misses in KV blocks; SpecAcceptedTokens of SpecDraftTokens the
	// draft tokens speculative decoding accepted, by the server's count.
	KVReusedBlocks     int64 `json:"kv_reused_blocks"`
	KVMissedBlocks     int64 `json:"kv_missed_blocks"`
	SpecAcceptedTokens int64 `json:"spec_decode_accepted_tokens,omitempty"`
	SpecDraftTokens    int64 `json:"spec_decode_draft_tokens,omitempty"`
}

// ServerPerfKeys are the keys of ServerPerfJSON.Spans, in their order.
func ServerPerfKeys() []string { return telemetry.PerfPartKeys() }

// BlockHitRate is the share of KV blocks the server's prefix cache held;
// ok false without blocks.
func (p *ServerPerfJSON) BlockHitRate() (rate float64, ok bool) {
	return telemetry.PerfCounts{ReusedBlocks: p.KVReusedBlocks, MissedBlocks: p.KVMissedBlocks}.BlockHitRate()
}

// serverPerfJSON is p in the JSON; nil without it.
func serverPerfJSON(p *telemetry.PerfRun) *ServerPerfJSON {
	if p == nil {
		return nil
	}
	out := &ServerPerfJSON{Source: telemetry.PerfSource, Offered: p.Offered, Error: p.Err, Entries: p.Entries,
		EntriesBeforeRun: p.Before, Refused: p.Refused, Lost: p.Lost, ReadsLost: p.LostReads, KVReusedBlocks: p.ReusedBlocks, KVMissedBlocks: p.MissedBlocks,
		SpecAcceptedTokens: p.SpecAccepted, SpecDraftTokens: p.SpecDrafted}
	if p.Entries > 0 {
		out.Spans = make(map[string]DistJSON, telemetry.NumPerfParts)
		for i, k := range telemetry.PerfPartKeys() {
			out.Spans[k] = dist(p.Parts[i])
		}
	}
	out.Joined, out.JoinedRequests = p.Joined > 0, p.Joined
	if p.Joined > 0 {
		out.TTFTSplit = make(map[string]DistJSON, load.NumSplitParts)
		for i, k := range SplitKeys() {
			out.TTFTSplit[k] = dist(p.Split[i])
		}
	}
	return out
}
