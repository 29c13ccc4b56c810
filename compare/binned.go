package compare

import "github.com/infertop/infertop/load"

// Binned is a comparison's data given as counts by second, not request
// by request: what a follower of agents has of each side (their sealed
// seconds' histograms, merged), not their requests. A latency is a
// histogram bucket's value and its count in a second, the error rate a
// second's completed and failed counts; each becomes that many samples
// of the second, so Compare is the same paired block bootstrap as
// Samples.Compare, over values within the histograms' precision. Limit
// bounds each side's samples of a metric as Samples' rings do: Add the
// newest seconds first, and a side past its limit takes no more (the
// oldest are left out). A Binned is one goroutine's.
type Binned struct {
	stats []Stat
	limit int
	sides [2]binnedSide
}

type binnedSide struct {
	lat  [load.NumMetrics][]sample
	errs []sample
}

// NewBinned collects the data of a comparison of stats, at most limit
// samples (0: DefaultSamples) per side and metric.
func NewBinned(stats []Stat, limit int) *Binned {
	if limit <= 0 {
		limit = DefaultSamples
	}
	return &Binned{stats: stats, limit: limit}
}

// Latency adds the values of metric m that side saw in second sec (any
// clock both sides share, in seconds): counts[i] requests of ms[i]
// milliseconds each (a histogram's buckets). Where they are more than
// the room left they are thinned alike, bucket by bucket, so the
// second's shape stays what it was.
func (b *Binned) Latency(side Side, m load.Metric, sec int32, ms []float64, counts []int64) {
	r := &b.sides[side].lat[m]
	for i, n := range b.thin(len(*r), counts) {
		for range n {
			*r = append(*r, sample{sec, ms[i]})
		}
	}
}

// Outcomes adds a second's requests of side: completed ones and failed
// ones (the error rate's samples, 0 and 1), thinned alike as Latency's.
func (b *Binned) Outcomes(side Side, sec int32, completed, failed int64) {
	r := &b.sides[side].errs
	ns := b.thin(len(*r), []int64{completed, failed})
	for i, n := range ns {
		for range n {
			*r = append(*r, sample{sec, float64(i)})
		}
	}
}

// thin is counts within the room a side's held samples leave of the
// limit: as they are when they fit, else each scaled down alike.
func (b *Binned) thin(held int, counts []int64) []int64 {
	room := int64(max(b.limit-held, 0))
	var total int64
	for _, n := range counts {
		total += max(n, 0)
	}
	out := make([]int64, len(counts))
	if total == 0 || room == 0 {
		return out
	}
	for i, n := range counts {
		out[i] = max(n, 0)
		if total > room {
			out[i] = int64(float64(out[i]) * float64(room) / float64(total))
		}
	}
	return out
}

// Full says side holds its limit of every metric's samples and of its
// outcomes: older seconds would add nothing.
func (b *Binned) Full(side Side) bool {
	sd := &b.sides[side]
	if len(sd.errs) < b.limit {
		return false
	}
	for _, st := range b.stats {
		if !st.ErrorRate && len(sd.lat[st.Metric]) < b.limit {
			return false
		}
	}
	return true
}

// Compare judges every statistic over the data added, as Samples.Compare
// does over its samples.
func (b *Binned) Compare(o Options) Comparison {
	return compareStats(b.stats, o, false, [2]string{}, func(st Stat) [2][]sample {
		var out [2][]sample
		for i := range b.sides {
			sd := &b.sides[i]
			src := sd.errs
			if !st.ErrorRate {
				src = sd.lat[st.Metric]
			}
			out[i] = append([]sample(nil), src...) // judge sorts and trims its copy
		}
		return out
	})
}
