package load

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/probe"
)

// partDigits is the precision of the histograms of a time's parts (the
// HTTP phases, the TTFT's split): 2 significant digits (percentiles
// within 1 %), 26 KiB a histogram instead of 184 KiB, since a phase keeps
// eleven of them beside its latencies and their question (where did the
// time go?) is a coarse one.
const partDigits = 2

// partHists accumulates the distributions of a time's parts, for a phase
// or the run.
type partHists struct {
	h   []*hdr.Histogram
	mom []moments
}

func newPartHists(n int) *partHists {
	x := &partHists{h: make([]*hdr.Histogram, n), mom: make([]moments, n)}
	for i := range x.h {
		x.h[i] = hdr.New(histMin, histMax, partDigits)
	}
	return x
}

// add records part i; a negative part (a server's clock rounding past
// the client's) counts as the histograms' least.
func (x *partHists) add(i int, d time.Duration) {
	v, _ := us(d)
	_ = x.h[i].RecordValue(v) // v is clamped into range
	x.mom[i].add(v)
}

// dists summarises the parts into out (left zero for nil).
func (x *partHists) dists(out []Dist) {
	if x == nil {
		return
	}
	for i := range x.h {
		out[i] = summarise(x.h[i], x.mom[i])
	}
}

// The parts a client's TTFT splits into (probe.TTFTSplit), as
// Phase.TTFTSplit holds them: the connection, the server's queue and
// prefill, the rest, and the gap (the client's TTFT less the server's).
const (
	SplitConnection = iota
	SplitQueue
	SplitPrefill
	SplitRest
	SplitGap
	NumSplitParts
)

// serverAcc is a phase's (or the run's) account of where its time went:
// the HTTP phases, k6's http_req_* (see probe.HTTPPhase), over every
// request that got an answer, failed ones too (a 503's wait is where its
// time went as well); the TTFT's split and the prefix cache's tokens over
// the requests whose server said.
type serverAcc struct {
	http, split *partHists
	// timed counts the requests the server gave any timing or count of
	// its own for; cached the prompt tokens its cache held, of the
	// prompt tokens cachedOf of the completed requests that said.
	timed, cached, cachedOf int64
	// counted is the completed streamed requests whose output count is
	// the server's; mismatched those of them where the client's own
	// count (a token a message) differs from it.
	counted, mismatched int64
	// specAccepted of specDrafted are the draft tokens accepted of those
	// speculative decoding proposed, over the completed requests whose
	// server said both.
	specAccepted, specDrafted int64
}

func newServerAcc() *serverAcc {
	return &serverAcc{http: newPartHists(int(probe.NumHTTPPhases)), split: newPartHists(NumSplitParts)}
}

// record adds r; x may be nil (released).
func (x *serverAcc) record(r *probe.Result) {
	if x == nil {
		return
	}
	if p, ok := r.HTTPPhases(); ok {
		for i, d := range p {
			x.http.add(i, d)
		}
	}
	if r.Server.Any() {
		x.timed++
	}
	if s, ok := r.SplitTTFT(); ok {
		for i, d := range [NumSplitParts]time.Duration{s.Connection, s.Queue, s.Prefill, s.Rest, s.Gap} {
			x.split.add(i, d)
		}
	}
	if r.OK() && !r.OutputEstimated && r.HasTTFT && !r.Unstreamed {
		x.counted++
		if r.OutputTokens != r.Messages {
			x.mismatched++
		}
	}
	if cached, of, ok := PromptCached(r); ok {
		x.cached += cached
		x.cachedOf += of
	}
	if r.OK() && r.Server.HasSpec {
		x.specAccepted += int64(r.Server.SpecAccepted)
		x.specDrafted += int64(r.Server.SpecDrafted)
	}
}

// PromptCached is what the server's prefix cache held of r's prompt, by
// the server's own count: cached of its prompt tokens; false where r did
// not complete, or its server did not say both (the hit rate is cached
// over of, summed).
func PromptCached(r *probe.Result) (cached, of int64, ok bool) {
	if !r.OK() || !r.Server.HasCached || r.InputEstimated {
		return 0, 0, false
	}
	return int64(min(r.Server.CachedTokens, r.InputTokens)), int64(r.InputTokens), true
}

// fill puts the account in p.
func (x *serverAcc) fill(p *Phase) {
	if x == nil {
		return
	}
	x.http.dists(p.HTTP[:])
	x.split.dists(p.TTFTSplit[:])
	p.ServerTimed, p.CachedTokens, p.CachedOf = x.timed, x.cached, x.cachedOf
	p.ServerCounted, p.CountMismatch = x.counted, x.mismatched
	p.SpecAccepted, p.SpecDrafted = x.specAccepted, x.specDrafted
}
