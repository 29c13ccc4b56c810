package engines

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"
)

// Bounds on what one reading may cost and on the numbers believed of it.
// A page is someone else's text: a reading keeps only the families the
// tables name, summed as it goes, so its memory is a few kilobytes
// whatever the page; a page past these bounds is an error, not a guess.
const (
	// maxPageBytes is the most of a page read (a vLLM page of several
	// models is about 100 KB; a million short series of a family not read
	// is 20 MB, skipped line by line).
	maxPageBytes = 32 << 20
	// maxLineBytes is the longest line (a real one is under 1 KB).
	maxLineBytes = 64 << 10
	// maxSeries is the most samples of one family read (a histogram's
	// buckets over its label sets: vLLM's 20 buckets by many models).
	maxSeries = 8192
	// maxBuckets is the most distinct bounds of one merged histogram; one
	// past it is set aside.
	maxBuckets = 512
	// maxBoundSeconds is the largest finite bucket bound believed: vLLM's
	// last is 7,680 s; a day is past any.
	maxBoundSeconds = 86_400
	// maxCount is the largest counter, gauge or count believed: 10^15
	// tokens is a server generating a million a second for thirty years.
	maxCount = 1e15
	// maxSamples is the most samples of the families read on one page
	// (a vLLM page of four models has about 1,200; a hundred LoRA
	// adapters' series 30,000): what a page may cost in the set of
	// series seen.
	maxSamples = 1 << 17
	// maxTargets is the most metrics one family fills (vLLM's
	// request_success fills three).
	maxTargets = 8
)

// errSample marks a sample of a family read that is not a sample.
var errSample = errors.New("a malformed sample")

// Parse reads a Prometheus text exposition (or OpenMetrics) of one
// server. A page of no engine known is ErrUnknown; one past the bounds
// is ErrBounds; a malformed sample of a family read is an error naming
// its line. Lines of other families are skipped unread.
func Parse(r io.Reader) (Reading, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxPageBytes+1), maxLineBytes)
	p := newReader()
	read := 0
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		read += len(line)
		if read > maxPageBytes {
			return Reading{}, fmt.Errorf("%w: more than %d MiB", ErrBounds, maxPageBytes>>20)
		}
		if err == bufio.ErrBufferFull {
			// A line of a family read is never this long; one of another
			// (an info metric's labels) is skipped to its end.
			if name, _, _ := nameOf(line); len(lookup(&p.buf, name)) > 0 {
				return Reading{}, fmt.Errorf("%w: line %d longer than %d KiB", ErrBounds, n, maxLineBytes>>10)
			}
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				if read += len(line); read > maxPageBytes {
					return Reading{}, fmt.Errorf("%w: more than %d MiB", ErrBounds, maxPageBytes>>20)
				}
			}
			line = nil
		}
		if err != nil && err != io.EOF {
			return Reading{}, fmt.Errorf("metrics page: %w", err)
		}
		if e := p.line(line); e != nil {
			return Reading{}, fmt.Errorf("metrics page, line %d: %w", n, e)
		}
		if err == io.EOF {
			return p.reading()
		}
	}
}

// reader sums the samples read into each table's figures.
type reader struct {
	acc     []*tableAcc // by table, nil until one of its samples comes
	samples int         // of the families read, for maxSamples
	// the last name looked up and what it fills
	lastName    []byte
	lastTargets []target
	hasLast     bool
	seen        map[uint64]struct{}
	seed        maphash.Seed
	buf         [128]byte
}

// tableAcc is one table's figures as they are summed.
type tableAcc struct {
	samples int
	series  []int // samples read of each metric
	vals    [nValues][maxRank]valAcc
	hists   [nHists][maxRank]*histAcc
}

type valAcc struct {
	sum float64
	n   int
}

// histAcc is a histogram summed over series by bound.
type histAcc struct {
	bounds, counts []float64 // finite bounds, as first seen
	inf, count     float64   // the +Inf buckets', the _count's
	sum            float64
	bad            bool // a number that cannot be true: set aside
}

