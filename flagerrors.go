package main

import (
	"errors"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
)

// A setting as its package's SettingError names it: the packages check
// their own ranges in their own terms, and the command line says which
// flag was wrong, here and only here. The sim's parameters are named by
// sim/simflag, which holds their flags and their prefix.
type setting struct{ pkg, name string }

const (
	pkgLoad   = "load"
	pkgProbe  = "probe"
	pkgRunner = "runner"
)

// settingFlags names the flag behind each setting. Settings no flag sets
// (the engine's mode, the client's pool, both set by infertop itself)
// are absent, and their errors keep their package's words.
var settingFlags = map[setting]string{
	{pkgLoad, load.SettingConcurrency}:  "--concurrency",
	{pkgLoad, load.SettingPromptTokens}: "--prompt-tokens",
	{pkgLoad, load.SettingOutputTokens}: "--output-tokens",
	{pkgLoad, load.SettingRate}:         "--rate",
	{pkgLoad, load.SettingTick}:         "--tick",
	{pkgLoad, load.SettingWindow}:       "--window",
	{pkgLoad, load.SettingDuration}:     "--duration",
	{pkgLoad, load.SettingMaxRequests}:  "--requests",
	{pkgLoad, load.SettingDrain}:        "--drain",
	{pkgLoad, load.SettingStages}:       "--stages",
	{pkgLoad, load.SettingGoodput}:      "--goodput",
	{pkgLoad, load.SettingPromptLength}: "--prompt-tokens",
	{pkgLoad, load.SettingOutputLength}: "--output-tokens",
	{pkgLoad, load.SettingPrefixTokens}: "--prefix-tokens",
	{pkgLoad, load.SettingWarmup}:       "--warmup",
	{pkgLoad, load.SettingArrivals}:     "--arrivals",
	{pkgLoad, load.SettingBurstiness}:   "--burstiness",
	{pkgLoad, load.SettingMaxInFlight}:  "--max-in-flight",
	{pkgLoad, load.SettingDataset}:      "--dataset",
	{pkgLoad, load.SettingTrace}:        "--trace",
	{pkgLoad, load.SettingPrefixGroups}: "--prefix-groups",
	{pkgLoad, load.SettingSessions}:     "--sessions",

	{pkgProbe, probe.SettingURL}:            "--url",
	{pkgProbe, probe.SettingAPI}:            "--api",
	{pkgProbe, probe.SettingTTFT}:           "--ttft",
	{pkgProbe, probe.SettingTimeout}:        "--timeout",
	{pkgProbe, probe.SettingConnectTimeout}: "--connect-timeout",
	{pkgProbe, probe.SettingCACert}:         "--cacert",
	{pkgProbe, probe.SettingMaxTokensField}: "--max-tokens-field",
	{pkgProbe, probe.SettingStreamFormat}:   "--stream-format",
	{pkgProbe, probe.SettingChunkPath}:      "--chunk-path",
	{pkgProbe, probe.SettingTemplate}:       "--body-template",

	{pkgRunner, runner.SettingMetricsAddr}: "--metrics-addr",
	{pkgRunner, runner.SettingRequestsLog}: "--requests-log",
	{pkgRunner, runner.SettingScrapeEvery}: "--scrape-every",
	{pkgRunner, runner.SettingGPUs}:        "--gpu local, --gpu-metrics",
}

// settingOf finds the setting an error names, and what it says is wrong
// with it.
func settingOf(err error) (setting, error, bool) {
	var (
		le *load.SettingError
		pe *probe.SettingError
		re *runner.SettingError
	)
	switch {
	case errors.As(err, &re):
		return setting{pkgRunner, re.Setting}, re.Err, true
	case errors.As(err, &pe):
		return setting{pkgProbe, pe.Setting}, pe.Err, true
	case errors.As(err, &le):
		return setting{pkgLoad, le.Setting}, le.Err, true
	}
	return setting{}, nil, false
}

// flagError says in the command line's words what a package refused: the
// flag's name, then what is wrong with its value, on one line. A setting
// that needs advice as well gets it (the model to pass, the URL that
// leaves the embedded sim); an error that names no setting is shown as
// it is.
func flagError(err error) error {
	s, why, ok := settingOf(err)
	var ue *runner.UnmeasurableError
	switch {
	case errors.As(err, &ue) && errors.Is(ue.Why, runner.ErrNotStreamed):
		return usagef("--slo %s: with --no-stream there are no stream messages to time; drop one of them", ue.Expr)
	case errors.As(err, &ue) && errors.Is(ue.Why, runner.ErrEmbeddings):
		return usagef("--slo %s: %v; use e2el, request or error objectives", ue.Expr, ue.Why)
	case errors.As(err, &ue):
		return usagef("--slo %s: %v; pass --gpu local or --gpu-metrics URL (the embedded sim: --sim-gpus N)", ue.Expr, ue.Why)
	case errors.Is(err, probe.ErrUndetected):
		return usagef("%v; pass --api", err)
	case !ok:
		return usageError{err}
	case s == setting{pkgRunner, runner.SettingModel} && errors.Is(err, runner.ErrNoModels):
		return usagef("%v; pass --model", why)
	case s == setting{pkgRunner, runner.SettingModel} && errors.Is(err, runner.ErrModelNotListed):
		return usagef("--model: %v", why)
	case s == setting{pkgRunner, runner.SettingModel}:
		return usagef("%v (is the endpoint up? pass --model to skip this)", why)
	case s == setting{pkgRunner, runner.SettingAPI}:
		return usagef("--api: %v; pass --url", why)
	}
	if flag := settingFlags[s]; flag != "" {
		return usagef("%s: %v", flag, why)
	}
	return usageError{err}
}
