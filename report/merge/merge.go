// Package merge merges the JSON results of runs that loaded one endpoint
// side by side (agents, or runs started by hand on several machines) into
// one result, exactly: the run's and each phase's latency histograms (the
// lossless HdrHistogram encodings the results carry) are added bucket for
// bucket and the percentiles read from the sum, never averaged; counts,
// means and deviations come from the runs' exact moments; counters and
// rates are summed; phases are matched by their knobs. Percentiles of a
// second cannot be added, so each run's per-second series is kept as its
// own (report.MergedSeries).
//
// The results are read with report's own types (report.InfertopJSON), the
// ones the writer encodes. A result is someone else's file: its size, its
// number of values and its histograms' geometry are bounded by report's
// reading (report.DecodeFile, report.DecodeHistogram), and every flaw is
// a one-line error.
package merge

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// MaxInputs is the most results merged at once, and MaxTotalBytes the
// most read in all: the merged result keeps every run's seconds.
const (
	MaxInputs     = 1024
	MaxTotalBytes = 1 << 30
)

// Input is one result to merge.
type Input struct {
	// Name is what errors and infertop.merged call it (the file's name).
	Name string
	// Result is its "infertop" object, MaxConcurrency its top-level
	// max_concurrency (the most requests it had in flight).
	Result         report.InfertopJSON
	MaxConcurrency int
	// Refused is why the result is left out of a merge (ReadFiles: a
	// file that is not a mergeable result; nil: it is merged). Merge
	// names it in infertop.merged.refused and merges the rest.
	Refused error
}

// bigFile is the size past which a file's buffer is collected before the
// next file is read.
const bigFile = 16 << 20

// ErrNotMergeable is a set of results that are not runs of one load on
// one endpoint (another endpoint, knobs, version or phases): merged only
// when forced.
var ErrNotMergeable = errors.New("not mergeable")

// ErrBadResult is a file that is not a result the merge can read.
var ErrBadResult = errors.New("not a mergeable result")

// ReadFiles reads the results at paths, bounded: at most MaxInputs
// files, report.MaxResultBytes and report.MaxResultValues each,
// MaxTotalBytes in all. A file that cannot be read is an error; one
// that is not a mergeable result (Decode's error) is refused by name,
// its Input's Refused set, so that one crafted file does not cost the
// others their merge.
func ReadFiles(paths []string) ([]Input, error) {
	if len(paths) > MaxInputs {
		return nil, fmt.Errorf("merge: %d results, %w (the most is %d)", len(paths), ErrBadResult, MaxInputs)
	}
	var ins []Input
	total, names := 0, map[string]bool{}
	for _, p := range paths {
		b, err := report.ReadResult(p, min(report.MaxResultBytes, MaxTotalBytes-total))
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		total += len(b)
		in, err := Decode(report.ResultName(p), b)
		if err != nil {
			in = Input{Name: report.ResultName(p), Refused: err}
		}
		if len(b) > bigFile {
			// The heap may grow to twice what is live before a
			// collection: the next file's buffer would be read beside
			// this one's garbage (four files of 120 MB held 265 MB).
			b = nil
			runtime.GC()
		}
		if names[in.Name] { // two of one name, from two directories: by their paths
			in.Name = p
		}
		names[in.Name] = true
		ins = append(ins, in)
	}
	return ins, nil
}

// Decode reads one result (b, named name), bounded as ReadFiles bounds
// a file.
func Decode(name string, b []byte) (Input, error) {
	return DecodeWithin(name, b, report.MaxResultBytes, report.MaxResultValues)
}

// DecodeWithin is Decode within at most maxBytes and maxValues
// (report.DecodeWithin): a follower holds an agent's result.
func DecodeWithin(name string, b []byte, maxBytes, maxValues int) (Input, error) {
	f, err := report.DecodeWithin(name, b, maxBytes, maxValues)
	if err != nil {
		return Input{}, fmt.Errorf("merge: %w: %w", err, ErrBadResult)
	}
	r := &f.Infertop
	switch {
	case r.Compare != nil:
		return Input{}, fmt.Errorf("merge: %s: a comparison's result: %w (merge each side's)", name, ErrBadResult)
	case r.Capacity != nil:
		return Input{}, fmt.Errorf("merge: %s: a capacity search's result: %w", name, ErrBadResult)
	case r.Histograms == nil:
		return Input{}, fmt.Errorf("merge: %s: no histograms (infertop.histograms): %w", name, ErrBadResult)
	}
	if f.MaxConcurrency > maxCount {
		return Input{}, fmt.Errorf("merge: %s: a max_concurrency of %d: %w", name, f.MaxConcurrency, ErrBadResult)
	}
	if err := checkResult(r); err != nil {
		return Input{}, fmt.Errorf("merge: %s: %w", name, err)
	}
	return Input{Name: name, Result: f.Infertop, MaxConcurrency: max(f.MaxConcurrency, 0)}, nil
}