func newReader() *reader {
	return &reader{acc: make([]*tableAcc, len(tables)), seen: make(map[uint64]struct{}, 1024), seed: maphash.MakeSeed()}
}

// line reads one line of a text page.
func (p *reader) line(b []byte) error {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	name, rest, inBraces := nameOf(b)
	targets := p.lookup(name)
	if len(targets) == 0 {
		return nil
	}
	if p.samples++; p.samples > maxSamples {
		return fmt.Errorf("%w: more than %d samples of the families read", ErrBounds, maxSamples)
	}
	if len(targets) > maxTargets {
		targets = targets[:maxTargets]
	}
	var (
		le      []byte
		hasLE   bool
		condVal [maxTargets][]byte
	)
	labelsAt := rest
	if inBraces || len(rest) > 0 && rest[0] == '{' {
		if !inBraces {
			rest = rest[1:]
		}
		var err error
		rest, err = labels(rest, func(k, v []byte) {
			if string(k) == "le" {
				le, hasLE = v, true
			}
			for i, t := range targets {
				if m := &tables[t.table].metrics[t.metric]; m.when.on(k) {
					condVal[i] = v
				}
			}
		})
		if err != nil {
			return err
		}
	}
	series := labelsAt[:len(labelsAt)-len(rest)]
	rest = skipBlank(rest, false)
	end := upTo(rest, ' ')
	v, err := strconv.ParseFloat(string(rest[:end]), 64)
	if err != nil || end == 0 {
		return errSample
	}
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.Write(name)
	h.WriteByte(0)
	h.Write(series)
	key := h.Sum64()
	if _, dup := p.seen[key]; dup {
		return nil // a series twice: the first stands
	}
	p.seen[key] = struct{}{}
	lev := math.NaN()
	if hasLE {
		if lev, err = strconv.ParseFloat(string(le), 64); err != nil {
			lev = math.NaN()
		}
	}
	for i, t := range targets {
		if m := &tables[t.table].metrics[t.metric]; len(m.when.labels) > 0 && !matchCond(&m.when, condVal[i]) {
			continue
		}
		if err := p.add(t, hasLE, lev, v); err != nil {
			return err
		}
	}
	return nil
}

// lookup is index's lookup, remembering the last name: a histogram's
// buckets come one after another under one name, and most lines of a
// page are buckets.
func (p *reader) lookup(name []byte) []target {
	if p.hasLast && string(name) == string(p.lastName) {
		return p.lastTargets
	}
	p.lastTargets = lookup(&p.buf, name)
	p.lastName, p.hasLast = append(p.lastName[:0], name...), true
	return p.lastTargets
}

// nameOf is a sample line's metric name (nil for a comment, a blank
// line or no name), what follows it, and whether that is inside the
// braces (the UTF-8 form, {"name", labels...} value).
func nameOf(b []byte) (name, rest []byte, inBraces bool) {
	b = skipBlank(b, false)
	switch {
	case len(b) == 0 || b[0] == '#':
		return nil, nil, false
	case b[0] == '{':
		name, rest, ok := quoted(b[1:])
		if !ok {
			return nil, nil, false
		}
		return name, rest, true
	}
	// The name ends at its labels or at a blank; IndexByte's vector scans
	// beat a loop over each byte of a long name.
	end := bytes.IndexByte(b, '{')
	if end < 0 {
		end = len(b)
	}
	if i := bytes.IndexByte(b[:end], ' '); i >= 0 {
		end = i
	}
	if i := bytes.IndexByte(b[:end], '\t'); i >= 0 {
		end = i
	}
	return b[:end], b[end:], false
}

// matchCond says whether a label's value selects a metric's series.
func matchCond[T string | []byte](c *cond, v T) bool {
	in := slices.ContainsFunc(c.values, func(want string) bool { return string(v) == want })
	return in != c.not
}

