package sim

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// perfMetrics is TensorRT-LLM's /perf_metrics as the sim serves it
// (Params.PerfMetrics): the records of the requests answered since the
// last read, at most max of them (the oldest dropped first), drained as
// they are read, as trtllm-serve keeps them with return_perf_metrics and
// perf_metrics_max_requests.
type perfMetrics struct {
	mu   sync.Mutex
	max  int
	recs []Record
	// base is the origin of the times served: the server's steady clock,
	// whose origin means nothing to a client (only spans do).
	base time.Time
}

func newPerfMetrics(max int) *perfMetrics {
	return &perfMetrics{max: max, base: time.Now()}
}

// add keeps r when it was answered with tokens (a failed or cancelled
// request has no entry in TensorRT-LLM's list).
func (p *perfMetrics) add(r *Record) {
	if r.Status != http.StatusOK || r.Cancelled || r.FirstToken.IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.recs) == p.max {
		p.recs = append(p.recs[:0], p.recs[1:]...)
	}
	p.recs = append(p.recs, *r)
}

// drain takes the records kept.
func (p *perfMetrics) drain() []Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.recs
	p.recs = nil
	return out
}

// handlePerfMetrics serves GET /perf_metrics in TensorRT-LLM's shape
// (openai_server.py's get_perf_metrics): one entry a request, with
// request_id, first_iter and last_iter, timing_metrics in seconds of the
// server's steady clock, kv_cache_metrics in blocks of the prefix
// cache's (Params.BlockTokens), and speculative_decoding where drafts were
// proposed (Params.SpecDecode).
func (s *Server) handlePerfMetrics(w http.ResponseWriter, _ *http.Request) {
	recs := s.perf.drain()
	bt := s.p.BlockTokens
	if bt == 0 {
		bt = DefaultBlockTokens
	}
	at := func(b []byte, t time.Time) []byte {
		return strconv.AppendFloat(b, 1000+t.Sub(s.perf.base).Seconds(), 'f', 6, 64)
	}
	b := make([]byte, 0, 64+700*len(recs))
	b = append(b, '[')
	for i, r := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		scheduled := r.Admitted
		if scheduled.IsZero() {
			scheduled = r.Arrived
		}
		b = append(b, `{"request_id":`...)
		b = strconv.AppendUint(b, r.ID, 10)
		b = append(b, `,"perf_metrics":{"first_iter":0,"last_iter":`...)
		b = strconv.AppendInt(b, int64(max(r.OutputTokens-1, 0)), 10)
		b = append(b, `,"timing_metrics":{"server_arrival_time":`...)
		b = at(b, r.Arrived)
		b = append(b, `,"arrival_time":`...)
		b = at(b, r.Arrived)
		b = append(b, `,"first_scheduled_time":`...)
		b = at(b, scheduled)
		b = append(b, `,"first_token_time":`...)
		b = at(b, r.FirstToken)
		b = append(b, `,"server_first_token_time":`...)
		b = at(b, r.FirstToken)
		b = append(b, `,"last_token_time":`...)
		b = at(b, r.LastToken)
		blocks := (r.PromptTokens + bt - 1) / bt
		reused := min(r.CachedTokens/bt, blocks)
		b = append(b, `},"kv_cache_metrics":{"num_total_allocated_blocks":`...)
		b = strconv.AppendInt(b, int64(blocks), 10)
		b = append(b, `,"num_new_allocated_blocks":`...)
		b = strconv.AppendInt(b, int64(blocks-reused), 10)
		b = append(b, `,"num_reused_blocks":`...)
		b = strconv.AppendInt(b, int64(reused), 10)
		b = append(b, `,"num_missed_blocks":`...)
		b = strconv.AppendInt(b, int64(blocks-reused), 10)
		b = append(b, '}')
		if sd := s.p.SpecDecode; sd.Draft > 0 {
			if c := sd.counts(s.p.Seed, r.ID, r.OutputTokens); c.drafted > 0 {
				b = append(b, `,"speculative_decoding":{"acceptance_rate":`...)
				b = strconv.AppendFloat(b, float64(c.accepted)/float64(c.drafted), 'f', 6, 64)
				b = append(b, `,"total_accepted_draft_tokens":`...)
				b = strconv.AppendInt(b, int64(c.accepted), 10)
				b = append(b, `,"total_draft_tokens":`...)
				b = strconv.AppendInt(b, int64(c.drafted), 10)
				b = append(b, '}')
			}
		}
		b = append(b, "}}"...)
	}
	b = append(b, ']')
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
