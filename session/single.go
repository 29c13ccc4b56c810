package session

import (
	"context"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// Single is one runner's load: the plain run.
type Single struct {
	r *runner.Runner
}

// NewSingle follows r, started.
func NewSingle(r *runner.Runner) *Single { return &Single{r: r} }

// StartSingle starts the load cfg describes (ctx bounds only the start:
// detection, model discovery) and follows it.
func StartSingle(ctx context.Context, cfg runner.Config) (*Single, error) {
	r, err := runner.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return NewSingle(r), nil
}

// Runner is the load's runner.
func (s *Single) Runner() *runner.Runner { return s.r }

// What names the endpoint.
func (s *Single) What() string { return sanitize.Text(s.r.Target().URL) }

// Sides is the one runner.
func (s *Single) Sides() []Side { return []Side{s.r} }

// Controller is the engine.
func (s *Single) Controller() load.Controller { return s.r.Engine() }

// Finish ends the run for why.
func (s *Single) Finish(why string) { s.r.Engine().Finish(why) }

// Stop stops the runner.
func (s *Single) Stop() error { return s.r.Stop() }

// Release stops serving the runner's metrics (see runner.Release).
func (s *Single) Release() { s.r.Release() }

// Conclude is the run's report with its breaches.
func (s *Single) Conclude(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) Conclusion {
	return Conclusion{Reports: []*report.Report{s.report(ctx, last, breaches)}}
}

// report is the report of last[0] with breaches[0].
func (s *Single) report(ctx context.Context, last []load.Snapshot, breaches [][]slo.Verdict) *report.Report {
	rep := s.r.Report(ctx, last[0])
	if len(breaches) > 0 {
		rep.Verdicts = append(rep.Verdicts, breaches[0]...)
	}
	return rep
}

// Save writes the run's reports as s shows it into dir.
func (s *Single) Save(ctx context.Context, snap load.Snapshot, dir string) (string, error) {
	return s.r.Save(ctx, snap, dir)
}

// View: a capacity search may drive the engine.
func (s *Single) View() View { return View{Search: s.r.Engine()} }