// quoted reads a double-quoted string at the start of b (escapes kept as
// written) and returns it and what follows.
func quoted(b []byte) (s, rest []byte, ok bool) {
	b = skipBlank(b, false)
	if len(b) == 0 || b[0] != '"' {
		return nil, b, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[1:i], b[i+1:], true
		}
	}
	return nil, b, false
}

// labels reads label pairs up to and past the closing brace, handing
// each to f (the value as written, escapes kept).
func labels(b []byte, f func(k, v []byte)) (rest []byte, err error) {
	for {
		b = skipBlank(b, true)
		if len(b) == 0 {
			return nil, errSample
		}
		if b[0] == '}' {
			return b[1:], nil
		}
		var k []byte
		if b[0] == '"' {
			var ok bool
			if k, b, ok = quoted(b); !ok {
				return nil, errSample
			}
		} else {
			end := upTo(b, '=')
			if end == 0 || end == len(b) {
				return nil, errSample
			}
			k, b = b[:end], b[end:]
		}
		b = skipBlank(b, false)
		if len(b) == 0 || b[0] != '=' {
			// a bare quoted name inside the braces is the UTF-8 form's
			// metric name: not a label
			if len(b) > 0 && (b[0] == ',' || b[0] == '}') {
				continue
			}
			return nil, errSample
		}
		v, after, ok := quoted(b[1:])
		if !ok {
			return nil, errSample
		}
		f(k, v)
		b = after
	}
}

// blank says whether c is a space or a tab.
func blank(c byte) bool { return c == ' ' || c == '\t' }

// skipBlank drops the spaces and tabs at the start of b (and with comma,
// the commas). Loops of their own: bytes.TrimLeft builds its set at every
// call, a third of a page's reading.
func skipBlank(b []byte, comma bool) []byte {
	for len(b) > 0 && (blank(b[0]) || comma && b[0] == ',') {
		b = b[1:]
	}
	return b
}

// upTo is the index of the first blank (or c) in b, or len(b).
func upTo(b []byte, c byte) int {
	for i, x := range b {
		if blank(x) || x == c {
			return i
		}
	}
	return len(b)
}

// table is the figures of table i, made when first needed.
func (p *reader) table(i uint16) *tableAcc {
	if p.acc[i] == nil {
		p.acc[i] = &tableAcc{series: make([]int, len(tables[i].metrics))}
	}
	return p.acc[i]
}

// add sums one sample into its metric's figure. A number that cannot be
// true is set aside: for a counter or a gauge that sample, for a
// histogram the whole histogram.
func (p *reader) add(t target, hasLE bool, le, v float64) error {
	m := &tables[t.table].metrics[t.metric]
	a := p.table(t.table)
	if a.series[t.metric]++; a.series[t.metric] > maxSeries {
		return fmt.Errorf("%w: more than %d series of %s", ErrBounds, maxSeries, m.name)
	}
	a.samples++
	scale := m.scale
	if scale == 0 {
		scale = 1
	}
	value := func(x float64) {
		if !plausible(x) || m.field.averaged() && x > 1 {
			return
		}
		va := &a.vals[m.field][m.rank]
		va.sum += x
		va.n++
	}
	switch {
	case t.part == pValue && !m.field.isHist():
		value(v * scale)
	case m.sumOf:
		if t.part == pSum {
			value(v * scale)
		}
	case m.field.isHist() && t.part != pValue && t.part != pFamily:
		hp := &a.hists[m.field-firstHist][m.rank]
		if *hp == nil {
			*hp = &histAcc{}
		}
		(*hp).add(t.part, hasLE, le*scale, v, scale)
	}
	return nil
}

