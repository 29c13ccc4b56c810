package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
)

// writeCapacity writes a capacity run's section of the text summary: per
// search the load found, its figures, and the capacity curve with the
// knee marked; for a matrix, first the table of the load found per cell.
func writeCapacity(b *strings.Builder, o *capacity.Outcome) {
	var objs []string
	for _, ob := range o.Objectives {
		objs = append(objs, ob.Expr)
	}
	if o.Matrix != nil {
		writeMatrix(b, o, strings.Join(objs, " and "))
	}
	for _, c := range o.Cells {
		r := c.Result
		fmt.Fprintf(b, "\nCapacity · prompt %d, output %d tokens · %s", c.Prompt, c.Output, r.Over)
		switch {
		case r.Fixed:
			fmt.Fprintf(b, " %s (given, not searched)\n", r.Over.Format(r.Steps[0].Load))
		case r.Found:
			fmt.Fprintf(b, ": the most at which %s held: %s (%s)\n", strings.Join(objs, " and "), r.Over.Format(r.MaxLoad), r.Why)
		default:
			fmt.Fprintf(b, ": no load held %s (%s)\n", strings.Join(objs, " and "), r.Why)
		}
		if at := r.At(); at != nil && !r.Fixed {
			fmt.Fprintf(b, "  there: %.1f req/s · %.1f tok/s out · goodput %.1f req/s · errors %.2f%%\n", at.ReqPerSec, at.OutTokPerSec, at.GoodPerSec, at.ErrorRate*100)
			tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "  \tcount\tp50\tp90\tp95\tp99\tmax\t")
			for _, m := range []struct {
				name string
				d    load.Dist
			}{{"TTFT", at.TTFT}, {"TPOT", at.TPOT}, {"E2E", at.E2E}} {
				fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", m.name, m.d.Count, fms(m.d.P50), fms(m.d.P90), fms(m.d.P95), fms(m.d.P99), fms(m.d.Max))
			}
			tw.Flush()
		}
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  step\t%s\tphase\treq/s\tout tok/s\tgoodput\tTTFT p50\tTTFT p99\tE2E p50\tE2E p99\terrors\t\t\t\n", r.Over)
		for i, s := range r.Steps {
			mark := ""
			if i == r.Knee && !r.Fixed {
				mark = "◀ knee"
			}
			verdict := "held"
			if !s.Held {
				verdict = "broke"
			}
			sj := stepJSON(s) // what was measured, nothing else
			fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.N, r.Over.Format(s.Load), s.Phase,
				FormatKnown(sj.ReqPerSec, "%.1f", 1), FormatKnown(sj.OutTokPerSec, "%.1f", 1), FormatKnown(sj.GoodPerSec, "%.1f", 1),
				FormatKnown(sj.P50TTFT, "%.2fms", 1), FormatKnown(sj.P99TTFT, "%.2fms", 1), FormatKnown(sj.P50E2E, "%.2fms", 1), FormatKnown(sj.P99E2E, "%.2fms", 1),
				FormatKnown(sj.ErrorRate, "%.2f%%", 100), verdict, mark)
		}
		tw.Flush()
		for _, s := range r.Steps {
			phases := fmt.Sprintf("phases %d (warm-up) and %d", s.WarmupPhase, s.Phase)
			if s.TailPhase > 0 {
				phases = fmt.Sprintf("phases %d (warm-up), %d and %d (its tail)", s.WarmupPhase, s.Phase, s.TailPhase)
			}
			if s.DrainPhase > 0 {
				phases = fmt.Sprintf("phase %d (the last step's queue drained), ", s.DrainPhase) + phases
			}
			reqs := plural(s.Completed+s.Failed+s.Incomplete, "request")
			if s.Pending > 0 {
				reqs += fmt.Sprintf(" and %d still in flight", s.Pending)
			}
			fmt.Fprintf(b, "  step %d: %s, %s, held %s, %s\n", s.N, s.Why, phases, s.Measured.Round(100*time.Millisecond), reqs)
		}
	}
	if o.Stopped != "" {
		fmt.Fprintf(b, "\nthe capacity run stopped before it was over: %s\n", o.Stopped)
	}
}

