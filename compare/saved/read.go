package saved

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
)

// The bounds of one file read. Two are read and judged in one process,
// which holds to the 200 MB every hostile input is held to: each file at
// most half of what a result may be (a day-long run's JSON is about
// 30 MB, a pair's with the canary inside about twice that), its values
// at most half of a result's (decoding costs about 20 bytes a value, and
// only a result's run, phases and histograms are kept).
const (
	MaxFileBytes  = report.MaxResultBytes / 2
	MaxFileValues = report.MaxResultValues / 2
)

// maxPhases is the most phases judged one by one; a result with more
// (a ramp: a phase a second) is judged as one run. maxNameBytes bounds
// what a line quotes of a file's own text (a name, a URL, a model).
const (
	maxPhases    = 16
	maxNameBytes = 120
)

// maxCount bounds every count a result gives: a run of 10,000 requests a
// second for a month. A quantile's interval walks the counts near the
// quantile, about the square root of them: a crafted count of 2^62
// would cost it hours.
const maxCount = 1 << 35

// ErrUnusable is a file that is no result a comparison can judge: not an
// infertop result, one past the bounds, or one without histograms. No
// --force takes it.
var ErrUnusable = errors.New("not a result a comparison can judge")

// Result is one saved result as a comparison reads it: what tells its
// load apart, its phases and the histograms behind them, still encoded
// (each is decoded, bounded, when a statistic needs it).
type Result struct {
	// Name is the file's name without .json, sanitised: it is printed.
	Name string
	// Manifest is the run's: its endpoint, API, model and knobs.
	Manifest report.Manifest
	// Run is the whole run's figures, Phases each phase's (warm-up
	// included, as written).
	Run    report.PhaseJSON
	Phases []report.PhaseJSON
	// Hist are the run's histograms, PhaseHist each phase's by id.
	Hist      map[string]string
	PhaseHist map[int]map[string]string
	// Kind is why this result is no plain run ("" for one): a capacity
	// search's, a comparison's. Judged only with --force.
	Kind string
}

// file is the part of a result a comparison reads, in the writer's own
// types: decoding the rest (a day of seconds, telemetry, the agents'
// results) would cost memory for nothing.
type file struct {
	Infertop struct {
		Manifest   report.Manifest        `json:"manifest"`
		Run        report.PhaseJSON       `json:"run"`
		Phases     []report.PhaseJSON     `json:"phases"`
		Histograms *report.HistogramsJSON `json:"histograms"`
		Capacity   present                `json:"capacity"`
		Compare    present                `json:"compare"`
	} `json:"infertop"`
}

// present records that a member is there, and skips its value.
type present bool

// UnmarshalJSON notes the member; null counts as absent.
func (p *present) UnmarshalJSON(b []byte) error {
	*p = string(b) != "null"
	return nil
}

// Read reads the result at path, bounded (MaxFileBytes, MaxFileValues),
// and checks what a comparison will use of it: its counts, and that it
// has histograms. Every error is one line naming the file.
func Read(path string) (*Result, error) {
	name := sanitize.Short(report.ResultName(path), maxNameBytes)
	b, err := report.ReadResult(path, MaxFileBytes)
	if err != nil {
		return nil, cleanError{err} // it names the path, as given
	}
	return Decode(name, b)
}

// Decode is Read of b, a file called name.
func Decode(name string, b []byte) (*Result, error) {
	name = sanitize.Short(name, maxNameBytes)
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d MB, %w (the most read is %d MB)", name, len(b)>>20, report.ErrTooLarge, MaxFileBytes>>20)
	}
	if n := report.CountValues(b); n > MaxFileValues {
		return nil, fmt.Errorf("%s: %d values, %w (the most read is %d)", name, n, report.ErrTooLarge, MaxFileValues)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, sanitize.Short(err.Error(), maxNameBytes), ErrUnusable)
	}
	in := &f.Infertop
	if in.Manifest.Tool != "infertop" {
		return nil, fmt.Errorf("%s: %w (no infertop.manifest)", name, report.ErrNotResult)
	}
	if in.Histograms == nil {
		return nil, fmt.Errorf("%s: no histograms (infertop.histograms): %w", name, ErrUnusable)
	}
	r := &Result{Name: name, Manifest: in.Manifest, Run: in.Run, Phases: in.Phases, Hist: in.Histograms.Run,
		PhaseHist: map[int]map[string]string{}}
	switch {
	case bool(in.Capacity):
		r.Kind = "a capacity search's result (--find-max, --matrix): its phases are the search's steps, not one load"
	case bool(in.Compare):
		r.Kind = "a comparison's result (--compare, --split-by): compare the sides' own results"
	}
	for _, h := range in.Histograms.Phases {
		r.PhaseHist[h.ID] = h.Hist
	}
	if err := checkPhase(r.Run); err != nil {
		return nil, fmt.Errorf("%s: the run: %w", name, err)
	}
	for _, p := range r.Phases {
		if err := checkPhase(p); err != nil {
			return nil, fmt.Errorf("%s: phase %d: %w", name, p.ID, err)
		}
	}
	if k := in.Manifest.Knobs; k.Concurrency < 0 || k.Concurrency > maxCount || !(k.Rate >= 0 && k.Rate <= maxCount) ||
		k.PromptTokens < 0 || k.OutputTokens < 0 {
		return nil, fmt.Errorf("%s: knobs out of bounds: %w", name, ErrUnusable)
	}
	return r, nil
}

// checkPhase holds the counts a comparison reads to their bounds: the
// error rate's, and the latencies' counts (which say whether the loop
// was open).
func checkPhase(p report.PhaseJSON) error {
	counts := []int64{p.Sent, p.Completed, p.Failed, p.Incomplete, p.Dropped, int64(p.Knobs.Concurrency),
		int64(p.Knobs.PromptTokens), int64(p.Knobs.OutputTokens)}
	for _, d := range p.Latency {
		counts = append(counts, d.Count)
	}
	for _, n := range counts {
		if n < 0 || n > maxCount {
			return fmt.Errorf("a count of %d: %w", n, ErrUnusable)
		}
	}
	if !(p.Knobs.Rate >= 0 && p.Knobs.Rate <= maxCount) {
		return fmt.Errorf("a rate of %s: %w", strconv.FormatFloat(p.Knobs.Rate, 'g', 4, 64), ErrUnusable)
	}
	if p.Sent < p.Completed+p.Failed+p.Incomplete {
		return fmt.Errorf("sent %d is less than completed %d + failed %d + incomplete %d: %w", p.Sent, p.Completed, p.Failed,
			p.Incomplete, ErrUnusable)
	}
	return nil
}

// cleanError is err with its text sanitised (a path may hold escapes),
// its chain kept for errors.Is.
type cleanError struct{ err error }

func (e cleanError) Error() string { return sanitize.Short(e.err.Error(), 4*maxNameBytes) }
func (e cleanError) Unwrap() error { return e.err }