// Bounds of what a result may say, held at decoding so that no sum of
// results overflows (10,000 agents' included: a follower merges that
// many, past MaxInputs), no summed rate is +Inf (which no JSON writes)
// and no figure prints as 300 digits.
const (
	// maxCount bounds every count, token count and concurrency: 2^49,
	// 16,384 of them within an int64.
	maxCount = math.MaxInt64 >> 14
	// maxRate bounds every rate (a second's), maxMS every latency
	// figure (ms: 115 days) and maxSeconds every time in seconds.
	maxRate    = 1e12
	maxMS      = 1e10
	maxSeconds = 1e10
)

// checkResult holds a result to the bounds above, each phase to its
// counts (counted), each latency with values to a histogram that
// decodes, its objectives to maxObjectives that parse, and a share's
// index to its split.
func checkResult(r *report.InfertopJSON) error {
	ref := load.NewHistogram()
	if err := checkPhase(r.Run, r.Histograms.Run, ref); err != nil {
		return fmt.Errorf("the run: %w", err)
	}
	hists := map[int]map[string]string{}
	for _, h := range r.Histograms.Phases {
		hists[h.ID] = h.Hist
	}
	for _, p := range r.Phases {
		if err := checkPhase(p, hists[p.ID], ref); err != nil {
			return fmt.Errorf("phase %d: %w", p.ID, err)
		}
	}
	var counts []int64
	counts = append(counts, r.Retried, r.ArrivalsScheduled, int64(r.Manifest.Knobs.Concurrency))
	for _, n := range r.ErrorsByClass {
		counts = append(counts, n)
	}
	for _, e := range r.Errors {
		counts = append(counts, e.Count)
	}
	if t := r.Trace; t != nil {
		counts = append(counts, int64(t.Arrivals), int64(t.Entries), int64(t.Passes))
		if err := bounded("a trace's lag", t.MaxBehindS, maxSeconds); err != nil {
			return err
		}
	}
	for _, n := range counts {
		if n < 0 || n > maxCount {
			return fmt.Errorf("a count of %d: %w", n, ErrBadResult)
		}
	}
	if err := bounded("a rate", r.Manifest.Knobs.Rate, maxRate); err != nil {
		return err
	}
	if r.SentRate != nil {
		if err := bounded("a rate", *r.SentRate, maxRate); err != nil {
			return err
		}
	}
	exprs := objectives([]Input{{Result: *r}})
	if len(exprs) > maxObjectives {
		return fmt.Errorf("%d objectives, %w (the most is %d)", len(exprs), ErrBadResult, maxObjectives)
	}
	if _, err := slo.ParseAll(exprs); err != nil {
		return fmt.Errorf("its objectives: %w: %w", err, ErrBadResult)
	}
	if of, ok := r.Manifest.Settings["of"]; ok {
		n, err := strconv.Atoi(of)
		if err != nil || n < 1 || n > maxShares {
			return fmt.Errorf("a share of %.20q agents: %w", of, ErrBadResult)
		}
		if index, ok := r.Manifest.Settings["index"]; ok {
			if i, err := strconv.Atoi(index); err != nil || i < 0 || i >= n {
				return fmt.Errorf("index %.20q of %d is no share: %w", index, n, ErrBadResult)
			}
		}
	}
	return nil
}

// maxShares is the most agents a load is split between (agent.MaxAgents).
const maxShares = 10000

// bounded refuses a figure that is not finite or outside 0..most.
func bounded(what string, v, most float64) error {
	if math.IsNaN(v) || v < 0 || v > most {
		return fmt.Errorf("%s of %g (outside 0..%g): %w", what, v, most, ErrBadResult)
	}
	return nil
}