// writeMatrix writes the table 'max throughput under the objective':
// rows the prompt lengths, columns the output lengths, each cell the load
// found and its output tok/s, and TTFT and E2E p99 there.
func writeMatrix(b *strings.Builder, o *capacity.Outcome, objs string) {
	title := "Max throughput under " + objs
	if objs == "" {
		title = "Throughput at the load given"
	}
	fmt.Fprintf(b, "\n%s (rows: prompt tokens, columns: output tokens; each cell: %s, output tok/s, TTFT p99, E2E p99)\n", title, o.Over)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "  prompt \\ output\t")
	for _, out := range o.Matrix.Outputs {
		fmt.Fprintf(tw, "%d\t", out)
	}
	fmt.Fprintln(tw)
	for _, p := range o.Matrix.Prompts {
		fmt.Fprintf(tw, "  %d\t", p)
		for _, out := range o.Matrix.Outputs {
			cell := "—"
			for _, c := range o.Cells {
				if c.Prompt != p || c.Output != out {
					continue
				}
				r := c.Result
				at := r.At()
				switch {
				case at != nil:
					cell = fmt.Sprintf("%s · %.0f tok/s · %s · %s", r.Over.Format(at.Load), at.OutTokPerSec, fms(at.TTFT.P99), fms(at.E2E.P99))
				case len(r.Steps) > 0:
					cell = "none held"
				}
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// StepJSON is one step of a capacity search. A figure nothing measured
// is null (nil), never 0: a step past the knee whose measured phase had
// no request back has no latency, and no output or goodput rate.
type StepJSON struct {
	N            int       `json:"step"`
	Load         float64   `json:"load"`
	Knobs        KnobsJSON `json:"knobs"`
	DrainPhase   int       `json:"drain_phase"`
	WarmupPhase  int       `json:"warmup_phase"`
	Phase        int       `json:"phase"`
	TailPhase    int       `json:"tail_phase"`
	StartS       float64   `json:"start_s"`
	MeasuredS    float64   `json:"measured_s"`
	Completed    int64     `json:"completed"`
	Failed       int64     `json:"failed"`
	Incomplete   int64     `json:"incomplete"`
	Pending      int64     `json:"pending"`
	ReqPerSec    *float64  `json:"request_throughput"`
	OutTokPerSec *float64  `json:"output_throughput"`
	GoodPerSec   *float64  `json:"request_goodput"`
	P50TTFT      *float64  `json:"p50_ttft_ms"`
	P99TTFT      *float64  `json:"p99_ttft_ms"`
	P50E2E       *float64  `json:"p50_e2el_ms"`
	P99E2E       *float64  `json:"p99_e2el_ms"`
	ErrorRate    *float64  `json:"error_rate"`
	Held         bool      `json:"held"`
	Saturated    bool      `json:"over_saturated"`
	Why          string    `json:"why"`
}

func stepJSON(s capacity.Step) StepJSON {
	lat := func(d load.Dist, v time.Duration) *float64 { return known(ms(v), d.Count > 0) }
	return StepJSON{N: s.N, Load: s.Load, Knobs: knobs(s.Knobs), DrainPhase: s.DrainPhase, WarmupPhase: s.WarmupPhase, Phase: s.Phase, TailPhase: s.TailPhase, StartS: s.Start.Seconds(), MeasuredS: s.Measured.Seconds(),
		Completed: s.Completed, Failed: s.Failed, Incomplete: s.Incomplete, Pending: s.Pending,
		ReqPerSec: known(s.ReqPerSec, s.ReqKnown), OutTokPerSec: known(s.OutTokPerSec, s.PerRequestKnown), GoodPerSec: known(s.GoodPerSec, s.PerRequestKnown),
		P50TTFT: lat(s.TTFT, s.TTFT.P50), P99TTFT: lat(s.TTFT, s.TTFT.P99), P50E2E: lat(s.E2E, s.E2E.P50), P99E2E: lat(s.E2E, s.E2E.P99),
		ErrorRate: known(s.ErrorRate, s.Finished() > 0), Held: s.Held, Saturated: s.Saturated, Why: s.Why}
}

// known is &v when it was measured, nil (null, absent) when not.
func known(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// FormatKnown formats *v scaled by scale with format, or "—" when it was
// not measured (nil, null in the JSON): never a zero that reads as a
// measurement.
func FormatKnown(v *float64, format string, scale float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf(format, *v*scale)
}

// cell is a CSV cell of *v: three decimals, or empty when it was not
// measured (nil).
func cell(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// SearchJSON is one capacity search (a --find-max, or one cell of a
// matrix): whether a load held every objective, the highest that did
// (MaxLoad, null when none did), the figures there (At, null likewise)
// and every step, the capacity curve. A matrix's top has only these four
// (MaxLoad and At null, Steps empty); a search also says how it ran
// (SearchRunJSON).
type SearchJSON struct {
	Found   bool       `json:"found"`
	MaxLoad *float64   `json:"max_load"`
	At      *AtJSON    `json:"at"`
	Steps   []StepJSON `json:"steps"`
	*SearchRunJSON
}

// SearchRunJSON is how one search ran: at which lengths, how it ended,
// for how long.
type SearchRunJSON struct {
	// Fixed marks a cell measured at the load given, not searched.
	Fixed bool `json:"fixed"`
	// BrokeAt is the lowest load that broke an objective (absent: none
	// did).
	BrokeAt float64 `json:"broke_at,omitempty"`
	Prompt  int     `json:"prompt_tokens"`
	Output  int     `json:"output_tokens"`
	Why     string  `json:"why"`
	// DurationS is the search's wall time in seconds.
	DurationS float64 `json:"duration_s"`
}

// AtJSON is the figures of the step at the load found.
type AtJSON struct {
	Step         int     `json:"step"`
	Load         float64 `json:"load"`
	ReqPerSec    float64 `json:"request_throughput"`
	OutTokPerSec float64 `json:"output_throughput"`
	GoodPerSec   float64 `json:"request_goodput"`
	ErrorRate    float64 `json:"error_rate"`
	// Latency has ttft, tpot and e2el.
	Latency map[string]DistJSON `json:"latency"`
}

// CapacityJSON is infertop.capacity: one search's fields at the top; a
// matrix's per cell under Matrix.Cells (the top's MaxLoad and At null,
// its Steps empty), Found true only when every cell found a load.
type CapacityJSON struct {
	SearchJSON
	// Over is the knob searched: "concurrency" or "rate".
	Over       string   `json:"over"`
	Objectives []string `json:"objectives"`
	// Stopped says why the run ended before the search did.
	Stopped string      `json:"stopped,omitempty"`
	Matrix  *MatrixJSON `json:"matrix,omitempty"`
}

// MatrixJSON is a matrix's lengths and its cells, one search each, in
// the order prompts × outputs.
type MatrixJSON struct {
	Prompts []int        `json:"prompts"`
	Outputs []int        `json:"outputs"`
	Cells   []SearchJSON `json:"cells"`
}

// searchJSON is one search (or one cell): the load found, the figures
// there, every step.
func searchJSON(r capacity.Result) SearchJSON {
	steps := make([]StepJSON, 0, len(r.Steps))
	for _, s := range r.Steps {
		steps = append(steps, stepJSON(s))
	}
	out := SearchJSON{Found: r.Found, Steps: steps, SearchRunJSON: &SearchRunJSON{Fixed: r.Fixed, Why: r.Why,
		Prompt: r.Prompt, Output: r.Output, DurationS: r.Elapsed.Seconds()}}
	if r.Found {
		l := r.MaxLoad
		out.MaxLoad = &l
	}
	if r.Bad > 0 {
		out.BrokeAt = r.Bad
	}
	if at := r.At(); at != nil {
		out.At = &AtJSON{Step: at.N, Load: at.Load, ReqPerSec: at.ReqPerSec, OutTokPerSec: at.OutTokPerSec,
			GoodPerSec: at.GoodPerSec, ErrorRate: at.ErrorRate,
			Latency: map[string]DistJSON{"ttft": dist(at.TTFT), "tpot": dist(at.TPOT), "e2el": dist(at.E2E)}}
	}
	return out
}

// capacityJSON is infertop.capacity (see CapacityJSON).
func capacityJSON(o *capacity.Outcome) *CapacityJSON {
	objs := []string{}
	for _, ob := range o.Objectives {
		objs = append(objs, ob.Expr)
	}
	out := &CapacityJSON{Over: string(o.Over), Objectives: objs, Stopped: o.Stopped}
	if o.Matrix == nil && len(o.Cells) == 1 {
		out.SearchJSON = searchJSON(o.Cells[0].Result)
	} else {
		m := &MatrixJSON{Prompts: []int{}, Outputs: []int{}, Cells: []SearchJSON{}}
		for _, c := range o.Cells {
			m.Cells = append(m.Cells, searchJSON(c.Result))
		}
		if o.Matrix != nil {
			m.Prompts, m.Outputs = o.Matrix.Prompts, o.Matrix.Outputs
		}
		out.SearchJSON, out.Matrix = SearchJSON{Steps: []StepJSON{}}, m
	}
	out.Found = o.Found()
	return out
}

// writeCapacityCSV writes a capacity run's CSV: one row per step of every
// search (the capacity curve), the cell's lengths in the first columns.
func writeCapacityCSV(w io.Writer, o *capacity.Outcome) error {
	cw := csv.NewWriter(w)
	head := []string{"prompt_tokens", "output_tokens", "step", "over", "load", "held", "knee", "over_saturated", "drain_phase", "warmup_phase", "phase", "tail_phase", "start_s", "measured_s",
		"completed", "failed", "incomplete", "pending", "request_throughput", "output_throughput", "request_goodput",
		"p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms", "p50_e2el_ms", "p99_e2el_ms", "error_rate", "why"}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, c := range o.Cells {
		r := c.Result
		for k, s := range r.Steps {
			sj := stepJSON(s) // a figure nothing measured is an empty cell
			tpot := func(v time.Duration) string { return cell(known(ms(v), s.TPOT.Count > 0)) }
			errRate := ""
			if sj.ErrorRate != nil {
				errRate = strconv.FormatFloat(*sj.ErrorRate, 'f', 6, 64)
			}
			row := []string{strconv.Itoa(c.Prompt), strconv.Itoa(c.Output), strconv.Itoa(s.N), string(r.Over), f(s.Load), strconv.FormatBool(s.Held),
				strconv.FormatBool(k == r.Knee && !r.Fixed), strconv.FormatBool(s.Saturated), strconv.Itoa(s.DrainPhase), strconv.Itoa(s.WarmupPhase), strconv.Itoa(s.Phase), strconv.Itoa(s.TailPhase),
				f(s.Start.Seconds()), f(s.Measured.Seconds()), i(s.Completed), i(s.Failed), i(s.Incomplete), i(s.Pending), cell(sj.ReqPerSec), cell(sj.OutTokPerSec), cell(sj.GoodPerSec),
				cell(sj.P50TTFT), cell(sj.P99TTFT), tpot(s.TPOT.P50), tpot(s.TPOT.P99), cell(sj.P50E2E), cell(sj.P99E2E),
				errRate, s.Why}
			if err := cw.Write(row); err != nil {
				return fmt.Errorf("write CSV: %w", err)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// plural is n what, in English: "1 request", "0 requests".
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
