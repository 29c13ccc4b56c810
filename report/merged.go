package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
	"github.com/infertop/infertop/slo"
)

// MergedSeries is MergedJSON.Series: how a merged result keeps the
// runs' per-second records. Percentiles of a second cannot be added, so
// each run keeps its own (MergedRunJSON.Series) and the merged result
// has no infertop.series.
const MergedSeries = "per run"

// MergedJSON is infertop.merged: the runs a merged result (infertop
// merge) was made of. Its histograms are theirs added bucket for bucket,
// its counters and rates their sums (the runs loaded the endpoint side
// by side, each its share), its phases matched by their knobs.
type MergedJSON struct {
	// Series is MergedSeries.
	Series string `json:"series"`
	// Forced names what differed between the runs and was merged anyway
	// (--force).
	Forced []string `json:"forced,omitempty"`
	// Refused names the results left out, each with why: one that is
	// not a mergeable result, or one given twice (its requests would
	// count twice).
	Refused []string `json:"refused,omitempty"`
	// Trimmed says what WriteMerged left out to keep the file within
	// what a reader reads (MaxResultBytes, MaxResultValues): the runs'
	// series, the agents' own results ("": nothing).
	Trimmed string `json:"trimmed,omitempty"`
	// Runs are the runs merged, in the order given.
	Runs []MergedRunJSON `json:"runs"`
}

// MergedRunJSON is one run of a merged result: what tells it apart, its
// counters and its own per-second record.
type MergedRunJSON struct {
	Name       string      `json:"name"`
	Version    string      `json:"version"`
	URL        string      `json:"url"`
	Start      time.Time   `json:"start"`
	End        time.Time   `json:"end"`
	Seed       uint64      `json:"seed"`
	Sent       int64       `json:"sent"`
	Completed  int64       `json:"completed"`
	Failed     int64       `json:"failed"`
	Incomplete int64       `json:"incomplete"`
	Series     *SeriesJSON `json:"series,omitempty"`
}

// MetricKeys are the latency keys of a PhaseJSON's latency and of the
// histograms (ttft, e2el, ...), in the writer's order.
func MetricKeys() []string {
	out := make([]string, 0, len(allMetrics))
	for _, m := range allMetrics {
		out = append(out, m.key)
	}
	return out
}

// MetricKey is m's key in the JSON's latency and histograms (ttft,
// e2el, ...); "" for none.
func MetricKey(m load.Metric) string {
	for _, k := range allMetrics {
		if k.m == m {
			return k.key
		}
	}
	return ""
}

// WriteMerged writes a merged result: inf (with Merged set) under
// "infertop" and vLLM's keys for its run at the top, as WriteJSON writes
// them. maxConcurrency is the most requests in flight.
//
// A merged result is read back (report, merge again): one past what a
// reader reads (MaxResultBytes, MaxResultValues) is written without
// what its parts keep of their own (each run's series, each agent's
// result), said in infertop.merged.trimmed; still past them, it is an
// error (ErrTooLarge) and nothing is written.
func WriteMerged(w io.Writer, inf InfertopJSON, maxConcurrency int) error {
	return writeMerged(w, inf, maxConcurrency, MaxResultBytes, MaxResultValues)
}

// writeMerged is WriteMerged within maxBytes and maxValues, for tests.
func writeMerged(w io.Writer, inf InfertopJSON, maxConcurrency, maxBytes, maxValues int) error {
	if inf.Merged == nil {
		return fmt.Errorf("write merged result: %w", errNotMerged)
	}
	var b bytes.Buffer
	if err := encodeMerged(&b, inf, maxConcurrency); err != nil {
		return err
	}
	if size, n := b.Len(), CountValues(b.Bytes()); size > maxBytes || n > maxValues {
		m := *inf.Merged
		m.Runs = slices.Clone(m.Runs)
		for i := range m.Runs {
			m.Runs[i].Series = nil
		}
		m.Trimmed = fmt.Sprintf("the runs' series and the agents' own results: %d MB and %d values in all, past what a reader reads (%d MB, %d values)",
			size>>20, n, maxBytes>>20, maxValues)
		inf.Merged = &m
		if inf.Agents != nil {
			a := *inf.Agents
			a.Agents = slices.Clone(a.Agents)
			for i := range a.Agents {
				a.Agents[i].Result = nil
			}
			inf.Agents = &a
		}
		b.Reset()
		if err := encodeMerged(&b, inf, maxConcurrency); err != nil {
			return err
		}
		if size, n := b.Len(), CountValues(b.Bytes()); size > maxBytes || n > maxValues {
			return fmt.Errorf("write merged result: %d MB, %d values: %w", size>>20, n, ErrTooLarge)
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// EncodeResult encodes a decoded result again, as a result file in one
// line: vLLM's keys from its run, and its infertop object as this
// version reads it (what else the file held is gone: a follower keeps
// an agent's result so, never the bytes the agent padded it with).
func EncodeResult(inf InfertopJSON, maxConcurrency int) ([]byte, error) {
	top := vllmKeys(inf.Manifest, inf.Run, max(maxConcurrency, 1))
	top["infertop"] = inf
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(top); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return sanitize.JSON(bytes.TrimSpace(b.Bytes())), nil
}

// encodeMerged encodes a merged result as WriteMerged writes it.
func encodeMerged(w io.Writer, inf InfertopJSON, maxConcurrency int) error {
	top := vllmKeys(inf.Manifest, inf.Run, max(maxConcurrency, 1))
	top["infertop"] = inf
	return encodeTop(w, top)
}

var errNotMerged = errors.New("no infertop.merged")

// CheckMerged checks the objectives named by exprs (as the runs' verdicts
// wrote them) over a merged run and its phases, as Verdicts does over a
// run: the run, then every phase with requests but the warm-up.
func CheckMerged(exprs []string, run PhaseJSON, phases []PhaseJSON) ([]VerdictJSON, error) {
	objs, err := slo.ParseAll(exprs)
	if err != nil {
		return nil, fmt.Errorf("the runs' objectives: %w", err)
	}
	vs := slo.CheckAll(objs, run.figures(), "run")
	for _, p := range phases {
		if p.Sent == 0 || p.Warmup {
			continue
		}
		vs = append(vs, slo.CheckAll(objs, p.figures(), "phase "+strconv.Itoa(p.ID))...)
	}
	return verdictsJSON(vs), nil
}

// figures are a phase's figures as an objective reads them, from the
// JSON (the reverse of phaseJSON's).
func (p PhaseJSON) figures() slo.Figures {
	f := slo.Figures{Completed: p.Completed, Failed: p.Failed, Incomplete: p.Incomplete, Dropped: p.Dropped, ReqPerSec: p.RequestThroughput,
		OutTokPerSec: p.OutputThroughput, InTokPerSec: p.InputThroughput, GoodPerSec: p.RequestGoodput}
	d := func(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }
	for _, m := range allMetrics {
		j := p.Latency[m.key]
		f.Latency[m.m] = load.Dist{Count: j.Count, Mean: d(j.Mean), Std: d(j.Std), Min: d(j.Min), P50: d(j.P50), P90: d(j.P90),
			P95: d(j.P95), P99: d(j.P99), P999: d(j.P999), Max: d(j.Max)}
	}
	f.Loop = slo.TimingOf(f.Latency) // the open loop's judged from the intended send, as a single run's
	return f
}
