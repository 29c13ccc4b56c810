// Package slo parses and checks service-level objectives: aggregate
// conditions such as 'ttft_p99<=500ms' or 'error_rate<1%' over a window, a
// phase or a whole run, and vLLM-style per-request goodput limits such as
// 'ttft:500ms,tpot:50ms,e2el:10s'. Its errors speak of objectives and
// limits, never of the command-line flag they came from: the caller knows
// which flag it parsed.
package slo

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/load"
)

// Objective is one parsed condition. energy_per_token (J or mJ per output
// token) needs GPU telemetry.
type Objective struct {
	// Expr is the text as given.
	Expr string
	// Metric is ttft, ttfo, tpot, itl, e2el or ttfb with Stat (p50, p90, p95,
	// p99, p99.9, mean, std, min, max), or a rate: error_rate, invalid_rate
	// (the judged answers that were invalid: structured output, tools),
	// request_throughput, output_throughput, input_throughput,
	// total_token_throughput, request_goodput.
	Metric, Stat string
	// Op is <, <=, > or >=.
	Op string
	// Value is in seconds for latencies, a fraction for the two rates, per
	// second for throughputs.
	Value float64
}

// LatencyMetric maps a latency's name in an objective (ttft, tpot, itl,
// e2el or e2e, ttfb, ttfo) to the engine's metric; ok is false for any other.
// A switch, not a package map: the package holds no mutable state.
func LatencyMetric(name string) (m load.Metric, ok bool) {
	switch name {
	case "ttft":
		return load.TTFT, true
	case "tpot":
		return load.TPOT, true
	case "itl":
		return load.ITL, true
	case "e2el", "e2e":
		return load.E2E, true
	case "ttfb":
		return load.TTFB, true
	case "ttfo":
		return load.TTFO, true
	}
	return 0, false
}

// rateMetric reports whether name is an objective's rate or throughput.
func rateMetric(name string) bool {
	switch name {
	case "energy_per_token", "error_rate", "invalid_rate", "request_throughput", "output_throughput",
		"input_throughput", "total_token_throughput", "request_goodput":
		return true
	}
	return false
}

// Parse reads an objective such as 'ttft_p99<=500ms', 'e2el_p95<5s',
// 'error_rate<1%' or 'output_throughput>=2000'.
func Parse(expr string) (Objective, error) {
	// Compiled here: parsing is rare (flags and keys), and the package
	// holds no state.
	m := regexp.MustCompile(`^\s*([a-z0-9_]+?)(?:_(p\d+(?:\.\d+)?|mean|median|std|min|max))?\s*(<=|>=|<|>)\s*([0-9.]+)\s*([a-zµ%]*)\s*$`).FindStringSubmatch(strings.ToLower(expr))
	if m == nil {
		return Objective{}, fmt.Errorf("bad SLO %q: want METRIC_STAT OP VALUE, e.g. ttft_p99<=500ms or error_rate<1%%", expr)
	}
	o := Objective{Expr: strings.TrimSpace(expr), Metric: m[1], Stat: m[2], Op: m[3]}
	num, err := strconv.ParseFloat(m[4], 64)
	if err != nil {
		return Objective{}, fmt.Errorf("bad SLO %q: %w", expr, err)
	}
	unit := m[5]
	_, isLatency := LatencyMetric(o.Metric)
	switch {
	case isLatency:
		if o.Stat == "" {
			return Objective{}, fmt.Errorf("bad SLO %q: say which statistic, e.g. %s_p99", expr, o.Metric)
		}
		if o.Stat == "median" {
			o.Stat = "p50"
		}
		if _, ok := statValue(load.Dist{}, o.Stat); !ok {
			return Objective{}, fmt.Errorf("bad SLO %q: unknown statistic %s", expr, o.Stat)
		}
		d, err := time.ParseDuration(m[4] + unit)
		switch {
		case unit == "":
			return Objective{}, fmt.Errorf("bad SLO %q: a latency needs a unit (ms, s)", expr)
		case err != nil:
			return Objective{}, fmt.Errorf("bad SLO %q: unknown unit %q (us, ms, s, m)", expr, unit)
		}
		o.Value = d.Seconds()
	case rateMetric(o.Metric):
		if o.Stat != "" {
			return Objective{}, fmt.Errorf("bad SLO %q: %s takes no statistic", expr, o.Metric)
		}
		switch {
		case unit == "%" && (o.Metric == "error_rate" || o.Metric == "invalid_rate"):
			o.Value = num / 100
		case o.Metric == "energy_per_token" && (unit == "j" || unit == ""):
			o.Value = num
		case o.Metric == "energy_per_token" && unit == "mj":
			o.Value = num / 1000
		case o.Metric == "energy_per_token":
			return Objective{}, fmt.Errorf("bad SLO %q: energy is in J or mJ per token", expr)
		case unit == "":
			o.Value = num
		default:
			return Objective{}, fmt.Errorf("bad SLO %q: unit %q does not fit %s", expr, unit, o.Metric)
		}
		if (o.Metric == "error_rate" || o.Metric == "invalid_rate") && o.Value > 1 { // a share of the requests: error_rate<200% holds for anything
			return Objective{}, fmt.Errorf("bad SLO %q: a rate of requests is at most 100%%", expr)
		}
	default:
		return Objective{}, fmt.Errorf("bad SLO %q: unknown metric %s", expr, o.Metric)
	}
	return o, nil
}

