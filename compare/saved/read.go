package saved

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/infertop/infertop/load"
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
// second for five days. A quantile's interval walks the counts near the
// quantile, about the square root of them: a crafted count of 2^62
// would cost it hours; 2^32 of them, spread over 20,000 buckets, cost
// 0.2 s an interval.
const maxCount = 1 << 32

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
	b, err := readFile(path)
	if err != nil {
		return nil, cleanError{err} // it names the path, as given
	}
	return Decode(name, b)
}

// readFile reads at most MaxFileBytes of the file at path, and fails past
// them without reading further (/dev/zero ends nowhere). Its buffer is
// allocated once: a regular file's size, else the bound (untouched pages
// cost nothing resident). io.ReadAll's doubling held twice a large file's
// bytes: 209 MB resident for two files of 63 MB, 282 MB for /dev/zero.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // a *PathError: it names the file
	}
	defer f.Close()
	size := MaxFileBytes + 1
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > MaxFileBytes {
			return nil, fmt.Errorf("%s: %d MB, %w (the most read is %d MB)", path, st.Size()>>20, report.ErrTooLarge, MaxFileBytes>>20)
		}
		size = int(st.Size()) + 1 // the one more byte sees the end
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxFileBytes {
				return nil, fmt.Errorf("%s: %w (the most read is %d MB)", path, report.ErrTooLarge, MaxFileBytes>>20)
			}
			// A regular file that grew while it was read: to the bound.
			buf = append(make([]byte, 0, MaxFileBytes+1), buf...)
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}

// Decode is Read of b, a file called name.
func Decode(name string, b []byte) (*Result, error) {
	name = sanitize.Short(name, maxNameBytes)
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d MB, %w (the most read is %d MB)", name, len(b)>>20, report.ErrTooLarge, MaxFileBytes>>20)
	}
	n, longest := report.Scan(b)
	if n > MaxFileValues {
		return nil, fmt.Errorf("%s: %d values, %w (the most read is %d)", name, n, report.ErrTooLarge, MaxFileValues)
	}
	// Two files of one long string each (a model's name) held a
	// comparison at 265 MB: each is copied as it is decoded and shown.
	if longest > report.MaxStringBytes {
		return nil, fmt.Errorf("%s: a string of %d KB, %w (the most is %d KB)", name, longest>>10, report.ErrTooLarge, report.MaxStringBytes>>10)
	}
	var f file
	err := json.Unmarshal(b, &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, sanitize.Short(err.Error(), maxNameBytes), ErrUnusable)
	}
	in := &f.Infertop
	if in.Manifest.Tool != "infertop" {
		return nil, fmt.Errorf("%s: %w (no infertop.manifest)", name, report.ErrNotResult)
	}
	if in.Histograms == nil {
		return nil, fmt.Errorf("%s: no histograms (infertop.histograms): %w", name, ErrUnusable)
	}
	r := &Result{Name: name, Manifest: in.Manifest, Run: in.Run, Phases: in.Phases, PhaseHist: map[int]map[string]string{}}
	kept := 0
	if r.Hist, err = keep(in.Histograms.Run, &kept); err != nil {
		return nil, fmt.Errorf("%s: the run: %w", name, err)
	}
	switch {
	case bool(in.Capacity):
		r.Kind = "a capacity search's result (--find-max, --matrix): its phases are the search's steps, not one load"
	case bool(in.Compare):
		r.Kind = "a comparison's result (--compare, --split-by): compare the sides' own results"
	}
	if len(judgedPhases(r)) <= maxPhases { // else the whole runs are judged
		for _, h := range in.Histograms.Phases {
			if r.PhaseHist[h.ID], err = keep(h.Hist, &kept); err != nil {
				return nil, fmt.Errorf("%s: phase %d: %w", name, h.ID, err)
			}
		}
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

// The bounds of the histograms a result keeps until they are judged: an
// encoding of the engine's geometry, every bucket counted, is under
// 300 KB; a day-long run's phases' are a few MB in all.
const (
	maxHistBytes = 512 << 10
	maxKeptBytes = 32 << 20
)

// keep is the histograms of hs a statistic may read, each within
// maxHistBytes, kept's sum within maxKeptBytes: the bytes of the other
// file are read while these are held.
func keep(hs map[string]string, kept *int) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range []load.Metric{load.TTFT, load.TPOT, load.ITL, load.E2E, load.TTFB, load.TTFTIntended, load.E2EIntended} {
		k := report.MetricKey(m)
		enc, ok := hs[k]
		if !ok {
			continue
		}
		if *kept += len(enc); len(enc) > maxHistBytes || *kept > maxKeptBytes {
			return nil, fmt.Errorf("%s: histograms past their bounds (%d KB, %d KB in all): %w", k, len(enc)>>10, *kept>>10, ErrUnusable)
		}
		out[k] = enc
	}
	return out, nil
}

// checkPhase holds the counts a comparison reads to their bounds: the
// error rate's, the invalid rate's, and the latencies' counts (which say whether the loop
// was open).
func checkPhase(p report.PhaseJSON) error {
	counts := []int64{p.Sent, p.Completed, p.Failed, p.Incomplete, p.Dropped, int64(p.Knobs.Concurrency),
		int64(p.Knobs.PromptTokens), int64(p.Knobs.OutputTokens)}
	for _, d := range p.Latency {
		counts = append(counts, d.Count)
	}
	if o := p.Output; o != nil { // the invalid rate's
		counts = append(counts, o.Valid, o.Invalid)
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
	if o := p.Output; o != nil && o.Valid+o.Invalid > p.Completed {
		return fmt.Errorf("%d answers judged of %d completed: %w", o.Valid+o.Invalid, p.Completed, ErrUnusable)
	}
	return nil
}

// cleanError is err with its text sanitised (a path may hold escapes),
// its chain kept for errors.Is.
type cleanError struct{ err error }

func (e cleanError) Error() string { return sanitize.Short(e.err.Error(), 4*maxNameBytes) }
func (e cleanError) Unwrap() error { return e.err }