// checkPhase holds a phase (or the run) to its counts, its rates,
// knobs and times to their bounds, and every latency with values to a
// histogram of hists that decodes (sparsely: a crafted geometry costs
// nothing), has values and ref's geometry (the engine's).
func checkPhase(p report.PhaseJSON, hists map[string]string, ref *hdr.Histogram) error {
	if err := counted(p); err != nil {
		return err
	}
	for _, n := range append(slices.Collect(maps.Values(p.ErrorsByClass)), int64(p.Knobs.Concurrency)) {
		if n < 0 || n > maxCount {
			return fmt.Errorf("a count of %d: %w", n, ErrBadResult)
		}
	}
	for _, r := range append(rates(&p), &p.Knobs.Rate) {
		if err := bounded("a rate", *r, maxRate); err != nil {
			return err
		}
	}
	if err := bounded("a duration", p.DurationS, maxSeconds); err != nil {
		return err
	}
	if err := bounded("a start", p.StartS, maxSeconds); err != nil {
		return err
	}
	for _, key := range report.MetricKeys() {
		d := p.Latency[key]
		if d.Count < 0 || d.Count > maxCount {
			return fmt.Errorf("%s: a count of %d: %w", key, d.Count, ErrBadResult)
		}
		for _, v := range []float64{d.Mean, d.Std, d.Min, d.Max, d.P50, d.P90, d.P95, d.P99, d.P999} {
			if err := bounded(key+": a figure", v, maxMS); err != nil {
				return err
			}
		}
		if d.Count == 0 {
			continue
		}
		enc, ok := hists[key]
		if !ok {
			return fmt.Errorf("%s: %d values and no histogram: %w", key, d.Count, ErrBadResult)
		}
		h, err := report.DecodeSparse(enc)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", key, err, ErrBadResult)
		}
		if !sameGeometry(h, ref) {
			// Buckets of other bounds add up to no exact sum; a crafted
			// geometry's dense sum is 1 MB a metric and a phase.
			return fmt.Errorf("%s: a histogram of %d..%d at %d digits, not infertop's %d..%d at %d: %w", key, h.LowestTrackableValue(),
				h.HighestTrackableValue(), h.SignificantFigures(), ref.LowestTrackableValue(), ref.HighestTrackableValue(),
				ref.SignificantFigures(), ErrBadResult)
		}
		if n := h.TotalCount(); n < 1 || n > maxCount {
			return fmt.Errorf("%s: a histogram of %d values for a count of %d: %w", key, n, d.Count, ErrBadResult)
		}
	}
	return nil
}

// sameGeometry says h's buckets are ref's: added into a sum of ref's
// geometry bucket for bucket, in one pass over them.
func sameGeometry(h *hdr.PackedHistogram, ref *hdr.Histogram) bool {
	return h.LowestTrackableValue() == ref.LowestTrackableValue() && h.HighestTrackableValue() == ref.HighestTrackableValue() &&
		h.SignificantFigures() == ref.SignificantFigures()
}

// counted holds a phase to sent = completed + failed + incomplete + in
// flight, every count and token count non-negative and within maxCount:
// a finished run's result has none in flight, a running agent's (its
// /result) those it was waiting for.
func counted(p report.PhaseJSON) error {
	for _, n := range counters(&p) {
		if *n < 0 || *n > maxCount {
			return fmt.Errorf("a count of %d: %w", *n, ErrBadResult)
		}
	}
	if p.Sent < p.Completed+p.Failed+p.Incomplete {
		return fmt.Errorf("sent %d is less than completed %d + failed %d + incomplete %d: %w", p.Sent, p.Completed, p.Failed, p.Incomplete, ErrBadResult)
	}
	return nil
}

// Options say how to merge.
type Options struct {
	// Force merges results that differ (endpoint, knobs, version,
	// phases), naming each difference in infertop.merged.forced.
	Force bool
	// One takes a single result too (run --agents with one agent
	// answering): its merge is itself, in the merged form.
	One bool
	// Gaps takes phases some results lack, each merged from the results
	// that have it and named in infertop.merged.forced (run --agents: a
	// knob change some agents have not applied yet, an agent that came
	// late or an index started again from zero); the rest is not forced.
	Gaps bool
}

// Merged is the merged result: its infertop object, and the most
// requests in flight (the sum of the runs': they ran side by side).
type Merged struct {
	Result         report.InfertopJSON
	MaxConcurrency int
}

// Write writes the merged result as a result file.
func (m *Merged) Write(w io.Writer) error {
	return report.WriteMerged(w, m.Result, m.MaxConcurrency)
}

