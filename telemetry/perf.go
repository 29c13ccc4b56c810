package telemetry

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// PerfSource names where the server's per-request performance comes
// from, as shown and written.
const PerfSource = "TensorRT-LLM /perf_metrics"

// PerfURLFor is the /perf_metrics of an engine from its API URL: at its
// root, as /metrics.
func PerfURLFor(apiURL string) string {
	u := ServerURLFor(apiURL)
	if u == "" {
		return ""
	}
	return strings.TrimSuffix(u, "/metrics") + probe.PerfMetricsPath
}

// The perf parts, in the order PerfRun.Parts and PerfView.Parts hold
// them: the engine's queue, its prefill, its TTFT (their sum) and its
// generation.
const (
	PerfQueue = iota
	PerfPrefill
	PerfTTFT
	PerfGeneration
	NumPerfParts
)

// PerfPartKeys are the parts' keys in the JSON and the exporter, in
// their order (PerfQueue, ...).
func PerfPartKeys() []string { return []string{"queue", "prefill", "ttft", "generation"} }

// PerfCounts are the server's counts summed over its entries: its prefix
// cache's KV blocks reused and missed, speculative decoding's draft
// tokens accepted of those proposed.
type PerfCounts struct {
	ReusedBlocks, MissedBlocks int64
	SpecAccepted, SpecDrafted  int64
}

func (c *PerfCounts) add(e *probe.ServerPerf) {
	if e.HasBlocks {
		c.ReusedBlocks += e.ReusedBlocks
		c.MissedBlocks += e.MissedBlocks
	}
	if e.HasSpec {
		c.SpecAccepted += e.SpecAccepted
		c.SpecDrafted += e.SpecDrafted
	}
}

// BlockHitRate is the share of KV blocks the prefix cache held; ok false
// without blocks.
func (c PerfCounts) BlockHitRate() (float64, bool) {
	n := c.ReusedBlocks + c.MissedBlocks
	if n == 0 {
		return 0, false
	}
	return float64(c.ReusedBlocks) / float64(n), true
}

// PerfRun is the server's own per-request performance over the run, read
// from its /perf_metrics (TensorRT-LLM): the server's distribution of the
// requests it finished while the run lasted, not joined to infertop's
// requests (its entries carry the server's own id), so other clients'
// requests and the warm-up's are in it too.
type PerfRun struct {
	// Offered is false when the server has no /perf_metrics (Err says
	// what it answered: a status, or no JSON list).
	Offered bool
	Err     string
	// Entries are the entries read; Before those drained by the first
	// read, finished before the run (left out of every figure); Refused
	// those with no figure in bounds; Lost those past a read's bound.
	// LostReads counts the reads past a bound (8 MiB, or too many JSON
	// values) during the run, whose entries are all lost, uncounted.
	Entries, Before, Refused, Lost, LostReads int64
	// Parts are the distributions of the spans (PerfQueue, ...), over the
	// entries that gave each.
	Parts [NumPerfParts]load.Dist
	PerfCounts
	// Joined counts the entries joined to infertop's requests, through
	// the server's own number that names its answer (recent versions:
	// chatcmpl-<request_id>, see probe.PerfRequestID); Split is their
	// client TTFTs split by where they went (by load.SplitConnection...
	// SplitGap, as a phase's TTFTSplit).
	Joined int64
	Split  [load.NumSplitParts]load.Dist
}

// PerfView is the server's per-request performance over the window:
// each span's p50 and p99 over the entries read in it, the counts summed.
type PerfView struct {
	Entries int
	Parts   [NumPerfParts]PerfSpan
	PerfCounts
	// Joined is the window's entries joined to infertop's requests, Split
	// their client TTFTs split (as PerfRun's).
	Joined int
	Split  [load.NumSplitParts]PerfSpan
	Age    time.Duration
	Stale  bool
	Err    string
}

// PerfSpan is one span's p50 and p99 over a window's entries (N of them
// gave it).
type PerfSpan struct {
	N        int
	P50, P99 time.Duration
}

// maxPerfWindow bounds the entries kept for the window's figures.
const maxPerfWindow = 1 << 14

// timedPerf is an entry and when it was read, with its request's TTFT
// split where it was joined to one.
type timedPerf struct {
	at     time.Time
	e      probe.ServerPerf
	split  probe.TTFTSplit
	joined bool
}

// maxPending bounds each side of the join waiting for the other: the
// requests whose entries are not read yet, the entries whose requests
// are not back yet (the server adds an entry after its answer ends, and
// the client's record may come a moment after that too).
const maxPending = 1 << 13

// pending is one side of the join, by the server's number, the oldest
// dropped past maxPending.
type pending[T any] struct {
	m     map[uint64]T
	order []uint64
}

func (p *pending[T]) put(id uint64, v T) {
	if p.m == nil {
		p.m = make(map[uint64]T)
	}
	p.m[id] = v
	p.order = append(p.order, id)
	for len(p.m) > maxPending || len(p.order) > 2*maxPending {
		delete(p.m, p.order[0]) // taken already, or the oldest waiting
		p.order = p.order[1:]
	}
}

