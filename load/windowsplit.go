package load

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// splitWindow keeps the rolling window's TTFT split (where TTFT went:
// Snapshot.TTFTSplit) as the window's latencies are kept: the current
// second's histograms, sealed into each second's sparse copy (secSlot's
// split), merged once a second into the sealed window, and the current
// second merged on top at each snapshot.
type splitWindow struct {
	cur, sealed, scratch [NumSplitParts]*hdr.Histogram
	sealedMom            [NumSplitParts]moments
}

func newSplitWindow() splitWindow {
	var w splitWindow
	for i := range NumSplitParts {
		w.cur[i] = hdr.New(histMin, histMax, partDigits)
		w.sealed[i] = hdr.New(histMin, histMax, partDigits)
		w.scratch[i] = hdr.New(histMin, histMax, partDigits)
	}
	return w
}

// add records r's split, when its server gave its timings, in the
// current second c.
func (w *splitWindow) add(c *secSlot, r *probe.Result) {
	s, ok := r.SplitTTFT()
	if !ok {
		return
	}
	for i, d := range [NumSplitParts]time.Duration{s.Connection, s.Queue, s.Prefill, s.Rest, s.Gap} {
		v, _ := us(d)
		_ = w.cur[i].RecordValue(v) // v is clamped into range
		c.splitMom[i].add(v)
	}
}

// seal moves the current second's histograms into c, sealed.
func (w *splitWindow) seal(c *secSlot) {
	for i := range NumSplitParts {
		c.split[i] = sparsify(w.cur[i])
		w.cur[i].Reset()
	}
}

// reset forgets the current second's (a reset of the run's figures).
func (w *splitWindow) reset() {
	for i := range NumSplitParts {
		w.cur[i].Reset()
	}
}

// clearSealed empties the sealed window before it is built again; addSealed
// adds sealed second s to it.
func (w *splitWindow) clearSealed() {
	for i := range NumSplitParts {
		w.sealed[i].Reset()
		w.sealedMom[i] = moments{}
	}
}

func (w *splitWindow) addSealed(s *secSlot) {
	for i := range NumSplitParts {
		s.split[i].addTo(w.sealed[i])
		w.sealedMom[i].merge(s.splitMom[i])
	}
}

// dists summarises the window, the current second c included, into out.
func (w *splitWindow) dists(c *secSlot, out *[NumSplitParts]Dist) {
	for i := range NumSplitParts {
		if w.sealedMom[i].n+c.splitMom[i].n == 0 { // none timed: nothing to merge
			out[i] = Dist{}
			continue
		}
		w.scratch[i].Reset()
		w.scratch[i].Merge(w.sealed[i])
		w.scratch[i].Merge(w.cur[i])
		mom := w.sealedMom[i]
		mom.merge(c.splitMom[i])
		out[i] = summarise(w.scratch[i], mom)
	}
}
