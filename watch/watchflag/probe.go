package watchflag

import (
	"errors"
	"fmt"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/watch"
)

// probeTimeout bounds one probe request: a Service that hangs shows as
// requests in flight, then failed, within it (the run's default, five
// minutes, would read as a quiet probe).
const probeTimeout = 30 * time.Second

// Run is the probe's load, for session.Start: an open loop at Rate of
// short requests (64 prompt tokens, 16 out), its figures over the
// engine's window that holds the watch's window, its key read through
// getenv. A model the endpoint does not list is an error at the start,
// not a warning naming run's --strict, which watch has not.
func (p ProbeSpec) Run(window time.Duration, getenv func(string) string) runner.Config {
	return runner.Config{URL: p.URL, API: p.API,
		Probe: probe.Config{Model: p.Model, APIKey: getenv(p.KeyEnv), Timeout: probeTimeout},
		Load: load.Config{Knobs: load.Knobs{Mode: load.OpenLoop, Rate: p.Rate, PromptTokens: 64, OutputTokens: 16},
			Window: probeWindow(window)},
		Telemetry: runner.Telemetry{ServerMetrics: runner.ServerMetricsOff},
		Strict:    true}
}

// Figures are the probe's figures in snap, its load's snapshot, as the
// watch shows them: its counts since it began, its percentiles over the
// window.
func (p ProbeSpec) Figures(snap load.Snapshot) watch.Probe {
	run := snap.Run
	f := watch.Probe{URL: probe.RedactURL(p.URL), Rate: p.Rate, Sent: run.Sent(), Completed: run.Completed, Failed: run.Failed,
		Incomplete: run.Incomplete + run.Pending, WindowCompleted: snap.Completed, LastError: snap.LastError}
	if d := snap.Latency[load.TTFT]; d.Count > 0 {
		f.TTFTP50, f.TTFTP99 = d.P50.Seconds(), d.P99.Seconds()
	}
	f.E2EP99 = snap.Latency[load.E2E].P99.Seconds()
	return f
}

// ProbeError names the watch's flag behind a probe that could not start
// (run's names, --model and --api, are not watch's).
func ProbeError(err error) error {
	var re *runner.SettingError
	switch {
	case errors.As(err, &re) && re.Setting == runner.SettingModel:
		return fmt.Errorf("--probe-model: %w", re.Err)
	case errors.Is(err, probe.ErrUndetected):
		return fmt.Errorf("--probe-url: %w; pass --probe-api", err)
	}
	return fmt.Errorf("--probe-url: %w", err)
}

// probeWindow is the engine's window the probe's figures are over: the
// least of load.Windows holding the watch's window (the largest past it).
func probeWindow(w time.Duration) time.Duration {
	ws := load.Windows()
	for _, x := range ws {
		if x >= w {
			return x
		}
	}
	return ws[len(ws)-1]
}
