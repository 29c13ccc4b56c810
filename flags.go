package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/flaghelp"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/load/loadflag"
	"github.com/infertop/infertop/probe/probeflag"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/runner/runflag"
	"github.com/infertop/infertop/sim/simflag"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/themes"
)

// loadFlags are every flag of a command that puts load on an endpoint:
// the runner's own (runflag), the load's (loadflag), the client's
// (probeflag) and the embedded sim's (simflag, with the sim- prefix)
// bound by their packages, and here the objectives, which join them.
type loadFlags struct {
	run   *runflag.Flags
	load  *loadflag.Flags
	probe *probeflag.Flags
	sim   *simflag.Flags

	goodput, theme string
	slos           []string
	version        bool
	// window replaces the load's window when set (a headless run's
	// --slo-window).
	window time.Duration
	fs     *pflag.FlagSet
}

// addLoadFlags binds every load flag to fs.
func addLoadFlags(fs *pflag.FlagSet) *loadFlags {
	f := &loadFlags{fs: fs, run: runflag.AddEndpoint(fs)}
	f.probe = probeflag.Add(fs)
	f.load = loadflag.Add(fs)
	fs.StringArrayVar(&f.slos, "slo", nil, "objective, repeatable: e.g. 'ttft_p99<=500ms', 'e2el_p95<5s', 'error_rate<1%', 'output_throughput>=2000'")
	fs.StringVar(&f.goodput, "goodput", "", "per-request limits for goodput, e.g. ttft:500ms,tpot:50ms,e2el:10s")
	f.run.AddTelemetry(fs)
	fs.StringVar(&f.theme, "theme", themes.Default, "theme: "+strings.Join(themes.Names(), ", "))
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	flaghelp.Mark(fs, "Objectives: SLOs and goodput", "slo", "goodput")
	flaghelp.Mark(fs, "Display", "theme", "version")
	f.sim = simflag.Add(fs, "sim-")
	flaghelp.Follower(fs, "slo", "theme") // the follower's objectives over the merge, its theme
	return f
}

// parse parses a load command's line; done is true when the command has
// nothing more to do (--help, --version).
func (f *loadFlags) parse(args []string, stdout interface{ Write([]byte) (int, error) }) (done bool, err error) {
	if err := parse(f.fs, args); err != nil {
		return errors.Is(err, pflag.ErrHelp), err
	}
	if f.version {
		fmt.Fprintf(stdout, "infertop %s\n", versionString())
		return true, nil
	}
	return false, nil
}

// zeroMeansDefault are the duration flags whose setting reads zero as its
// package's default: the flag shows that default, so a zero given is a
// mistake to refuse, not a default to take quietly.
var zeroMeansDefault = []string{"tick", "window", "timeout", "connect-timeout", "scrape-every"}

// config reads the flags into the runner's configuration: the load's and
// the client's through their packages, the runner's own words here; every
// range is left to the configuration's owners (the runner's Validate asks
// the engine, the client and the sim), and flagError names the flag.
func (f *loadFlags) config() (runner.Config, error) {
	cfg, kind, err := f.run.Config()
	if err != nil {
		return cfg, usageError{err}
	}
	for _, name := range zeroMeansDefault {
		if fl := f.fs.Lookup(name); fl != nil && f.fs.Changed(name) {
			if d, err := time.ParseDuration(fl.Value.String()); err == nil && d == 0 {
				return cfg, usagef("--%s: 0s is not positive", name)
			}
		}
	}
	if cfg.Load, err = f.load.Config(); err != nil {
		return cfg, usageError{err}
	}
	if f.window != 0 {
		cfg.Load.Window = f.window
	}
	if cfg.Probe, err = f.probe.Config(kind, os.Getenv); err != nil {
		return cfg, usageError{err}
	}
	if cfg.Load.Mix, err = f.probe.Mix(); err != nil {
		return cfg, usageError{err}
	}
	cfg.Probe.Body.ImageSeed = cfg.Load.Seed // the images too are the run's seed's
	if _, err := themes.Lookup(f.theme); err != nil {
		return cfg, usageError{err}
	}
	if cfg.Objectives, err = slo.ParseAll(f.slos); err != nil {
		return cfg, usagef("--slo: %v", err)
	}
	if cfg.Load.Goodput, err = slo.ParseGoodput(f.goodput); err != nil {
		return cfg, usagef("--goodput: %v", err)
	}
	if g := cfg.Load.Goodput; cfg.API.Embeds() && (g.TTFT > 0 || g.TPOT > 0 || g.TTFO > 0) {
		return cfg, usagef("--goodput %s: %v; only an e2el limit applies", f.goodput, runner.ErrEmbeddings)
	}
	if cfg.URL == "" {
		if cfg.Sim, err = f.sim.Params(); err != nil {
			return cfg, usageError{err}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, f.flagError(err)
	}
	cfg.Version, cfg.Settings = versionString(), map[string]string{}
	f.fs.Visit(func(fl *pflag.Flag) { cfg.Settings[fl.Name] = f.setting(fl) })
	return cfg, nil
}

// setting is a flag's value as the reports store it: URLs without their
// credentials, the client's secrets never (probeflag's Setting).
func (f *loadFlags) setting(fl *pflag.Flag) string {
	if v, ok := runflag.Setting(fl); ok {
		return v
	}
	if v, ok := f.probe.Setting(fl); ok {
		return v
	}
	return fl.Value.String()
}

// flagError is flagError (flagerrors.go) for this command's flags: a walk
// is named by the flag that gave it (loadflag's), and the window of a
// headless run is its --slo-window (runHeadless sets the engine's window
// from it).
func (f *loadFlags) flagError(err error) error {
	var le *load.SettingError
	switch {
	case errors.As(err, &le) && le.Setting == load.SettingWindow && f.window != 0:
		return usagef("--slo-window: %v", le.Err)
	case errors.As(err, &le) && le.Setting == load.SettingStages:
		return usageError{f.load.FlagError(err)}
	}
	return flagError(err)
}
