package load

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// httpDigits is the precision of the HTTP phases' histograms: 2
// significant digits (percentiles within 1 %), 26 KiB a histogram instead
// of 184 KiB, since a phase keeps six of them beside its latencies and
// their question (where did the time go?) is a coarse one.
const httpDigits = 2

// httpHists accumulates a phase's (or the run's) HTTP phases, k6's
// http_req_* (see probe.HTTPPhase), over every request that got an
// answer, failed ones too: a 503's wait is where its time went as well.
type httpHists struct {
	h   [probe.NumHTTPPhases]*hdr.Histogram
	mom [probe.NumHTTPPhases]moments
}

func newHTTPHists() *httpHists {
	x := new(httpHists)
	for i := range x.h {
		x.h[i] = hdr.New(histMin, histMax, httpDigits)
	}
	return x
}

// record adds r's phases, if it got an answer; x may be nil (released).
func (x *httpHists) record(r *probe.Result) {
	if x == nil {
		return
	}
	p, ok := r.HTTPPhases()
	if !ok {
		return
	}
	for i, d := range p {
		v, _ := us(d)
		_ = x.h[i].RecordValue(v) // v is clamped into range
		x.mom[i].add(v)
	}
}

// dists summarises the phases (all zero for nil).
func (x *httpHists) dists() (out [probe.NumHTTPPhases]Dist) {
	if x == nil {
		return out
	}
	for i := range x.h {
		out[i] = summarise(x.h[i], x.mom[i])
	}
	return out
}