// Merge merges two or more results. The refused (Input.Refused), a
// result that is another's again (the same run given twice, a file and
// its copy) and, unless opt.Gaps or opt.Force, a second share of one
// index are left out, each named in infertop.merged.refused: their
// requests would count twice. Fewer than two left (one, with opt.One)
// is an error naming them.
func Merge(ins []Input, opt Options) (*Merged, error) {
	ins, refused := admit(ins, opt)
	if len(ins) < 2 && !(opt.One && len(ins) == 1) {
		why := ""
		if len(refused) > 0 {
			why = fmt.Sprintf(" (%d refused: %s)", len(refused), strings.Join(refused[:min(len(refused), 3)], "; "))
		}
		return nil, fmt.Errorf("merge: %d results%s, want two or more: %w", len(ins), why, ErrBadResult)
	}
	first := &ins[0].Result
	var forced []string
	for _, in := range ins[1:] {
		for _, d := range Differences(first, &in.Result) {
			if !opt.Force {
				return nil, fmt.Errorf("merge: %s and %s: %s: %w (--force merges them anyway)", sanitize.Short(ins[0].Name, maxNameBytes),
					sanitize.Short(in.Name, maxNameBytes), d, ErrNotMergeable)
			}
			forced = append(forced, in.Name+": "+d)
		}
	}
	groups, ids, missing := matchPhases(ins)
	if len(missing) > 0 && !opt.Force && !opt.Gaps {
		return nil, fmt.Errorf("merge: %s: %w (--force merges them anyway)", missing[0], ErrNotMergeable)
	}
	forced = append(forced, missing...)

	m := &Merged{}
	out := &m.Result
	out.Manifest = first.Manifest
	out.Histograms = &report.HistogramsJSON{Encoding: report.HistogramEncoding, Run: map[string]string{}, Phases: []report.PhaseHistogramsJSON{}}
	out.Merged = &report.MergedJSON{Series: report.MergedSeries, Forced: forced, Refused: refused}
	out.Phases = []report.PhaseJSON{}
	out.ErrorsByClass = classes()
	var runs []part
	for i, in := range ins {
		r := &in.Result
		runs = append(runs, part{name: in.Name, phase: r.Run, hist: r.Histograms.Run})
		if r.Manifest.Start.Before(out.Manifest.Start) {
			out.Manifest.Start = r.Manifest.Start
		}
		if r.Manifest.End.After(out.Manifest.End) {
			out.Manifest.End = r.Manifest.End
		}
		m.MaxConcurrency += in.MaxConcurrency
		if i > 0 { // the whole load is the sum of the runs'

			out.Manifest.Knobs.Concurrency += r.Manifest.Knobs.Concurrency
			out.Manifest.Knobs.Rate += r.Manifest.Knobs.Rate
		}
		out.Retried += r.Retried
		out.ArrivalsScheduled += r.ArrivalsScheduled
		out.ArrivalsDropped += r.ArrivalsDropped
		if r.ArrivalsSent != nil {
			s := *r.ArrivalsSent
			if out.ArrivalsSent != nil {
				s += *out.ArrivalsSent
			}
			out.ArrivalsSent = &s
		}
		if r.SentRate != nil {
			s := *r.SentRate
			if out.SentRate != nil {
				s += *out.SentRate
			}
			out.SentRate = &s
		}
		addClasses(out.ErrorsByClass, r.ErrorsByClass)
		out.Merged.Runs = append(out.Merged.Runs, report.MergedRunJSON{Name: in.Name, Version: r.Manifest.Version, URL: r.Manifest.URL,
			Start: r.Manifest.Start, End: r.Manifest.End, Seed: r.Manifest.Seed, Sent: r.Run.Sent, Completed: r.Run.Completed,
			Failed: r.Run.Failed, Incomplete: r.Run.Incomplete, Series: r.Series})
	}
	var err error
	if out.Run, out.Histograms.Run, err = mergePhase(runs, 0); err != nil {
		return nil, err
	}
	for i, g := range groups {
		p, h, err := mergePhase(g, ids[i])
		if err != nil {
			return nil, err
		}
		out.Phases = append(out.Phases, p)
		out.Histograms.Phases = append(out.Histograms.Phases, report.PhaseHistogramsJSON{ID: p.ID, Warmup: p.Warmup, Hist: h})
	}
	out.Errors = mergeErrors(ins)
	out.Trace = mergeTrace(ins)
	out.SLO, out.SLOHeld = []report.VerdictJSON{}, true
	exprs := objectives(ins)
	if len(exprs) > maxObjectives { // each run's are within it (Decode): the first runs' are checked
		out.Merged.Forced = append(out.Merged.Forced, fmt.Sprintf("%d objectives in the runs: the first %d checked", len(exprs), maxObjectives))
		exprs = exprs[:maxObjectives]
	}
	if len(exprs) > 0 {
		vs, err := report.CheckMerged(exprs, out.Run, out.Phases)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		out.SLO = vs
		for _, v := range vs {
			out.SLOHeld = out.SLOHeld && v.Held
		}
	}
	return m, nil
}

