package htmlreport

import (
	"fmt"
	"math"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
)

// maxTurnRows bounds a sessions table's rows, whatever the file holds:
// load.MaxTurns, the most turns a run has.
const maxTurnRows = 100

// turnsView is one run's sessions (run --sessions): the per-turn table, as
// the text report's, and the time of whole sessions. Turns are not
// phases: a phase is a knob setting, a turn a place in a conversation.
type turnsView struct {
	Name     string // the run's, when two are drawn
	Head     string
	Session  string // the time of whole sessions, think times in it
	Rows     []turnRow
	Note     string // rows left out of a crafted file
	Sessions int64
	// Cached: some turn's server said what its prefix cache held, and
	// the table has the hit rate's column.
	Cached bool
}

type turnRow struct {
	Turn                                   int
	Done, Failed                           int64
	Prompt                                 string
	Cache                                  string // the prefix cache's hit rate, "–" where its server did not say
	TTFT50, TTFT99, TTFTMean, E2E50, E2E99 string
}

// traceView is one run's replay (run --trace): what it sent and how far
// behind its arrivals fell.
type traceView struct {
	Name   string
	Source string
	Sent   string
	Behind string
	Fell   bool
	Rows   string // rows skipped or filtered out
}

func turns(name string, s *report.SessionsJSON) turnsView {
	upTo := ""
	if s.Conversations { // a dataset's: each ran its own turns
		upTo = "up to "
	}
	v := turnsView{Name: name, Sessions: s.Completed,
		Head: fmt.Sprintf("Sessions of %s%d turns (think %s) · %d sessions done", upTo, s.TurnsPerSession, fmtDuration(s.ThinkS*1000), s.Completed)}
	if s.Capped > 0 {
		v.Head += fmt.Sprintf(" · %d started again at the context's cap", s.Capped)
	}
	if d := s.SessionTime; d.Count > 0 {
		v.Session = fmt.Sprintf("A whole session (first turn's start to last answer, think times in it): p50 %s, p90 %s, p99 %s, mean %s, max %s over %d sessions",
			fmtMS(d.P50), fmtMS(d.P90), fmtMS(d.P99), fmtMS(d.Mean), fmtMS(d.Max), d.Count)
	}
	for i, t := range s.Turns {
		if i == maxTurnRows {
			v.Note = fmt.Sprintf("the first %d turns of %d shown", maxTurnRows, len(s.Turns))
			break
		}
		row := turnRow{Turn: t.Turn, Done: t.Completed, Failed: t.Failed, Prompt: fmtNum(t.PromptTokens), Cache: "–",
			TTFT50: fmtMS(t.TTFT.P50), TTFT99: fmtMS(t.TTFT.P99), TTFTMean: fmtMS(t.TTFT.Mean), E2E50: fmtMS(t.E2E.P50), E2E99: fmtMS(t.E2E.P99)}
		if r := t.PrefixCacheHitRate; r != nil && !math.IsNaN(*r) {
			row.Cache, v.Cached = fmt.Sprintf("%.1f %%", 100*min(max(*r, 0), 1)), true
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

func trace(name string, t *report.TraceJSON) traceView {
	v := traceView{Name: name, Fell: t.FellBehind,
		Source: fmt.Sprintf("%s (%s), %s× speed", sanitize.Text(t.Name), sanitize.Text(t.Format), fmtNum(t.Speed)),
		Sent:   fmt.Sprintf("%d arrivals of %d entries (%s) over %s", t.Arrivals, t.Entries, wholePasses(t.Passes), fmtDuration(t.SpanS*1000))}
	if t.FellBehind {
		v.Behind = "fell behind: up to " + fmtMS(t.MaxBehindS*1000) + " late (arrivals kept their intended times, latency counted from them)"
	} else {
		v.Behind = "kept up: at most " + fmtMS(t.MaxBehindS*1000) + " late"
	}
	if t.Skipped > 0 || t.Filtered > 0 {
		v.Rows = fmt.Sprintf("%d failed rows skipped, %d rows filtered out", t.Skipped, t.Filtered)
	}
	return v
}

// buildTurns adds each run's sessions table and trace replay, and a chart
// of TTFT by turn (what a prefix cache changes), both runs on its axes.
func (pg *page) buildTurns() {
	two := len(pg.Runs) == 2
	ch := &chart{ID: "turns-ttft", Title: "TTFT by turn", YUnit: "ms", XUnit: "turn", Points: true}
	for _, r := range pg.Runs {
		inf := &r.res.Infertop
		name := ""
		if two {
			name = sanitize.Text(r.Name)
		}
		if t := inf.Trace; t != nil {
			pg.Traces = append(pg.Traces, trace(name, t))
		}
		s := inf.Sessions
		if s == nil {
			continue
		}
		pg.Turns = append(pg.Turns, turns(name, s))
		var x, p50, p99 []float64
		for i, t := range s.Turns {
			if i == maxTurnRows {
				break
			}
			x, p50, p99 = append(x, float64(t.Turn)), append(p50, orGap(t.TTFT.P50, t.TTFT.Count)), append(p99, orGap(t.TTFT.P99, t.TTFT.Count))
		}
		label := func(s string) string {
			if two {
				return name + " " + s
			}
			return s
		}
		ch.Lines = append(ch.Lines, line{Name: label("TTFT p99"), X: x, Y: p99, Color: 2, Dash: r.Index == 1},
			line{Name: label("TTFT p50"), X: x, Y: p50, Color: 0, Dash: r.Index == 1})
	}
	if len(ch.Lines) > 0 {
		pg.TurnCharts = []*chart{ch}
	}
}

// orGap is v, or a gap where nothing was measured.
func orGap(v float64, n int64) float64 {
	if n == 0 {
		return nan()
	}
	return v
}

// wholePasses is "1 whole pass", "3 whole passes".
func wholePasses(n int) string {
	if n == 1 {
		return "1 whole pass"
	}
	return fmt.Sprintf("%d whole passes", n)
}
