package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/agent"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/report"
)

// Second is one of an agent's sealed seconds as the fleet keeps it
// (agent.Second, checked): its counters, and its histograms decoded into
// their non-empty buckets, which add up exactly into a histogram of the
// engine's geometry (load.NewHistogram).
type Second struct {
	// Sec is the second of the agent's own load (0 is its first).
	Sec                                          int64
	Completed, Failed, Good, OutTokens, InTokens int64
	ByClass                                      [probe.NumClasses]int64
	InFlight                                     int64
	hist                                         [load.NumMetrics]buckets
}

// buckets are a histogram's non-empty buckets: the lowest value of each
// and its count.
type buckets struct{ values, counts []int64 }

// Count is how many values of m the second holds.
func (s *Second) Count(m load.Metric) int64 {
	var n int64
	for _, c := range s.hist[m].counts {
		n += c
	}
	return n
}

// addTo adds the second's values of m to h (of the engine's geometry).
func (s *Second) addTo(m load.Metric, h *hdr.Histogram) {
	b := &s.hist[m]
	for i, v := range b.values {
		_ = h.RecordValues(v, b.counts[i]) // in range: checked at decoding
	}
}

// maxSecondCount bounds every count of one agent's second (requests,
// tokens, a histogram's values): far past any endpoint's second, and
// 10,000 agents' times 300 seconds of it stay far inside an int64.
const maxSecondCount = 1 << 32

// errSeconds is a /seconds answer refused.
var errSeconds = errors.New("its /seconds refused")

// secondsBatch is one /seconds answer, checked and decoded.
type secondsBatch struct {
	start time.Time // the agent's second 0, on its clock
	from  int64     // its last reset's second
	secs  []Second
}

// decodeSeconds decodes and checks an agent's /seconds answer to since:
// at most load.MaxSealedSeconds seconds, each after since and after the
// one before it, counts within maxSecondCount, failure classes and
// metrics known, every histogram of the engine's geometry (its header
// checked before it is decoded: report.DecodeHistogram), its counts
// read through floors (bucketFloors). Anything else refuses the whole
// answer.
func decodeSeconds(raw []byte, since int64, floors []int64) (*secondsBatch, error) {
	var j agent.Seconds
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("%w: %w", errSeconds, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errSeconds, fmt.Sprintf(format, args...))
	}
	switch {
	case j.Encoding != report.HistogramEncoding:
		return nil, bad("the histograms are not %q", report.HistogramEncoding)
	case len(j.Seconds) > load.MaxSealedSeconds:
		return nil, bad("%d seconds, past %d", len(j.Seconds), load.MaxSealedSeconds)
	case j.Started.IsZero() || j.From < 0 || j.From > maxSecondCount || j.Current < 0 || j.Current > maxSecondCount:
		return nil, bad("its start %v, from %d, current %d", j.Started, j.From, j.Current)
	}
	metrics := map[string]load.Metric{}
	for m := range load.NumMetrics {
		metrics[report.MetricKey(m)] = m
	}
	classes := map[string]probe.ErrorClass{}
	for _, c := range probe.FailureClasses() {
		classes[c.String()] = c
	}
	out := &secondsBatch{start: j.Started, from: j.From, secs: make([]Second, 0, len(j.Seconds))}
	last := since
	for _, js := range j.Seconds {
		if js.Sec <= last || js.Sec >= j.Current {
			return nil, bad("second %d after %d, the current %d", js.Sec, last, j.Current)
		}
		last = js.Sec
		s := Second{Sec: js.Sec, Completed: js.Completed, Failed: js.Failed, Good: js.Good, OutTokens: js.OutputTokens, InTokens: js.InputTokens,
			InFlight: int64(js.InFlight)}
		// Output tokens may be negative in a second: a server's usage
		// count correcting its messages'.
		for _, n := range []int64{s.Completed, s.Failed, s.Good, s.InTokens, s.InFlight, abs(s.OutTokens)} {
			if n < 0 || n > maxSecondCount {
				return nil, bad("second %d: a count of %d", js.Sec, n)
			}
		}
		var failed int64
		for name, n := range js.FailedByClass {
			c, ok := classes[name]
			if !ok || n < 0 || n > maxSecondCount {
				return nil, bad("second %d: %d failures of class %.40q", js.Sec, n, name)
			}
			s.ByClass[c], failed = n, failed+n
		}
		if failed != s.Failed || s.Good > s.Completed {
			return nil, bad("second %d: %d failures by class of %d, %d good of %d", js.Sec, failed, s.Failed, s.Good, s.Completed)
		}
		for key, enc := range js.Hist {
			m, ok := metrics[key]
			if !ok {
				return nil, bad("second %d: no metric %.40q", js.Sec, key)
			}
			h, err := report.DecodeHistogram(enc)
			if err != nil {
				return nil, fmt.Errorf("%w: second %d, %s: %w", errSeconds, js.Sec, key, err)
			}
			if !load.SameGeometry(h) || h.TotalCount() < 0 || h.TotalCount() > maxSecondCount {
				return nil, bad("second %d, %s: %d values in %d..%d at %d digits", js.Sec, key, h.TotalCount(), h.LowestTrackableValue(),
					h.HighestTrackableValue(), h.SignificantFigures())
			}
			for i, n := range h.Export().Counts {
				if n == 0 {
					continue
				}
				if n < 0 || i >= len(floors) {
					return nil, bad("second %d, %s: a count of %d at %d", js.Sec, key, n, i)
				}
				s.hist[m].values = append(s.hist[m].values, floors[i])
				s.hist[m].counts = append(s.hist[m].counts, n)
			}
		}
		out.secs = append(out.secs, s)
	}
	return out, nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// bucketFloors is the lowest value of each count of a histogram of the
// engine's geometry, by its index in the counts (Export's): a decoded
// histogram's counts turned into buckets in one pass over them, where
// Distribution makes a Bar of every count up to the largest. The walk
// of Distribution over a histogram holding its highest value is every
// index in order (HdrHistogram's iterator), so it names each index once.
func bucketFloors() []int64 {
	h := load.NewHistogram()
	_ = h.RecordValue(h.HighestTrackableValue())
	bars := h.Distribution()
	out := make([]int64, len(bars))
	for i, b := range bars {
		out[i] = b.From
	}
	return out
}

// keepSeconds is how many of an agent's newest seconds the fleet keeps:
// the longest window's.
const keepSeconds = load.MaxSealedSeconds

// withSeconds is m's seconds with b's added: a new slice (a view's are
// never written), those of another start of its load dropped, those
// before its last reset too, and those past keepSeconds behind its
// newest.
func withSeconds(a *Agent, b *secondsBatch) {
	old := a.Seconds
	if !b.start.Equal(a.SecondsStart) {
		old = nil
	}
	kept := make([]Second, 0, min(len(old)+len(b.secs), keepSeconds))
	all := append(slices.Clip(old), b.secs...)
	newest := int64(math.MinInt64)
	if n := len(all); n > 0 {
		newest = all[n-1].Sec
	}
	for _, s := range all {
		if s.Sec >= b.from && s.Sec > newest-keepSeconds {
			kept = append(kept, s)
		}
	}
	a.Seconds, a.SecondsStart, a.SecondsFrom = kept, b.start, b.from
}
