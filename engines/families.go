package engines

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
)

// FromFamilies reads a server's families as client_model holds them (a
// source that built them itself, from a Prometheus server's answers, one
// server's series at a time): histograms as histogram families or as
// their _bucket, _sum and _count samples, counters with or without
// _total. The bounds of Parse on series and buckets hold.
func FromFamilies(fams map[string]*dto.MetricFamily) (Reading, error) {
	p := newReader()
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names) // the same sums, to the last bit, whatever the map's order
	for _, n := range names {
		targets := lookup(&p.buf, []byte(n))
		if len(targets) == 0 || fams[n] == nil {
			continue
		}
		for _, m := range fams[n].GetMetric() {
			if err := p.metric(targets, m); err != nil {
				return Reading{}, fmt.Errorf("metrics: %w", err)
			}
		}
	}
	return p.reading()
}

// metric sums one client_model metric into the targets it fills.
func (p *reader) metric(targets []target, m *dto.Metric) error {
	le, hasLE := math.NaN(), false
	for _, l := range m.GetLabel() {
		if l.GetName() == "le" {
			hasLE = true
			if v, err := strconv.ParseFloat(l.GetValue(), 64); err == nil {
				le = v
			}
		}
	}
	for _, t := range targets {
		mt := &tables[t.table].metrics[t.metric]
		if len(mt.when.labels) > 0 && !matchCond(&mt.when, labelValue(m, &mt.when)) {
			continue
		}
		if t.part == pFamily {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			for _, b := range h.GetBucket() {
				n := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					n = b.GetCumulativeCountFloat()
				}
				if err := p.add(target{t.table, t.metric, pBucket}, true, b.GetUpperBound(), n); err != nil {
					return err
				}
			}
			n := float64(h.GetSampleCount())
			if h.SampleCountFloat != nil {
				n = h.GetSampleCountFloat()
			}
			if err := p.add(target{t.table, t.metric, pCount}, false, 0, n); err != nil {
				return err
			}
			if err := p.add(target{t.table, t.metric, pSum}, false, 0, h.GetSampleSum()); err != nil {
				return err
			}
			continue
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue
		}
		if err := p.add(t, hasLE, le, v); err != nil {
			return err
		}
	}
	return nil
}

// labelValue is a metric's value of the label a condition reads, ""
// without it.
func labelValue(m *dto.Metric, c *cond) string {
	for _, l := range m.GetLabel() {
		if c.on([]byte(l.GetName())) {
			return l.GetValue()
		}
	}
	return ""
}
