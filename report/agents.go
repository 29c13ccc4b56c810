package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// AgentsJSON is infertop.agents: the agents a run followed with --agents
// (package fleet), each with its state and its own result, beside the
// merge of their results that is the rest of the file.
type AgentsJSON struct {
	// Source is the --agents value (a list or a DNS name); Of the number
	// of agents the load was split between (their --of).
	Source string `json:"source"`
	Of     int    `json:"of"`
	// Missing are the indexes of the split no agent answered for.
	Missing []int `json:"missing"`
	// Agents are every address followed, by index then address.
	Agents []AgentJSON `json:"agents"`
}

// Agent states, as AgentJSON.State names them.
const (
	// AgentRunning: answering, its load not over (only in a live view).
	AgentRunning = "running"
	// AgentDone: its load over, its last result fetched.
	AgentDone = "done"
	// AgentLost: it answered, then fell silent past the bound: its
	// requests are counted up to its last result.
	AgentLost = "lost"
	// AgentUnreachable: it never answered.
	AgentUnreachable = "unreachable"
	// AgentRefused: it answered with another version or load, or refused
	// the token: in none of the figures.
	AgentRefused = "refused"
	// AgentWaiting: not yet answered (only in a live view).
	AgentWaiting = "waiting"
	// AgentReplaced: an index's earlier pod, silent, whose index answers
	// again from a new pod (an Indexed Job's restart): its requests are
	// counted up to its last result, the new pod's beside them.
	AgentReplaced = "replaced"
)