// admit is ins less the results a merge leaves out, and why each is, in
// a line: those refused already, those that are another's again, and a
// second share of one index (unless opt.Gaps or opt.Force).
func admit(ins []Input, opt Options) ([]Input, []string) {
	var out []Input
	var refused []string
	seen := map[[sha256.Size]byte]string{}
	shares := map[string]string{}
	for _, in := range ins {
		name := sanitize.Short(in.Name, maxNameBytes)
		if in.Refused != nil {
			// Decode's error names the file already.
			refused = append(refused, sanitize.Short(strings.TrimPrefix(in.Refused.Error(), "merge: "), maxWhyBytes))
			continue
		}
		fp := Fingerprint(&in.Result)
		if first, ok := seen[fp]; ok {
			refused = append(refused, fmt.Sprintf("%s: the same run as %s (counted once)", name, first))
			continue
		}
		seen[fp] = name
		st := in.Result.Manifest.Settings
		if index, ok := st["index"]; ok && st["of"] != "" && !opt.Gaps && !opt.Force {
			share := index + " of " + st["of"]
			if first, ok := shares[share]; ok {
				refused = append(refused, fmt.Sprintf("%s: index %s again, as %s's: two runs of one share (--force merges them)",
					name, sanitize.Short(share, 40), first))
				continue
			}
			shares[share] = name
		}
		out = append(out, in)
	}
	return out, refused
}

// maxNameBytes and maxWhyBytes bound a result's name and a refusal's
// reason in a line.
const (
	maxNameBytes = 200
	maxWhyBytes  = 300
)

// Fingerprint tells a run from any other: its manifest (its start to
// the nanosecond, seed and settings), its run's and phases' figures, its
// replay's and its run's histograms. Two results of one fingerprint are
// one run given twice.
func Fingerprint(r *report.InfertopJSON) [sha256.Size]byte {
	b, _ := json.Marshal(struct { // of values Decode took, a map's keys sorted: it does not fail
		M report.Manifest
		R report.PhaseJSON
		P []report.PhaseJSON
		T *report.TraceJSON
		H map[string]string
	}{r.Manifest, r.Run, r.Phases, r.Trace, r.Histograms.Run})
	return sha256.Sum256(b)
}

// Differences name what makes b another load than a (what Merge refuses
// unless forced): the endpoint, the starting knobs, the version that
// measured it.
func Differences(a, b *report.InfertopJSON) []string {
	var out []string
	am, bm := a.Manifest, b.Manifest
	// A result is someone else's file: what it names is shown sanitised
	// and cut (a crafted URL would clear a terminal, or fill it).
	txt := func(s string) string { return sanitize.Short(s, maxNameBytes) }
	if am.URL != bm.URL || am.API != bm.API {
		out = append(out, fmt.Sprintf("another endpoint (%s %s, not %s %s)", txt(bm.API), txt(bm.URL), txt(am.API), txt(am.URL)))
	}
	if am.Model != bm.Model || am.Stream != bm.Stream {
		out = append(out, fmt.Sprintf("another model or streaming (%q stream=%t, not %q stream=%t)", txt(bm.Model), bm.Stream, txt(am.Model), am.Stream))
	}
	switch {
	case agents(a) != agents(b):
		out = append(out, fmt.Sprintf("shares of another load (agents: %q, not %q)", txt(agents(b)), txt(agents(a))))
	case agents(a) != "":
		// Shares of one load: each its part of the knobs, the whole as
		// given the same.
		for _, k := range wholeSettings {
			if am.Settings[k] != bm.Settings[k] {
				out = append(out, fmt.Sprintf("other knobs (--%s %q, not %q)", k, txt(bm.Settings[k]), txt(am.Settings[k])))
			}
		}
		if shareKnobs(am.Knobs) != shareKnobs(bm.Knobs) {
			out = append(out, fmt.Sprintf("other knobs (%s, not %s)", knobText(bm.Knobs), knobText(am.Knobs)))
		}
	case am.Knobs != bm.Knobs:
		out = append(out, fmt.Sprintf("other knobs (%s, not %s)", knobText(bm.Knobs), knobText(am.Knobs)))
	}
	if (a.Trace == nil) != (b.Trace == nil) || (a.Sessions == nil) != (b.Sessions == nil) {
		out = append(out, "another kind of load (a trace replay or sessions, and not)")
	}
	if am.Version != bm.Version {
		out = append(out, fmt.Sprintf("another version (%q, not %q)", txt(bm.Version), txt(am.Version)))
	}
	return out
}

