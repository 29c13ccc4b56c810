package main

import (
	"errors"

	"github.com/infertop/infertop/load/loadflag"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/probe/probeflag"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/runner/runflag"
)

// flagError says in the command line's words what a package refused: the
// packages check their own ranges in their own terms, and the binders of
// their flags (runflag, probeflag, loadflag; simflag for the sim) name
// the flag, then what is wrong with its value, on one line. An objective
// that cannot be measured gets advice here; an error that names no
// setting is shown as it is.
func flagError(err error) error {
	var (
		ue *runner.UnmeasurableError
		pe *probe.SettingError
	)
	switch {
	case errors.As(err, &ue) && errors.Is(ue.Why, runner.ErrNotStreamed):
		return usagef("--slo %s: with --no-stream there are no stream messages to time; drop one of them", ue.Expr)
	case errors.As(err, &ue) && errors.Is(ue.Why, runner.ErrNotJudged):
		return usagef("--slo %s: %v; pass --response-format or --tools", ue.Expr, ue.Why)
	case errors.As(err, &ue) && errors.Is(ue.Why, runner.ErrEmbeddings):
		return usagef("--slo %s: %v; use e2el, request or error objectives", ue.Expr, ue.Why)
	case errors.As(err, &ue):
		return usagef("--slo %s: %v; pass --gpu local or --gpu-metrics URL (the embedded sim: --sim-gpus N)", ue.Expr, ue.Why)
	case errors.Is(err, probe.ErrUndetected):
		return usagef("%v; pass --api", err)
	}
	if named, ok := runflag.FlagError(err); ok {
		return usageError{named}
	}
	if errors.As(err, &pe) {
		return usageError{probeflag.FlagError(err)}
	}
	return usageError{loadflag.FlagError(err)}
}