func (p *pending[T]) take(id uint64) (T, bool) {
	v, ok := p.m[id]
	if ok {
		delete(p.m, id)
	}
	return v, ok
}

// clientSide is what the join needs of one of infertop's requests.
type clientSide struct {
	ttft, blocked time.Duration
	// split says the answer carried the server's timings itself
	// (include_metrics): its split is already in the exporter's series
	// (runner's Observe), and the join's must not count it again.
	split bool
}

// joinSplit splits a request's client TTFT with its server's entry, as
// probe.Result.SplitTTFT splits it with vLLM's per-request metrics.
func joinSplit(c clientSide, e *probe.ServerPerf) (probe.TTFTSplit, bool) {
	if !e.HasQueue || !e.HasTTFT {
		return probe.TTFTSplit{}, false
	}
	r := probe.Result{HasTTFT: true, TTFT: c.ttft, Blocked: c.blocked,
		Server: probe.ServerTimings{Queue: e.Queue, HasQueue: true, TTFT: e.TTFT, HasTTFT: true}}
	return r.SplitTTFT()
}

func splitParts(s probe.TTFTSplit) [load.NumSplitParts]time.Duration {
	return [load.NumSplitParts]time.Duration{s.Connection, s.Queue, s.Prefill, s.Rest, s.Gap}
}

// perfAcc is the scraper's account of /perf_metrics.
type perfAcc struct {
	src     source
	read    bool // the first read is done (its entries: Before)
	offered bool
	run     PerfRun
	hists   [NumPerfParts]*hdr.Histogram
	recent  []timedPerf
	// The join: each side waiting for the other, and the joined
	// requests' splits.
	clients pending[clientSide]
	servers pending[probe.ServerPerf]
	split   [load.NumSplitParts]*hdr.Histogram
}

// record adds d to *h, made on first use.
func record(h **hdr.Histogram, d time.Duration) {
	if *h == nil {
		*h = load.NewHistogram()
	}
	_ = (*h).RecordValue(min(max(d.Microseconds(), 1), (*h).HighestTrackableValue()))
}

// joinLocked records the split of a request joined to its entry, e its
// entry of the window (nil: it is no longer there).
func (s *Scraper) joinLocked(c clientSide, e *probe.ServerPerf, in *timedPerf) {
	sp, ok := joinSplit(c, e)
	if !ok {
		return
	}
	p := &s.perf
	p.run.Joined++
	for i, d := range splitParts(sp) {
		record(&p.split[i], d)
	}
	if in != nil {
		in.split, in.joined = sp, true
	}
	if s.cfg.OnSplit != nil && !c.split {
		s.cfg.OnSplit(sp)
	}
}

// NoteRequest offers one of infertop's finished requests for the join:
// a completed stream with a TTFT whose answer's id names the server's
// number (probe.PerfRequestID) waits for its entry, or joins the entry
// already read. Nothing when /perf_metrics is not read.
func (s *Scraper) NoteRequest(r *probe.Result) {
	if s == nil || s.cfg.PerfURL == "" || !r.OK() || !r.HasTTFT {
		return
	}
	id, ok := probe.PerfRequestID(r.ID)
	if !ok {
		return
	}
	_, answered := r.SplitTTFT()
	c := clientSide{ttft: r.TTFT, blocked: r.Blocked, split: answered}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.perf
	if !p.offered || p.src.dropped {
		return
	}
	e, ok := p.servers.take(id)
	if !ok {
		p.clients.put(id, c)
		return
	}
	var in *timedPerf
	for i := len(p.recent) - 1; i >= 0; i-- { // the entry, likely among the newest
		if x := &p.recent[i]; x.e.HasID && x.e.RequestID == id {
			in = x
			break
		}
	}
	s.joinLocked(c, &e, in)
}