// ParseAll parses every expression.
func ParseAll(exprs []string) ([]Objective, error) {
	var out []Objective
	for _, e := range exprs {
		o, err := Parse(e)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func statValue(d load.Dist, stat string) (time.Duration, bool) {
	switch stat {
	case "p50":
		return d.P50, true
	case "p90":
		return d.P90, true
	case "p95":
		return d.P95, true
	case "p99":
		return d.P99, true
	case "p99.9", "p999":
		return d.P999, true
	case "mean":
		return d.Mean, true
	case "std":
		return d.Std, true
	case "min":
		return d.Min, true
	case "max":
		return d.Max, true
	}
	return 0, false
}

// Figures are what objectives are checked against: a window, a phase or a
// whole run.
type Figures struct {
	Latency                                          [load.NumMetrics]load.Dist
	Completed, Failed                                int64
	ReqPerSec, OutTokPerSec, InTokPerSec, GoodPerSec float64
	// Incomplete counts requests cancelled before they finished (at the
	// end of a run), Dropped the open loop's arrivals never sent (left in
	// its backlog when the run ended): error_rate counts both as failed,
	// the dropped as the late requests they are.
	Incomplete, Dropped int64
	// Valid and Invalid count the judged answers (structured output,
	// tools) by the verdict: invalid_rate is Invalid over both.
	Valid, Invalid int64
	// JoulesPerToken is the GPUs' energy per output token, when known.
	JoulesPerToken float64
	HasEnergy      bool
	// Loop says how the figures' requests were timed: every one from its
	// intended send time (the open loop), none (the closed loop), or some
	// (a walk through both). See Timing.
	Loop Timing
}

// Timing is how the requests of some figures were timed.
type Timing int

// The timings: in the open loop an objective on TTFT or E2E judges TTFT*
// and E2E*, from the intended send time, so that the wait of an arrival
// for a free slot is never hidden (coordinated omission); in the closed
// loop there is only the service time; over a walk through both loops,
// the service time, since only the open loop's requests have a starred
// figure (the verdict says so).
const (
	ClosedTiming Timing = iota
	OpenTiming
	MixedTiming
)

// TimingOf is the timing of figures whose distributions are lat: open
// when every request timed to its end has a queue time (the open loop's
// mark), mixed when some have.
func TimingOf(lat [load.NumMetrics]load.Dist) Timing {
	q, e := lat[load.Queue].Count, lat[load.E2E].Count
	switch {
	case q == 0:
		return ClosedTiming
	case q >= e:
		return OpenTiming
	}
	return MixedTiming
}

// judged is the metric an objective on m reads under timing t, and what
// the verdict says of it ("" where the metric is all there is).
func judged(m load.Metric, t Timing) (load.Metric, string) {
	switch {
	case t == OpenTiming && m == load.TTFT:
		return load.TTFTIntended, "TTFT*, from the intended send time"
	case t == OpenTiming && m == load.E2E:
		return load.E2EIntended, "E2E*, from the intended send time"
	case t == OpenTiming && m == load.TTFO:
		return m, "service time: TTFO has no figure from the intended send time"
	case t == MixedTiming && (m == load.TTFT || m == load.E2E || m == load.TTFO):
		return m, "service time: the walk's closed-loop requests have no figure from the intended send time"
	}
	return m, ""
}

// FromPhase takes the figures of a phase (or of the whole run, Snapshot.Run).
func FromPhase(p load.Phase) Figures {
	return Figures{Latency: p.Latency, Completed: p.Completed, Failed: p.Failed, Incomplete: p.Incomplete, Dropped: p.Dropped, Valid: p.Valid, Invalid: p.Invalid,
		ReqPerSec: p.ReqPerSec, OutTokPerSec: p.OutTokPerSec, InTokPerSec: p.InTokPerSec, GoodPerSec: p.GoodPerSec, Loop: TimingOf(p.Latency)}
}

// FromWindow takes the figures of a snapshot's rolling window.
func FromWindow(s load.Snapshot) Figures {
	return Figures{Latency: s.Latency, Completed: s.Completed, Failed: s.Failed, Valid: s.Valid, Invalid: s.Invalid,
		ReqPerSec: s.ReqPerSec, OutTokPerSec: s.OutTokPerSec, InTokPerSec: s.InTokPerSec, GoodPerSec: s.GoodPerSec, Loop: TimingOf(s.Latency)}
}

// Verdict is one objective checked.
type Verdict struct {
	Objective
	// Scope says over what: "run", "phase 3", "window".
	Scope string
	// Actual is the measured value, in the objective's units; Known is
	// false when there was nothing to measure (no requests, no TTFT).
	Actual float64
	Known  bool
	Held   bool
	// Of says which figure a latency objective judged where the name
	// alone does not: "TTFT*, from the intended send time" in the open
	// loop, or why it is the service time; "" otherwise. Judged is the
	// metric a latency objective read (load.TTFTIntended for ttft in the
	// open loop).
	Of     string
	Judged load.Metric
}

// Check evaluates o against f. An objective with nothing measured never
// holds: Known is false and so is Held (a hung server that answers
// nothing must not pass a gate). Where that is premature, early in a live
// window, the caller tells it apart by Known.
func (o Objective) Check(f Figures, scope string) Verdict {
	v := Verdict{Objective: o, Scope: scope}
	if m, ok := LatencyMetric(o.Metric); ok {
		m, v.Of = judged(m, f.Loop)
		v.Judged = m
		d := f.Latency[m]
		if d.Count > 0 {
			val, _ := statValue(d, o.Stat)
			v.Actual, v.Known = val.Seconds(), true
		}
	} else if o.Metric == "energy_per_token" {
		v.Actual, v.Known = f.JoulesPerToken, f.HasEnergy
	} else {
		v.Known = f.Completed+f.Failed > 0
		switch o.Metric {
		case "error_rate":
			if n := f.Completed + f.Failed + f.Incomplete + f.Dropped; n > 0 {
				v.Actual, v.Known = float64(f.Failed+f.Incomplete+f.Dropped)/float64(n), true
			}
		case "invalid_rate": // over the judged answers: with none judged, nothing measured
			v.Actual, v.Known = 0, f.Valid+f.Invalid > 0
			if v.Known {
				v.Actual = float64(f.Invalid) / float64(f.Valid+f.Invalid)
			}
		case "request_throughput":
			v.Actual = f.ReqPerSec
		case "output_throughput":
			v.Actual = f.OutTokPerSec
		case "input_throughput":
			v.Actual = f.InTokPerSec
		case "total_token_throughput":
			v.Actual = f.OutTokPerSec + f.InTokPerSec
		case "request_goodput":
			v.Actual = f.GoodPerSec
		}
	}
	v.Held = v.Known && compare(v.Actual, o.Op, o.Value)
	return v
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

// NeedsStream reports whether o reads a figure only a streamed answer
// shows (TTFT, TTFO, ITL, TPOT).
func (o Objective) NeedsStream() bool {
	m, ok := LatencyMetric(o.Metric)
	return ok && (m == load.TTFT || m == load.ITL || m == load.TPOT || m == load.TTFO)
}

// NeedsEnergy reports whether o reads the GPUs' energy.
func (o Objective) NeedsEnergy() bool { return o.Metric == "energy_per_token" }

// CheckAll evaluates every objective.
func CheckAll(objs []Objective, f Figures, scope string) []Verdict {
	out := make([]Verdict, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Check(f, scope))
	}
	return out
}

// Format shows a value in the objective's units: a latency to three
// figures, as the dashboard shows it (7.59s, never 7.58579s).
func (o Objective) Format(v float64) string {
	if _, ok := LatencyMetric(o.Metric); ok {
		if d := time.Duration(math.Round(v * float64(time.Second))).Round(time.Microsecond); d > 0 {
			return load.FormatDuration(d)
		}
		return "0s"
	}
	if o.Metric == "error_rate" || o.Metric == "invalid_rate" {
		return strconv.FormatFloat(v*100, 'f', 2, 64) + "%"
	}
	if o.Metric == "energy_per_token" {
		return strconv.FormatFloat(v, 'f', 3, 64) + " J/token"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
}

// String says how the verdict went: "ttft_p99<=500ms held in run: 412ms",
// or for a breach by how much.
func (v Verdict) String() string {
	of := ""
	if v.Of != "" {
		of = " [" + v.Of + "]"
	}
	if !v.Known {
		return fmt.Sprintf("%s BREACHED in %s: nothing measured%s", v.Expr, v.Scope, of)
	}
	if v.Held {
		return fmt.Sprintf("%s held in %s: %s%s", v.Expr, v.Scope, v.Format(v.Actual), of)
	}
	over := math.Abs(v.Actual - v.Value)
	rel := ""
	if v.Value != 0 {
		rel = fmt.Sprintf(", %.0f%%", over/math.Abs(v.Value)*100)
	}
	return fmt.Sprintf("%s BREACHED in %s: %s (off by %s%s)%s", v.Expr, v.Scope, v.Format(v.Actual), v.Format(over), rel, of)
}

// ParseGoodput reads vLLM's per-request limits: 'ttft:500ms,tpot:50ms,e2el:10s'.
func ParseGoodput(s string) (load.Goodput, error) {
	var g load.Goodput
	if strings.TrimSpace(s) == "" {
		return g, nil
	}
	for _, part := range strings.Split(s, ",") {
		if strings.EqualFold(strings.TrimSpace(part), "valid") { // judged answers: a good one is valid
			g.Valid = true
			continue
		}
		name, val, ok := strings.Cut(strings.TrimSpace(part), ":")
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if !ok || err != nil || d <= 0 {
			return g, fmt.Errorf("bad goodput limits %q: want positive times, e.g. ttft:500ms,tpot:50ms,e2el:10s", s)
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "ttft":
			g.TTFT = d
		case "tpot":
			g.TPOT = d
		case "e2el", "e2e":
			g.E2E = d
		case "ttfo":
			g.TTFO = d
		default:
			return g, fmt.Errorf("bad goodput limits %q: unknown limit %s (ttft, ttfo, tpot, e2el, valid)", s, name)
		}
	}
	return g, nil
}
