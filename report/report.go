// Package report turns a finished (or running) load into records: the
// text summary printed at the end of a headless run, a JSON result with
// vLLM's keys where the same quantity exists, a CSV row per phase, and a
// JSONL log of every request, plus the run's manifest and SLO verdicts.
// It reads a result back too (read.go), bounded for a file someone else
// wrote, into the same types the writer encodes.
package report

import (
	"encoding/json"
	"runtime"
	"strconv"
	"time"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

// Manifest says what ran, against what, where and when.
type Manifest struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	// URL has any credentials removed.
	URL    string `json:"url"`
	API    string `json:"api"`
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	// Images is what each request carried of synthetic images (--images):
	// nil for none.
	Images *ImagesJSON `json:"images,omitempty"`
	// Server is what the server says of itself (model list, version).
	Server map[string]json.RawMessage `json:"server,omitempty"`
	// Knobs are the starting knob values; Settings every flag that was set
	// (secrets are never flags).
	Knobs    KnobsJSON          `json:"knobs"`
	Settings map[string]string  `json:"settings,omitempty"`
	Seed     uint64             `json:"seed"`
	Goodput  map[string]float64 `json:"goodput_limits_ms,omitempty"`
	Start    time.Time          `json:"start"`
	End      time.Time          `json:"end"`
	OS       string             `json:"os"`
	Arch     string             `json:"arch"`
	CPUs     int                `json:"cpus"`
	Go       string             `json:"go"`
}

// ImagesJSON is the synthetic images each request carried.
type ImagesJSON struct {
	PerRequest int `json:"per_request"`
	Width      int `json:"width"`
	Height     int `json:"height"`
	// Bytes is the PNG bytes a request carried, before base64.
	Bytes int64 `json:"bytes_per_request"`
}

// KnobsJSON is a knob setting as reports write it.
type KnobsJSON struct {
	// Mode is "closed" or "open"; Rate is the open loop's requests per
	// second, Concurrency the closed loop's requests in flight.
	Mode         string  `json:"mode"`
	Concurrency  int     `json:"concurrency"`
	Rate         float64 `json:"rate"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

func knobs(k load.Knobs) KnobsJSON {
	return KnobsJSON{Mode: k.Mode.String(), Concurrency: k.Concurrency, Rate: k.Rate, PromptTokens: k.PromptTokens, OutputTokens: k.OutputTokens}
}

// NewManifest fills in the host's side.
func NewManifest(version string) Manifest {
	return Manifest{Tool: "infertop", Version: version, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version()}
}

// Report is everything a run leaves: its manifest, its last snapshot and
// the SLO verdicts.
type Report struct {
	Manifest Manifest
	Final    load.Snapshot
	Verdicts []slo.Verdict
	// Energy is the GPUs' side, when there was GPU telemetry.
	Energy *Energy
	// ServerPerf is the server's own per-request performance from its
	// /perf_metrics (TensorRT-LLM), when --server-timings asked for it:
	// its distribution over the run, not joined to the requests.
	ServerPerf *telemetry.PerfRun
	// History is the run's whole record (every second, every phase's
	// histograms), Readings the server's and GPUs' readings over the run;
	// nil when not had (the JSON then leaves them out).
	History  *load.History
	Readings []telemetry.Reading
	// Compare is a comparison's outcome (--compare, --split-by):
	// infertop.compare in the JSON. Nil in any other run.
	Compare *Compare
	// Capacity is a capacity run's outcome (--find-max, --matrix): a
	// section of the summary, infertop.capacity in the JSON, and the CSV's
	// rows, one per step.
	Capacity *capacity.Outcome
	// Merged is a report of other runs' results merged (the agents' of
	// run --agents): its JSON is the merged result, Final the snapshot
	// SnapshotOf makes of it. Nil in any other run.
	Merged *MergedResult
}

// Verdicts checks objs over the whole run and every phase with requests;
// energy (nil without GPU telemetry) supplies the energy per token.
func Verdicts(objs []slo.Objective, s load.Snapshot, energy *Energy) []slo.Verdict {
	if len(objs) == 0 {
		return nil
	}
	fig := func(p load.Phase) slo.Figures {
		f := slo.FromPhase(p) // the incomplete and the dropped: failed, for the error rate
		f.JoulesPerToken, f.HasEnergy = energy.PerToken(p)
		return f
	}
	out := slo.CheckAll(objs, fig(s.Run), "run")
	for _, p := range s.Phases {
		if p.Scheduled() == 0 || p.Warmup {
			continue
		}
		out = append(out, slo.CheckAll(objs, fig(p), "phase "+strconv.Itoa(p.ID))...)
	}
	return out
}

// Held reports whether every verdict held.
func Held(vs []slo.Verdict) bool {
	for _, v := range vs {
		if !v.Held {
			return false
		}
	}
	return true
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// classCounts names the failure counts by class.
func classCounts(c [probe.NumClasses]int64) map[string]int64 {
	out := map[string]int64{}
	for _, cl := range probe.FailureClasses() {
		out[cl.String()] = c[cl]
	}
	return out
}
