package engines

import "math"

// Since is what happened between two readings of one server: counters
// and histogram counts as increments, gauges as cur has them. A counter
// or a bucket that fell, histogram bounds that changed or another engine
// is a restart: reset is true and d is cur, everything since zero. A
// counter prev lacks counts from zero (engines add a labelled series at
// its first event: vLLM's aborts). Increments are never negative.
func Since(prev, cur Reading) (d Reading, reset bool) {
	reset = prev.Engine != "" && prev.Engine != cur.Engine
	pv, cv := prev.values(), cur.values()
	for f := range int(firstGauge) {
		if p, c := pv[f], cv[f]; p.Has && c.Has && c.V < p.V {
			reset = true
		}
	}
	ph, ch := prev.hists(), cur.hists()
	for f := range nHists {
		if p, c := *ph[f], *ch[f]; p != nil && c != nil && !rises(p, c) {
			reset = true
		}
	}
	if reset {
		return cur, true
	}
	d = cur
	dv, dh := d.values(), d.hists()
	for f := range int(firstGauge) {
		if c := cv[f]; c.Has {
			*dv[f] = Value{V: c.V - pv[f].V, Has: true} // pv[f].V is 0 when prev lacks it
		}
	}
	for f := range nHists {
		if p, c := *ph[f], *ch[f]; p != nil && c != nil {
			*dh[f] = delta(p, c)
		}
	}
	return d, false
}

// rises says whether cur can follow prev: the same bounds, and no
// cumulative count fell. A bucket's own count that fell while the
// cumulative ones did not is no restart: an exporter that reads its
// buckets and its _count at two moments (the sim's did; the parse takes
// the larger of the +Inf bucket and _count) moves an observation
// between two buckets for one scrape, and delta takes it back.
func rises(prev, cur *Histogram) bool {
	if len(prev.Bounds) != len(cur.Bounds) || len(prev.Counts) != len(cur.Counts) || len(cur.Counts) != len(cur.Bounds) {
		return false
	}
	for i, b := range cur.Bounds {
		if prev.Bounds[i] != b && !(math.IsNaN(b) && math.IsNaN(prev.Bounds[i])) {
			return false
		}
		if cur.Counts[i] < prev.Counts[i] {
			return false
		}
	}
	return true
}

// delta is the histogram of the observations between prev and cur (rises
// holds), its cumulative increments made nondecreasing (see rises).
func delta(prev, cur *Histogram) *Histogram {
	d := &Histogram{Bounds: cur.Bounds, Counts: make([]float64, len(cur.Counts)), Sum: max(cur.Sum-prev.Sum, 0)}
	run := 0.0
	for i := range cur.Counts {
		run = max(run, cur.Counts[i]-prev.Counts[i])
		d.Counts[i] = run
	}
	return d
}