// agents is the number of agents a result is a share of (infertop
// agent's --of, as its manifest's settings keep it); empty for a run of
// its own.
func agents(r *report.InfertopJSON) string { return r.Manifest.Settings["of"] }

// wholeSettings are the flags of the whole load that every share of it
// was given alike (each agent takes its part of them).
var wholeSettings = []string{"concurrency", "rate", "requests", "duration", "start-at", "seed", "stages", "ramp", "dataset", "trace",
	"trace-speed", "trace-window", "trace-model", "sessions", "turns"}

// shareKnobs are the knobs shares of one load have alike: their
// concurrency and rate are each share's part.
func shareKnobs(k report.KnobsJSON) report.KnobsJSON {
	k.Concurrency, k.Rate = 0, 0
	return k
}

func knobText(k report.KnobsJSON) string {
	if k.Mode == "open" {
		return fmt.Sprintf("rate %g, prompt %d, output %d", k.Rate, k.PromptTokens, k.OutputTokens)
	}
	return fmt.Sprintf("concurrency %d, prompt %d, output %d", k.Concurrency, k.PromptTokens, k.OutputTokens)
}

// part is one run's share of a merged phase: its figures and histograms.
type part struct {
	run   int // the index of its run
	name  string
	phase report.PhaseJSON
	hist  map[string]string
}

// phaseKey matches phases across runs: the warm-up or not, the knobs, and
// which phase of those knobs it is in its run (a walk back to a setting
// is a phase of its own); or, between agents' shares of one load, the
// phase's id, which their follower numbers alike on every agent
// (agent.Control's Phase: a capacity search's steps, each at other
// knobs than its agent's share of them says).
type phaseKey struct {
	warmup bool
	knobs  report.KnobsJSON
	nth    int
	id     int
}

// matchPhases groups the runs' phases by their key, in the order the
// first run has them (then any only later runs have), with the merged
// phases' ids (agents' shares: their own, in order; else counted from
// 1); missing names every phase some run lacks.
func matchPhases(ins []Input) (groups [][]part, ids []int, missing []string) {
	index := map[phaseKey]int{}
	var keys []phaseKey
	shares := true // every result an agent's share: phases match by id
	for i := range ins {
		shares = shares && agents(&ins[i].Result) != ""
	}
	for r, in := range ins {
		hists := map[int]map[string]string{}
		for _, h := range in.Result.Histograms.Phases {
			hists[h.ID] = h.Hist
		}
		seen := map[phaseKey]int{}
		for _, p := range in.Result.Phases {
			kn := p.Knobs
			if agents(&in.Result) != "" {
				kn = shareKnobs(kn)
			}
			k := phaseKey{warmup: p.Warmup, knobs: kn}
			k.nth = seen[k]
			seen[phaseKey{warmup: p.Warmup, knobs: kn}]++
			if shares {
				k = phaseKey{id: p.ID} // one id, one phase: its knobs are the first's
			}
			i, ok := index[k]
			if !ok {
				i = len(groups)
				index[k] = i
				keys = append(keys, k)
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], part{run: r, name: in.Name, phase: p, hist: hists[p.ID]})
		}
	}
	for i, g := range groups {
		if shares { // the first's knobs and warm-up name it
			keys[i].warmup, keys[i].knobs = g[0].phase.Warmup, shareKnobs(g[0].phase.Knobs)
		}
		if len(g) == len(ins) {
			continue
		}
		have := map[int]bool{}
		for _, p := range g {
			have[p.run] = true
		}
		for r, in := range ins {
			if !have[r] {
				what := "a phase at " + knobText(keys[i].knobs)
				if keys[i].warmup {
					what = "a warm-up at " + knobText(keys[i].knobs)
				}
				missing = append(missing, fmt.Sprintf("%s has no %s (another has)", in.Name, what))
				break
			}
		}
	}
	for i, k := range keys {
		ids = append(ids, i+1)
		if shares {
			ids[i] = k.id
		}
	}
	if shares {
		order := make([]int, len(groups))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
		g2, id2 := make([][]part, len(order)), make([]int, len(order))
		for i, o := range order {
			g2[i], id2[i] = groups[o], ids[o]
		}
		groups, ids = g2, id2
	}
	return groups, ids, missing
}