// readPerf reads one /perf_metrics answer at at. The first read drains
// what the server kept from before the run.
func (s *Scraper) readPerf(r io.Reader, at time.Time) error {
	got, err := probe.ReadPerfMetrics(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.perf
	if err != nil {
		if errors.Is(err, probe.ErrNotPerfList) {
			return err
		}
		// Past a bound: the server has the list (and drained it for this
		// read). Before the run, a backlog too long to read is left out
		// like any other; during it, the read's entries are lost, said.
		p.offered = true
		if !p.read {
			p.read = true
			return nil
		}
		p.run.LostReads++
		return err
	}
	p.offered = true
	if !p.read {
		p.read = true
		p.run.Before += int64(len(got.Entries) + got.Refused + got.Past)
		return nil
	}
	p.run.Refused += int64(got.Refused)
	p.run.Lost += int64(got.Past)
	i := 0
	for i < len(p.recent) && (at.Sub(p.recent[i].at) > keep || len(p.recent)-i+len(got.Entries) > maxPerfWindow) {
		i++
	}
	p.recent = p.recent[i:]
	for _, e := range got.Entries {
		p.run.Entries++
		p.run.add(&e)
		for k, d := range perfParts(&e) {
			if d >= 0 {
				record(&p.hists[k], d)
			}
		}
		var in *timedPerf
		if len(p.recent) < maxPerfWindow {
			p.recent = append(p.recent, timedPerf{at: at, e: e})
			in = &p.recent[len(p.recent)-1]
		}
		if e.HasID {
			if c, ok := p.clients.take(e.RequestID); ok {
				s.joinLocked(c, &e, in)
			} else {
				p.servers.put(e.RequestID, e)
			}
		}
		if s.cfg.OnPerf != nil {
			s.cfg.OnPerf(e)
		}
	}
	return nil
}

// perfParts are e's spans in the parts' order, -1 where unknown.
func perfParts(e *probe.ServerPerf) [NumPerfParts]time.Duration {
	pick := func(d time.Duration, has bool) time.Duration {
		if has {
			return d
		}
		return -1
	}
	return [NumPerfParts]time.Duration{pick(e.Queue, e.HasQueue), pick(e.Prefill, e.HasPrefill), pick(e.TTFT, e.HasTTFT), pick(e.Generation, e.HasGeneration)}
}

// scrapePerf reads /perf_metrics when due. A server without one (before
// any answer was a list: an answer that is not, or a status of 3xx or
// 4xx, a 404 or an auth gateway's 401) is dropped: it is not asked
// again. A read that failed otherwise (a timeout, a 503, a connection
// refused) is tried again, backing off, as /metrics is.
func (s *Scraper) scrapePerf(ctx context.Context, now time.Time) {
	err := s.scrape(ctx, now, &s.perf.src, s.cfg.PerfURL, s.readPerf)
	s.mu.Lock()
	defer s.mu.Unlock()
	var se statusError
	gone := errors.Is(err, probe.ErrNotPerfList) || errors.As(err, &se) && se.code < 500
	if p := &s.perf; !p.offered && err != nil && gone && ctx.Err() == nil {
		p.src.dropped = true
		p.run.Err = p.src.err
	}
}

// StartPerf reads /perf_metrics once, within ctx, before the load starts:
// what the server kept from before the run is drained and left out, and a
// server without one is known (and not asked again) from the start.
func (s *Scraper) StartPerf(ctx context.Context) {
	if s == nil || s.cfg.PerfURL == "" {
		return
	}
	s.scrapePerf(ctx, time.Now())
}

// FinalPerf reads /perf_metrics once more, within ctx: the entries of
// the run's last requests, which the server adds after their answers'
// last bytes. Nothing when it is not read or not offered.
func (s *Scraper) FinalPerf(ctx context.Context) {
	if s == nil || s.cfg.PerfURL == "" {
		return
	}
	s.mu.Lock()
	ok := s.perf.offered && !s.perf.src.dropped
	s.mu.Unlock()
	if !ok {
		return
	}
	now := time.Now()
	_ = s.get(ctx, s.cfg.PerfURL, func(r io.Reader) error { return s.readPerf(r, now) }) // an error: the figures so far stand
}

// PerfRun is the server's per-request performance over the run; ok is
// false when /perf_metrics is not read (not asked for, or nothing
// answered yet).
func (s *Scraper) PerfRun() (PerfRun, bool) {
	if s == nil || s.cfg.PerfURL == "" {
		return PerfRun{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.perf
	if !p.offered && p.run.Err == "" {
		return PerfRun{}, false
	}
	out := p.run
	out.Offered = p.offered
	for k, h := range p.hists {
		if h != nil {
			out.Parts[k] = load.DistOf(h)
		}
	}
	for k, h := range p.split {
		if h != nil {
			out.Split[k] = load.DistOf(h)
		}
	}
	return out, true
}

// perfViewLocked is the window's PerfView; nil when /perf_metrics is not
// read or not offered.
func (s *Scraper) perfViewLocked(now time.Time, window time.Duration) *PerfView {
	p := &s.perf
	if s.cfg.PerfURL == "" || !p.offered {
		return nil
	}
	v := &PerfView{Age: now.Sub(p.src.last), Err: p.src.err,
		Stale: p.src.err != "" || now.Sub(p.src.last) > 3*s.cfg.Every+time.Second}
	var parts [NumPerfParts][]time.Duration
	var split [load.NumSplitParts][]time.Duration
	for _, x := range p.recent {
		if now.Sub(x.at) > window {
			continue
		}
		v.Entries++
		v.add(&x.e)
		for k, d := range perfParts(&x.e) {
			if d >= 0 {
				parts[k] = append(parts[k], d)
			}
		}
		if x.joined {
			v.Joined++
			for k, d := range splitParts(x.split) {
				split[k] = append(split[k], d)
			}
		}
	}
	for k, ds := range parts {
		v.Parts[k] = spanOf(ds)
	}
	for k, ds := range split {
		v.Split[k] = spanOf(ds)
	}
	return v
}

// spanOf is the p50 and p99 of ds (sorted here).
func spanOf(ds []time.Duration) PerfSpan {
	if len(ds) == 0 {
		return PerfSpan{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(int(q*float64(len(ds))), len(ds)-1)] }
	return PerfSpan{N: len(ds), P50: at(0.5), P99: at(0.99)}
}
