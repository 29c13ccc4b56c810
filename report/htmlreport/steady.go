package htmlreport

import (
	"fmt"

	"github.com/infertop/infertop/report"
)

// steadyView is a closed-loop run's steady-state window beside the whole
// run: the window's figures and the run's in one table, or why there is
// no window.
type steadyView struct {
	Head string
	// NotSteady says the load never was: no table then.
	NotSteady string
	Rows      []steadyRow
}

// steadyRow is one row of the table: the window's or the whole run's.
type steadyRow struct {
	Name               string
	Seconds, Completed string
	Req, Out           string
	TTFT50, TTFT99     string
	TPOT50, ITL50      string
	E2E50, E2E99       string
}

// Steady is the run's steady-state window beside the whole run's
// figures; nil where none was sought (the open loop, a merge, an older
// file).
func (r pageRun) Steady() *steadyView {
	inf := &r.res.Infertop
	s := inf.SteadyState
	if s == nil {
		return nil
	}
	at := fmt.Sprintf("the requests in flight at %.0f %% of the concurrency, %d", 100*s.Share, s.TargetConcurrency)
	if !s.Reached || s.SteadyWindowJSON == nil {
		return &steadyView{NotSteady: "Not steady: " + at + " was never reached, so there is no steady-state window; the run's figures take in its ramp and its drain."}
	}
	w := s.SteadyWindowJSON
	run := inf.Run
	row := func(name string, secs float64, completed int64, req, out float64, l map[string]report.DistJSON) steadyRow {
		return steadyRow{Name: name, Seconds: fmt.Sprintf("%.1f", secs), Completed: fmt.Sprint(completed),
			Req: fmt.Sprintf("%.2f", req), Out: fmt.Sprintf("%.1f", out),
			TTFT50: fmtMS(l["ttft"].P50), TTFT99: fmtMS(l["ttft"].P99), TPOT50: fmtMS(l["tpot"].P50), ITL50: fmtMS(l["itl"].P50),
			E2E50: fmtMS(l["e2el"].P50), E2E99: fmtMS(l["e2el"].P99)}
	}
	return &steadyView{
		Head: fmt.Sprintf("The steady-state window: from %.1f s to %.1f s of the run, %s or more; its figures are of what happened inside it, beside the whole run's.", w.StartS, w.EndS, at),
		Rows: []steadyRow{
			row("steady state", w.DurationS, w.Completed, w.RequestThroughput, w.OutputThroughput, w.Latency),
			row("whole run", run.DurationS, run.Completed, run.RequestThroughput, run.OutputThroughput, run.Latency),
		},
	}
}
