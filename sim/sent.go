package sim

import (
	"sync/atomic"
	"time"
)

// sentRecord is the server's own record of the output tokens it wrote to
// streams, by the millisecond each write was flushed: what a client
// counting tokens as they arrive is held to. It is kept only when asked
// for (RecordTokens), for a bounded span.
type sentRecord struct {
	from time.Time
	bins []atomic.Int64 // tokens flushed in each millisecond from from
	late atomic.Int64   // tokens flushed past the span
}

// recordBin is the record's resolution.
const recordBin = time.Millisecond

// RecordTokens starts the record of the tokens the server writes to
// streams, from now for span (at a millisecond's resolution: 8 bytes a
// millisecond). Call it before the load starts; tokens written after
// span are counted apart.
func (s *Server) RecordTokens(span time.Duration) {
	r := &sentRecord{from: time.Now(), bins: make([]atomic.Int64, max(span/recordBin, 1))}
	s.sent.Store(r)
}

// countSent adds n tokens flushed at now to the record, if one is kept.
func (s *Server) countSent(now time.Time, n int) {
	r := s.sent.Load()
	if r == nil || n <= 0 {
		return
	}
	if i := int(now.Sub(r.from) / recordBin); i >= 0 && i < len(r.bins) {
		r.bins[i].Add(int64(n))
	} else {
		r.late.Add(int64(n))
	}
}

// TokensSent returns the output tokens the server flushed to streams in
// each of n intervals of width bin from from, by the record RecordTokens
// started (nil without one); an interval outside the record's span
// counts 0.
func (s *Server) TokensSent(from time.Time, bin time.Duration, n int) []int64 {
	r := s.sent.Load()
	if r == nil {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		lo := from.Add(time.Duration(i) * bin).Sub(r.from)
		hi := lo + bin
		for j := max(int(lo/recordBin), 0); j < len(r.bins) && time.Duration(j)*recordBin < hi; j++ {
			out[i] += r.bins[j].Load()
		}
	}
	return out
}