// add sums one sample of a histogram's series.
func (h *histAcc) add(pt part, hasLE bool, le, v, scale float64) {
	if h.bad {
		return
	}
	switch pt {
	case pSum:
		if x := v * scale; plausible(x) {
			h.sum += x
		}
	case pCount:
		if !plausible(v) {
			h.bad = true
			return
		}
		h.count += v
	case pBucket:
		if !hasLE || math.IsNaN(le) || le < 0 || !math.IsInf(le, 1) && le > maxBoundSeconds || !plausible(v) {
			h.bad = true
			return
		}
		if math.IsInf(le, 1) {
			h.inf += v
			return
		}
		if i := slices.Index(h.bounds, le); i >= 0 {
			h.counts[i] += v
			return
		}
		if len(h.bounds) >= maxBuckets {
			h.bad = true
			return
		}
		h.bounds = append(h.bounds, le)
		h.counts = append(h.counts, v)
	}
}

// histogram is the summed histogram: bounds ascending, +Inf last (the
// larger of the +Inf buckets and the _count: a series may omit either),
// and the counts made cumulative where a page's were not (as
// histogram_quantile does). Nil when set aside or without a finite bound.
// Series are summed bound by bound: exact when they share their bounds,
// as one engine's do; series of other bounds are held monotonic, not
// made exact.
func (h *histAcc) histogram() *Histogram {
	if h == nil || h.bad || len(h.bounds) == 0 {
		return nil
	}
	order := make([]int, len(h.bounds))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case h.bounds[a] < h.bounds[b]:
			return -1
		case h.bounds[a] > h.bounds[b]:
			return 1
		}
		return 0
	})
	out := &Histogram{Bounds: make([]float64, 0, len(order)+1), Counts: make([]float64, 0, len(order)+1), Sum: h.sum}
	run := 0.0
	for _, i := range order {
		run = max(run, h.counts[i])
		out.Bounds = append(out.Bounds, h.bounds[i])
		out.Counts = append(out.Counts, run)
	}
	out.Bounds = append(out.Bounds, math.Inf(1))
	out.Counts = append(out.Counts, max(run, h.inf, h.count))
	return out
}

// reading is the figures of the table with the most samples read.
func (p *reader) reading() (Reading, error) {
	best := -1
	for i, a := range p.acc {
		if a != nil && (best < 0 || a.samples > p.acc[best].samples) {
			best = i
		}
	}
	if best < 0 {
		return Reading{}, ErrUnknown
	}
	a := p.acc[best]
	r := Reading{Engine: tables[best].engine}
	vals := r.values()
	for f := range nValues {
		for rank := range maxRank {
			va := a.vals[f][rank]
			if va.n == 0 {
				continue
			}
			x := va.sum
			if field(f).averaged() {
				x /= float64(va.n)
			}
			*vals[f] = Value{V: min(x, maxCount), Has: true}
			break
		}
	}
	hists := r.hists()
	for f := range nHists {
		for rank := range maxRank {
			if h := a.hists[f][rank]; h != nil {
				*hists[f] = h.histogram()
				break
			}
		}
	}
	return r, nil
}

// values are the Reading's counters and gauges, by field.
func (r *Reading) values() [nValues]*Value {
	return [nValues]*Value{
		fRequests: &r.Requests, fFailed: &r.Failed, fAborted: &r.Aborted, fRejected: &r.Rejected,
		fPrompt: &r.PromptTokens, fGen: &r.GenTokens, fCached: &r.CachedPromptTokens, fPreempt: &r.Preemptions,
		fSpecDraft: &r.SpecDraftTokens, fSpecAccepted: &r.SpecAcceptedTokens,
		fRunning: &r.Running, fWaiting: &r.Waiting, fKV: &r.KVUsage, fHitRate: &r.CacheHitRate,
	}
}

// hists are the Reading's histograms, by field less firstHist.
func (r *Reading) hists() [nHists]**Histogram {
	return [nHists]**Histogram{fTTFT - firstHist: &r.TTFT, fITL - firstHist: &r.ITL, fE2E - firstHist: &r.E2E, fQueue - firstHist: &r.Queue}
}

// plausible says whether v can be a count, a gauge or a counter: finite,
// not negative, at most maxCount.
func plausible(v float64) bool {
	return !math.IsNaN(v) && v >= 0 && v <= maxCount
}