// mergePhase merges one phase (id 0: the run) of several runs.
func mergePhase(parts []part, id int) (report.PhaseJSON, map[string]string, error) {
	f := parts[0].phase
	out := report.PhaseJSON{ID: id, Warmup: f.Warmup, Knobs: f.Knobs, StartS: f.StartS, ErrorsByClass: classes(), Latency: map[string]report.DistJSON{}}
	out.Knobs.Concurrency, out.Knobs.Rate = 0, 0
	for _, p := range parts {
		q := p.phase
		// Side by side, the whole load is the sum of the runs'.
		out.Knobs.Concurrency += q.Knobs.Concurrency
		out.Knobs.Rate += q.Knobs.Rate
		out.StartS = min(out.StartS, q.StartS)
		out.DurationS = max(out.DurationS, q.DurationS)
		addClasses(out.ErrorsByClass, q.ErrorsByClass)
		outC, qC := counters(&out), counters(&q)
		for i := range outC {
			*outC[i] += *qC[i]
		}
		// Side by side, each run's rate is its share of the whole.
		outR, qR := rates(&out), rates(&q)
		for i := range outR {
			*outR[i] += *qR[i]
		}
	}
	hists := map[string]string{}
	for _, key := range report.MetricKeys() {
		d, enc, err := mergeDist(parts, key)
		if err != nil {
			what := "the run"
			if id > 0 {
				what = fmt.Sprintf("phase %d (%s)", id, knobText(f.Knobs))
			}
			return out, nil, fmt.Errorf("merge: %s, %s: %w", what, key, err)
		}
		out.Latency[key] = d
		if enc != "" {
			hists[key] = enc
		}
	}
	return out, hists, nil
}

// counters are a phase's counts, each summed over the runs.
func counters(p *report.PhaseJSON) []*int64 {
	return []*int64{&p.Sent, &p.Completed, &p.Failed, &p.Incomplete, &p.Backlog, &p.Dropped, &p.Retried, &p.Good, &p.InputTokens, &p.OutputTokens,
		&p.DeliveredTokens, &p.FailedOutputTokens, &p.ReasoningTokens, &p.Inputs}
}

// rates are a phase's rates, each summed over the runs.
func rates(p *report.PhaseJSON) []*float64 {
	return []*float64{&p.RequestThroughput, &p.RequestGoodput, &p.OutputThroughput, &p.InputThroughput, &p.TotalTokenThroughput}
}

// distQuantiles are the percentiles of a DistJSON, as load computes them.
var distQuantiles = []float64{50, 90, 95, 99, 99.9}