// AgentJSON is one agent: its share, its state, its counters, its own p99
// TTFT and clocks, and its last result as it served it.
type AgentJSON struct {
	// Index is its share's index (-1: never known); Address where it was
	// followed.
	Index   int    `json:"index"`
	Address string `json:"address"`
	State   string `json:"state"`
	// Why says why it is lost, unreachable or refused.
	Why string `json:"why,omitempty"`
	// Its counters at its last report: sent = completed + failed +
	// incomplete + in flight (a lost agent's in flight are counted
	// incomplete in the merge).
	Sent       int64 `json:"sent"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	Incomplete int64 `json:"incomplete"`
	InFlight   int64 `json:"in_flight"`
	// TTFTP99MS is its own run's TTFT p99 (null: none measured).
	TTFTP99MS *float64 `json:"ttft_p99_ms"`
	// ClockOffsetMS is its clock less the follower's (at the middle of a
	// poll's round trip); StartOffsetMS how late its load started after
	// --start-at on its own clock.
	ClockOffsetMS float64 `json:"clock_offset_ms"`
	StartOffsetMS float64 `json:"start_offset_ms"`
	// LastSeen is when it last answered (absent: never).
	LastSeen *time.Time `json:"last_seen,omitempty"`
	// Result is its last result, a whole run JSON as its /result served
	// it, re-encoded from what the follower decoded (fields no result
	// has dropped); absent when none was fetched, it was refused, or it
	// was past what the follower keeps (or the file's bound: Trimmed).
	Result json.RawMessage `json:"result,omitempty"`
}

// MergedResult is a report made of other runs' results (the agents'): its
// JSON is Result written as is (the exact merge, histograms and all), its
// text and CSV are of Final, the snapshot SnapshotOf makes of it.
type MergedResult struct {
	Result         InfertopJSON
	MaxConcurrency int
}

// writeAgents writes the agents' table.
func writeAgents(b *strings.Builder, a *AgentsJSON) {
	fmt.Fprintf(b, "\nAgents (%d of a load split %d ways, %s):\n", len(a.Agents), a.Of, sanitize.Text(a.Source))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  index\taddress\tstate\tsent\tcompleted\tfailed\tincomplete\tTTFT p99\tclock offset\t")
	for _, g := range a.Agents {
		idx := "?"
		if g.Index >= 0 {
			idx = fmt.Sprint(g.Index)
		}
		p99 := "—"
		if g.TTFTP99MS != nil {
			p99 = fmt.Sprintf("%.2fms", *g.TTFTP99MS)
		}
		off := "—"
		if g.LastSeen != nil {
			off = fmt.Sprintf("%+.1fms", g.ClockOffsetMS)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", idx, sanitize.Text(g.Address), g.State, g.Sent, g.Completed, g.Failed,
			g.Incomplete+g.InFlight, p99, off)
	}
	tw.Flush()
	for _, g := range a.Agents {
		if g.Why != "" {
			fmt.Fprintf(b, "  %s %s: %s\n", sanitize.Text(g.Address), g.State, sanitize.Text(g.Why))
		}
	}
	if len(a.Missing) > 0 {
		fmt.Fprintf(b, "  no agent answered for index %s: its share is in none of the figures\n", IndexRanges(a.Missing, maxRanges))
	}
}

// IndexRanges is xs (sorted) in a line: runs of consecutive indexes as
// ranges ("0-4, 7, 9-9999"), at most most of them and then how many
// indexes more, so that an agent claiming a split of 10,000 ways makes
// a short line.
func IndexRanges(xs []int, most int) string {
	var parts []string
	left := len(xs)
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if len(parts) == most {
			parts = append(parts, fmt.Sprintf("and %d more", left))
			break
		}
		if j == i {
			parts = append(parts, fmt.Sprint(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		left -= j - i + 1
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// maxRanges bounds the ranges of indexes a line names.
const maxRanges = 8

// writeMergedJSON writes a merged report's JSON: its result as merged,
// with the report's verdicts.
func (r *Report) writeMergedJSON(w io.Writer) error {
	inf := r.Merged.Result
	inf.Manifest = r.Manifest
	inf.SLO, inf.SLOHeld = verdictsJSON(r.Verdicts), Held(r.Verdicts)
	if r.Capacity != nil { // a search over the agents
		inf.Capacity = capacityJSON(r.Capacity)
	}
	inf.Compare = r.Compare // a comparison over the agents: the canaries' merge inside
	return WriteMerged(w, inf, r.Merged.MaxConcurrency)
}

// verdictsJSON are verdicts as the JSON writes them.
func verdictsJSON(vs []slo.Verdict) []VerdictJSON {
	out := []VerdictJSON{}
	for _, v := range vs {
		vj := VerdictJSON{Expr: v.Expr, Scope: v.Scope, Held: v.Held, Known: v.Known, Target: v.Value, Text: v.String(), Of: v.Of}
		if v.Known {
			a := v.Actual
			vj.Actual = &a
		}
		out = append(out, vj)
	}
	return out
}

// SnapshotOf is the snapshot a result shows: its run, phases, counters
// and errors, as a finished load's last snapshot holds them (the window
// is the whole run). What a result does not keep (the window's series,
// the streams in flight) is zero. It is how a merged result is printed
// (WriteText, WriteCSV) and judged with the code a single run's is.
func SnapshotOf(inf InfertopJSON, maxConcurrency int) load.Snapshot {
	s := load.Snapshot{Run: phaseOf(inf.Run), Done: true, Scheduled: inf.ArrivalsScheduled, MaxInFlight: maxConcurrency}
	s.Dropped = s.Run.Dropped
	s.Run.ID = 0
	for _, p := range inf.Phases {
		s.Phases = append(s.Phases, phaseOf(p))
	}
	s.Knobs = knobsOf(inf.Manifest.Knobs)
	s.Elapsed = s.Run.Start + s.Run.Duration
	s.Window, s.Covered = s.Run.Duration, s.Run.Duration
	s.Latency = s.Run.Latency
	s.TotalCompleted, s.TotalFailed, s.TotalByClass = s.Run.Completed, s.Run.Failed, s.Run.ByClass
	s.Completed, s.Failed, s.ByClass = s.Run.Completed, s.Run.Failed, s.Run.ByClass
	s.TotalOutTokens = s.Run.OutTokens
	s.ReqPerSec, s.OutTokPerSec, s.InTokPerSec, s.GoodPerSec = s.Run.ReqPerSec, s.Run.OutTokPerSec, s.Run.InTokPerSec, s.Run.GoodPerSec
	if n := s.Run.Completed + s.Run.Failed; n > 0 {
		s.ErrorRate = float64(s.Run.Failed) / float64(n)
	}
	s.Incomplete = s.Run.Incomplete
	s.InFlight = int(s.Run.Pending)
	if inf.SentRate != nil {
		s.Run.SentPerSec = *inf.SentRate
		if *inf.SentRate > 0 {
			s.Run.Sending = time.Duration(float64(s.Run.Sent()) / *inf.SentRate * float64(time.Second))
		}
	}
	for _, e := range inf.Errors {
		s.Errors = append(s.Errors, load.ErrorCount{Class: classOf(e.Class), Status: e.Status, Message: e.Message, Count: e.Count})
	}
	if len(s.Errors) > 0 {
		s.LastError = s.Errors[0].Message
	}
	return s
}

// phaseOf is the phase a PhaseJSON writes (the reverse of phaseJSON).
func phaseOf(p PhaseJSON) load.Phase {
	d := func(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }
	s := func(v float64) time.Duration { return time.Duration(math.Round(v * 1e9)) }
	out := load.Phase{ID: p.ID, Knobs: knobsOf(p.Knobs), Start: s(p.StartS), Duration: s(p.DurationS), Warmup: p.Warmup,
		Completed: p.Completed, Failed: p.Failed, Good: p.Good, Incomplete: p.Incomplete, Waiting: p.Backlog, Dropped: p.Dropped, Retried: p.Retried,
		OutTokens: p.OutputTokens, InTokens: p.InputTokens, DeliveredTokens: p.DeliveredTokens, FailedOutTokens: p.FailedOutputTokens,
		ReasoningTokens: p.ReasoningTokens, Inputs: p.Inputs,
		OutTokPerSec: p.OutputThroughput, InTokPerSec: p.InputThroughput, ReqPerSec: p.RequestThroughput, GoodPerSec: p.RequestGoodput}
	out.End = out.Start + out.Duration // a result's phases are over, as far as it knows
	out.Pending = max(p.Sent-p.Completed-p.Failed-p.Incomplete, 0)
	if p.DurationS > 0 {
		out.DeliveredPerSec = float64(p.DeliveredTokens) / p.DurationS
	}
	for name, n := range p.ErrorsByClass {
		if c := classOf(name); c != probe.OK {
			out.ByClass[c] = n
		}
	}
	for _, m := range allMetrics {
		j := p.Latency[m.key]
		out.Latency[m.m] = load.Dist{Count: j.Count, Mean: d(j.Mean), Std: d(j.Std), Min: d(j.Min), P50: d(j.P50), P90: d(j.P90),
			P95: d(j.P95), P99: d(j.P99), P999: d(j.P999), Max: d(j.Max)}
	}
	return out
}

func knobsOf(k KnobsJSON) load.Knobs {
	out := load.Knobs{Concurrency: k.Concurrency, Rate: k.Rate, PromptTokens: k.PromptTokens, OutputTokens: k.OutputTokens}
	if k.Mode == load.OpenLoop.String() {
		out.Mode = load.OpenLoop
	}
	return out
}

// classOf is the failure class named name (probe.OK: none).
func classOf(name string) probe.ErrorClass {
	for _, c := range probe.FailureClasses() {
		if c.String() == name {
			return c
		}
	}
	return probe.OK
}
