package main

import (
	"context"
	"errors"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/fleet/fleetflag"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/session"
	"github.com/infertop/infertop/session/sessionflag"
	"github.com/infertop/infertop/slo"
)

// start starts the load spec describes with the app's hooks and its notes
// on stderr, its errors in the command line's words; ctx bounds only the
// start (detection, model discovery).
func (a *app) start(ctx context.Context, spec session.Spec) (session.Session, error) {
	s, err := session.Start(ctx, spec, a.stderr, a.wrapDo)
	var se *session.StartError
	switch {
	case err == nil:
		return s, nil
	case errors.As(err, &se) && se.Side == compare.Canary:
		return nil, usagef("--compare: %v", startError(se.Err))
	case errors.As(err, &se):
		err = se.Err
	}
	return nil, startError(err)
}

// agentsSpec is the agents agf names (package fleet) as a followed
// load's spec: their merge checked against the --slo objectives, with
// --agents-compare both sides' merges and their comparison (cf's
// regressions). quiet keeps their notes off the terminal (the
// dashboard's panel names refusals).
func (a *app) agentsSpec(f *loadFlags, agf *fleetflag.Flags, cf *sessionflag.Flags, quiet bool) (*session.AgentsConfig, error) {
	objs, err := slo.ParseAll(f.slos)
	if err != nil {
		return nil, usagef("--slo: %v", err)
	}
	logf := a.logf
	if quiet {
		logf = nil
	}
	o, err := cf.Options() // with --agents-compare: the comparison's regressions
	if err != nil {
		return nil, usageError{err}
	}
	ag, err := agf.Spec(objs, o, versionString(), logf)
	if err != nil {
		return nil, usageError{err}
	}
	return ag, nil
}

// startError says in the command line's words why a load could not start:
// the runner, the client and the engine name their settings, the user
// knows them as flags. The endpoint URL is the one setting named in the
// client's words: config has checked the --url one, and a comparison's
// canary has a URL of its own (--compare, which its caller names).
func startError(err error) error {
	var pe *probe.SettingError
	if errors.As(err, &pe) && pe.Setting == probe.SettingURL {
		return usageError{err}
	}
	return flagError(err)
}