// mergeDist merges one metric: the count, mean and deviation from the
// runs' exact moments (from a histogram's own where its count is not the
// figures', as in a running agent's result), the minimum and maximum
// from theirs, the
// percentiles from the sum of their histograms (clamped to the exact
// range, as load does: a bucket's top can pass the maximum). It returns
// the sum's encoding too, so a merged result merges again.
func mergeDist(parts []part, key string) (report.DistJSON, string, error) {
	var out report.DistJSON
	// Sparse: the time and memory of a merge grow with the buckets the
	// runs hold, not with their histograms' geometry.
	var sum *hdr.PackedHistogram
	var s1, s2 float64 // Σ n·mean and Σ n·(std² + mean²), in ms
	for _, p := range parts {
		d := p.phase.Latency[key]
		if d.Count < 0 || d.Count > math.MaxInt64/MaxInputs {
			return out, "", fmt.Errorf("%s: a count of %d: %w", p.name, d.Count, ErrBadResult)
		}
		if d.Count == 0 {
			continue
		}
		enc, ok := p.hist[key]
		if !ok {
			return out, "", fmt.Errorf("%s: %d values and no histogram: %w", p.name, d.Count, ErrBadResult)
		}
		h, err := report.DecodeSparse(enc)
		if err != nil {
			return out, "", fmt.Errorf("%s: %w", p.name, err)
		}
		if h.TotalCount() != d.Count {
			// A running agent's /result: its figures are of the last
			// snapshot, its histograms of a moment later. The histogram
			// is the whole: its own moments, within its precision.
			d = report.DistJSON{Count: h.TotalCount(), Mean: h.Mean() / 1000, Std: h.StdDev() / 1000, Min: float64(h.Min()) / 1000,
				Max: float64(h.Max()) / 1000}
		}
		if sum == nil {
			sum = h
		} else if dropped := sum.Merge(h); dropped > 0 {
			return out, "", fmt.Errorf("%s: %d values past the histogram's range: %w", p.name, dropped, ErrBadResult)
		}
		n := float64(d.Count)
		s1 += n * d.Mean
		s2 += n * (d.Std*d.Std + d.Mean*d.Mean)
		if out.Count == 0 || d.Min < out.Min {
			out.Min = d.Min
		}
		out.Max = max(out.Max, d.Max)
		out.Count += d.Count
	}
	if out.Count == 0 {
		return report.DistJSON{}, "", nil
	}
	n := float64(out.Count)
	mean := s1 / n
	out.Mean = roundNs(mean)
	out.Std = roundNs(math.Sqrt(max(s2/n-mean*mean, 0)))
	lo, hi := int64(math.Round(out.Min*1000)), int64(math.Round(out.Max*1000))
	q := sum.ValueAtPercentilesSlice(distQuantiles)
	pick := func(i int) float64 { return float64(min(max(q[i], lo), hi)) / 1000 }
	out.P50, out.P90, out.P95, out.P99, out.P999 = pick(0), pick(1), pick(2), pick(3), pick(4)
	enc, err := sum.Encode()
	if err != nil {
		return out, "", fmt.Errorf("encode: %w", err)
	}
	return out, string(enc), nil
}

// roundNs rounds milliseconds to the nanosecond, the writer's precision.
func roundNs(ms float64) float64 { return math.Round(ms*1e6) / 1e6 }

// classes is a count of every failure class, each at zero: every one is
// written, as the writer writes them.
func classes() map[string]int64 {
	out := map[string]int64{}
	for _, c := range probe.FailureClasses() {
		out[c.String()] = 0
	}
	return out
}

// addClasses adds src's counts of the classes dst has; another name is no
// class a result has, and ignored.
func addClasses(dst, src map[string]int64) {
	for k, v := range src {
		if _, ok := dst[k]; ok && v > 0 {
			dst[k] += v
		}
	}
}

// mergeTrace is the replay of shares of one trace (infertop agent
// --trace, each its arrivals): their arrivals and entries added, the
// worst lag; nil unless every run replayed one. A sessions run's
// per-turn table is not merged: its percentiles carry no histograms,
// and each run's own stays in its result.
func mergeTrace(ins []Input) *report.TraceJSON {
	var out *report.TraceJSON
	for _, in := range ins {
		t := in.Result.Trace
		if t == nil {
			return nil
		}
		if out == nil {
			c := *t
			out = &c
			continue
		}
		out.Arrivals += t.Arrivals
		out.Entries += t.Entries
		out.Passes = max(out.Passes, t.Passes)
		out.MaxBehindS = max(out.MaxBehindS, t.MaxBehindS)
		out.FellBehind = out.FellBehind || t.FellBehind
	}
	return out
}

// mergeErrors adds the runs' distinct errors, most frequent first.
func mergeErrors(ins []Input) []report.ErrorJSON {
	type key struct {
		class   string
		status  int
		message string
	}
	count := map[key]int64{}
	var order []key
	for _, in := range ins {
		for _, e := range in.Result.Errors {
			k := key{e.Class, e.Status, e.Message}
			if _, ok := count[k]; !ok {
				order = append(order, k)
			}
			count[k] += max(e.Count, 0)
		}
	}
	out := make([]report.ErrorJSON, 0, len(order))
	for _, k := range order {
		if count[k] > 0 {
			out = append(out, report.ErrorJSON{Class: k.class, Status: k.status, Message: k.message, Count: count[k]})
		}
	}
	slices.SortStableFunc(out, func(a, b report.ErrorJSON) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	return out
}

// maxObjectives bounds the objectives checked again over the merge.
const maxObjectives = 64

// objectives are the distinct objectives the runs checked, in order.
func objectives(ins []Input) []string {
	var out []string
	for _, in := range ins {
		for _, v := range in.Result.SLO {
			if !slices.Contains(out, v.Expr) {
				out = append(out, v.Expr)
			}
		}
	}
	return out
}
