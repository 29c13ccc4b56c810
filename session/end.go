package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// DefaultReportTimeout bounds the end of a run's reports: the server's
// description and the engine's history, read within it.
const DefaultReportTimeout = 3 * time.Second

// The exit codes a run ends with.
const (
	// ExitOK: every objective held, every regression was judged and held.
	ExitOK = 0
	// ExitFailed: an SLO broke, a regression breached or went unjudged,
	// or a search found nothing.
	ExitFailed = 1
	// ExitNothingWorked: nothing completed (bad usage, or an endpoint
	// that never answered).
	ExitNothingWorked = 2
)

// Outcome is a run's end, typed: what the command layer prints and
// writes, and the exit code it exits with.
type Outcome struct {
	Conclusion
	// Text is the summary for stdout: every side's report, the
	// comparison's table.
	Text []byte
	// StopErr is the load's own error at its stop (the requests log's):
	// worth a line, not a failure of the run.
	StopErr error
	// Err says in a line why the run failed; Code is its exit code.
	Err  error
	Code int
}

// End is the one epilogue of every followed load: it stops s, takes each
// side's last snapshot, has s conclude (the reports, within timeout; 0:
// DefaultReportTimeout), and judges the run: nothing completed is a
// failed run (exit 2, its most frequent reason), a broken SLO, a failed
// gate or a search that found nothing is exit 1.
func End(s Session, f Followed, timeout time.Duration) Outcome {
	o := Outcome{StopErr: s.Stop()}
	sides := s.Sides()
	last := make([]load.Snapshot, len(sides))
	for i, sd := range sides {
		if i < len(f.Last) {
			last[i] = f.Last[i]
		}
		if l := sd.Latest(); last[i].Seq < l.Seq {
			last[i] = l
		}
	}
	breaches := f.Breaches
	if len(breaches) < len(sides) {
		breaches = append(breaches, make([][]slo.Verdict, len(sides)-len(breaches))...)
	}
	if timeout <= 0 {
		timeout = DefaultReportTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o.Conclusion = s.Conclude(ctx, last, breaches)
	o.Text, o.Err = o.text()
	if o.Err != nil {
		o.Code = ExitFailed
		return o
	}
	o.Code, o.Err = o.judge(last, f.StoppedBy)
	return o
}

// text is the summary: each side's report (headed by its name when there
// are two), then the comparison's table.
func (o *Outcome) text() ([]byte, error) {
	var b bytes.Buffer
	many := len(o.Reports) > 1
	for i, rep := range o.Reports {
		if many {
			fmt.Fprintf(&b, "== %s ==\n", o.name(i))
		}
		if err := rep.WriteText(&b); err != nil {
			return nil, err
		}
		if many {
			b.WriteString("\n")
		}
	}
	if o.Table != nil {
		if !many {
			b.WriteString("\n")
		}
		if err := o.Table(&b); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// name is side i's name ("" for one load).
func (o *Outcome) name(i int) string {
	if len(o.Reports) < 2 {
		return ""
	}
	return compare.Side(i).String()
}

// judge is the run's verdict: the error and the exit code.
func (o *Outcome) judge(last []load.Snapshot, stoppedBy []compare.Failure) (int, error) {
	for i, s := range last {
		if err := NothingCompleted(s); err != nil {
			if i > 0 {
				err = fmt.Errorf("the %s: %w", o.name(i), err)
			}
			return ExitNothingWorked, err
		}
	}
	if o.Conclusion.Err != nil {
		return ExitFailed, o.Conclusion.Err
	}
	var broken []string
	for i, rep := range o.Reports {
		for _, v := range rep.Verdicts {
			if v.Held {
				continue
			}
			line := v.Expr + " in " + v.Scope
			if n := o.name(i); n != "" {
				line += " (" + n + ")"
			}
			broken = append(broken, line)
		}
	}
	for _, f := range o.Failures {
		broken = append(broken, f.String())
	}
	if !o.Breached {
		// The live breach that ended the run stands, though the last
		// word's fresh draw, with the drain's requests, came out held.
		for _, f := range stoppedBy {
			broken = append(broken, f.String()+" (live, ended the run: --fail-fast)")
		}
	}
	if len(broken) == 0 {
		return ExitOK, nil
	}
	head := o.Headline
	if head == "" {
		head = "SLO breached"
	}
	return ExitFailed, fmt.Errorf("%s: %s", head, strings.Join(broken, "; "))
}

// ErrNothingCompleted is the error of a run where nothing completed.
var ErrNothingCompleted = errors.New("nothing completed")

// NothingCompleted is the one all-failed rule, for every kind of load:
// a run (a side) where nothing completed failed, whether its requests
// failed or never finished; the error says the most frequent reason.
func NothingCompleted(s load.Snapshot) error {
	run := s.Run
	if run.Completed > 0 {
		return nil
	}
	why := sanitize.Text(s.LastError)
	switch {
	case len(s.Errors) > 0:
		e := s.Errors[0]
		why = fmt.Sprintf("%d sent, %d failed; the most frequent reason (%d of them): %s", run.Sent(), run.Failed, e.Count, e.Line())
	case run.Failed == 0 && run.Sent() > 0:
		return fmt.Errorf("%w: %d requests sent, none finished (incomplete or pending when the run ended)", ErrNothingCompleted, run.Sent())
	case run.Failed == 0 && why != "":
		return fmt.Errorf("%w: no request was sent (%s)", ErrNothingCompleted, why)
	case run.Failed == 0:
		return fmt.Errorf("%w: no request was sent", ErrNothingCompleted)
	}
	switch {
	case s.TotalByClass[probe.Connection] == s.TotalFailed:
		return fmt.Errorf("the endpoint was unreachable: %s", why)
	case run.Failed < run.Sent():
		return fmt.Errorf("%w, the rest failed: %s", ErrNothingCompleted, why)
	}
	return fmt.Errorf("every request failed: %s", why)
}
