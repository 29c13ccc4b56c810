package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// The properties of the confidence sequences on synthetic latency
// streams, on a virtual clock: two sides of perSecond requests a second,
// read every second. Pure arithmetic; make test-accuracy runs them
// without -race (their names match its 'FalsePositives' and 'Power').

const perSecond = 20 // requests a second a side

// streamKind is the shape of the synthetic latencies.
type streamKind int

const (
	logNormal streamKind = iota
	// heavyTail: the lognormal body, and one request in twenty
	// multiplied by a Pareto(1.5) factor (a long prefill, a preemption):
	// a tail whose variance is infinite.
	heavyTail
	// correlated: the lognormal body, every request of a second (of a
	// side) multiplied by one factor drawn for that second, e^(0.1·Z):
	// a batch's shared fate, which the requests' independence the
	// mixtures assume is not.
	correlated
)

func (k streamKind) String() string {
	switch k {
	case heavyTail:
		return "heavy-tailed"
	case correlated:
		return "correlated within a second"
	}
	return "lognormal"
}

// streamKinds are every kind of stream the properties draw.
var streamKinds = []streamKind{logNormal, heavyTail, correlated}

// side draws one side's requests: TTFT (median 200 ms), TPOT (median
// 20 ms), E2E (TTFT and 127 TPOTs), 1 % failed; ttft and tpot scale the
// side's latencies (a canary 20 % slower at TTFT: ttft 1.2).
type side struct {
	kind       streamKind
	ttft, tpot float64
	errP       float64
}

// request is one request's figures in milliseconds, its latencies
// multiplied by shared (the second's factor: 1 but for correlated).
func (s side) request(rng *rand.Rand, shared float64) (ttft, tpot, e2e float64, failed bool) {
	ttft = 200 * s.ttft * shared * math.Exp(0.4*rng.NormFloat64())
	if s.kind == heavyTail && rng.Float64() < 0.05 {
		ttft *= math.Pow(1-rng.Float64(), -1/1.5)
	}
	tpot = 20 * s.tpot * shared * math.Exp(0.15*rng.NormFloat64())
	return ttft, tpot, ttft + 127*tpot, rng.Float64() < s.errP
}

// second is the factor every request of a second shares.
func (s side) second(rng *rand.Rand) float64 {
	if s.kind != correlated {
		return 1
	}
	return math.Exp(0.1 * rng.NormFloat64())
}

// sideTally is one side's every request so far, and its newest
// DefaultSamples a metric by second, for the design effect (as Samples
// keeps them).
type sideTally struct {
	ttft, tpot, e2e    valueCounts
	failed, total      int64
	sec                int32
	rTTFT, rTPOT, rE2E *ring
	rErr               *ring
}

func newSideTally() *sideTally {
	return &sideTally{rTTFT: newRing(DefaultSamples), rTPOT: newRing(DefaultSamples), rE2E: newRing(DefaultSamples), rErr: newRing(DefaultSamples)}
}

// add draws the side's n requests of its next second.
func (t *sideTally) add(s side, rng *rand.Rand, n int) {
	t.sec++
	shared := s.second(rng)
	for range n {
		ttft, tpot, e2e, failed := s.request(rng, shared)
		t.total++
		fail := 0.0
		if failed {
			t.failed++
			fail = 1
		}
		t.rErr.add(sample{t.sec, fail})
		if failed {
			continue
		}
		t.ttft.add(ttft, 1)
		t.tpot.add(tpot, 1)
		t.e2e.add(e2e, 1)
		t.rTTFT.add(sample{t.sec, ttft})
		t.rTPOT.add(sample{t.sec, tpot})
		t.rE2E.add(sample{t.sec, e2e})
	}
}

// look is both sides' counts at one look, each metric's made once (in
// buffers a run reuses: see next). With independent, the sides are read
// as independent requests (the design effect left out: the sequences as
// they were before dependence.go).
type look struct {
	t           [2]*sideTally
	counts      map[load.Metric][2]Counts
	made        map[load.Metric]bool
	independent bool
}

func newLook(t [2]*sideTally) *look {
	return &look{t: t, counts: map[load.Metric][2]Counts{}, made: map[load.Metric]bool{}}
}

// next is the look a second later, in the same buffers.
func (l *look) next() *look {
	clear(l.made)
	return l
}

func (l *look) of(m load.Metric) [2]Counts {
	c := l.counts[m]
	if l.made[m] {
		return c
	}
	for i, t := range l.t {
		switch m {
		case load.TPOT:
			c[i] = t.tpot.countsInto(c[i])
		case load.E2E:
			c[i] = t.e2e.countsInto(c[i])
		default:
			c[i] = t.ttft.countsInto(c[i])
		}
	}
	l.counts[m], l.made[m] = c, true
	return c
}

// deffs sets both sides' design effects of a quantile q of c (metric m)
// from their rings, unless the look is independent.
func (l *look) deffs(c *[2]Counts, m load.Metric, q float64) {
	for i, t := range l.t {
		c[i].DesignEffect = 0
		if l.independent {
			continue
		}
		r := t.rTTFT
		switch m {
		case load.TPOT:
			r = t.rTPOT
		case load.E2E:
			r = t.rE2E
		}
		if x, _, ok := c[i].Quantile(q); ok {
			c[i].DesignEffect = ringDeff(r, x)
		}
	}
}

// rates are both sides' error rates as the sequences read them.
func (l *look) rates() [2]rateSide {
	var out [2]rateSide
	for i, t := range l.t {
		out[i] = rateSide{failed: t.failed, total: t.total, w: 1}
		if !l.independent {
			out[i].w = weight(ringDeff(t.rErr, 0.5))
		}
	}
	return out
}

// called reports whether a look at both sides calls st different by more
// than min (worse: the interval above +min; better: below -min) at the
// per-statistic level alpha, or (gate) breaches a margin: above it.
func (l *look) called(st Stat, alpha, min float64, gate bool) bool {
	t := l.t
	if st.ErrorRate {
		if t[0].total < int64(st.minSamples()) || t[1].total < int64(st.minSamples()) {
			return false
		}
		r := l.rates()
		return rateExcludes(r, alpha, min, below) || (!gate && rateExcludes(r, alpha, -min, above))
	}
	c := l.of(st.Metric)
	if c[0].Total() < int64(st.minSamples()) || c[1].Total() < int64(st.minSamples()) {
		return false
	}
	l.deffs(&c, st.Metric, st.Q)
	worse, better := quantileCalls(c[0], c[1], st.Q, alpha, min, -min)
	return worse || (!gate && better)
}

// aaRuns is how many seeded runs of each kind of stream the false-alarm
// property makes: 30 by default (make test-accuracy and go test
// ./compare without -race), 100 with INFERTOP_AA_RUNS=100, the issue's
// 1,000 with INFERTOP_AA_RUNS=1000 (hours of CPU: each run reads 1,800
// looks of five statistics, the correlated stream twice).
func aaRuns(t *testing.T) int {
	if v := os.Getenv("INFERTOP_AA_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 30
}

// TestAnytimeFalsePositives: aaRuns seeded A/A runs of each kind of
// stream (two sides of one distribution, 20 requests a second each, 30
// minutes read every second, from the first second MinSeconds allows):
// at most 1 % of runs ever call a difference at any look, for each
// default statistic and for the five together, with no least difference
// (the bare sequences: a call with DefaultMinEffect is a call without it
// too, so none bounds both). On the stream correlated within a second the
// sequences read as independent requests (without the design effect) are
// run beside, and must fail there: the stream is one the correction is
// needed for. Measured 2026: see the log.
func TestAnytimeFalsePositives(t *testing.T) {
	if raceDetector {
		t.Skip("pure arithmetic: make test-accuracy runs it without -race")
	}
	runs := aaRuns(t)
	stats := DefaultStats()
	alpha := (1 - DefaultConfidence) / float64(len(stats))
	for _, kind := range streamKinds {
		// calls[r][i]: the runs reading r (0: with the design effect, 1:
		// as independent) ever called statistic i, the family last.
		var calls [2][]int
		calls[0], calls[1] = make([]int, len(stats)+1), make([]int, len(stats)+1)
		var mu sync.Mutex
		var wg sync.WaitGroup
		seeds := make(chan int)
		for range 2 {
			wg.Go(func() {
				for seed := range seeds {
					ever := aaRun(uint64(seed), kind, stats, alpha, kind == correlated)
					mu.Lock()
					for r, e := range ever {
						any := false
						for i, called := range e {
							if called {
								calls[r][i]++
								any = true
							}
						}
						if any {
							calls[r][len(stats)]++
						}
					}
					mu.Unlock()
				}
			})
		}
		for seed := range runs {
			seeds <- seed
		}
		close(seeds)
		wg.Wait()
		for r, reading := range []string{"with the design effect", "read as independent"} {
			if r == 1 && kind != correlated {
				continue
			}
			line := fmt.Sprintf("%s, %s: of %d runs, ever called:", kind, reading, runs)
			for i, st := range stats {
				line += fmt.Sprintf(" %s %d,", st.Name, calls[r][i])
			}
			t.Logf("%s family %d", line, calls[r][len(stats)])
		}
		for i, n := range calls[0] {
			if n > allowed(runs) {
				t.Errorf("%s: %s called in %d of %d runs, more than 1 %% allows (%d)", kind, statName(stats, i), n, runs, allowed(runs))
			}
		}
		if kind == correlated && calls[1][len(stats)]*100 <= runs {
			t.Errorf("%s: read as independent requests, the family was called in %d of %d runs: the stream no longer tests the correction", kind, calls[1][len(stats)], runs)
		}
	}
}

// allowed is the most runs of n that may call: 1 % of them from the
// issue's 1,000 runs on; fewer runs (the stages' 30) are held to the
// count a true rate of 1 % passes 99 % of the time, so that chance alone
// fails them once in a hundred (measured: the correlated stream's family
// is called in 9 of 1,000 runs, so "none of 30" would fail a quarter of
// the stages).
func allowed(n int) int {
	if n >= 1000 {
		return n / 100
	}
	// The binomial's tail: the least k with P(X > k) < 1 % for X ~ B(n, 0.01).
	p, cum := math.Pow(0.99, float64(n)), 0.0
	for k := 0; ; k++ {
		cum += p
		if 1-cum < 0.01 {
			return k
		}
		p *= float64(n-k) / float64(k+1) * 0.01 / 0.99
	}
}

// statName is statistic i of stats, or the family past them.
func statName(stats []Stat, i int) string {
	if i < len(stats) {
		return stats[i].Name
	}
	return "the family"
}

// aaRun is one A/A run: whether each statistic was ever called, read
// with the design effect, and (with independent) read as independent
// requests.
func aaRun(seed uint64, kind streamKind, stats []Stat, alpha float64, independent bool) [][]bool {
	rng := rand.New(rand.NewPCG(seed, 0xaa))
	same := side{kind: kind, ttft: 1, tpot: 1, errP: 0.01}
	var t [2]*sideTally
	t[0], t[1] = newSideTally(), newSideTally()
	looks := []*look{newLook(t)}
	if independent {
		looks = append(looks, newLook(t))
		looks[1].independent = true
	}
	ever := make([][]bool, len(looks))
	for i := range ever {
		ever[i] = make([]bool, len(stats))
	}
	for sec := 1; sec <= 30*60; sec++ {
		t[0].add(same, rng, perSecond)
		t[1].add(same, rng, perSecond)
		if sec < MinSeconds {
			continue
		}
		for r, l := range looks {
			l = l.next()
			for i, st := range stats {
				if !ever[r][i] && l.called(st, alpha, 0, false) {
					ever[r][i] = true
				}
			}
		}
	}
	return ever
}

// TestAnytimePower: the median time to call a canary 20 % slower at every
// TTFT worse at TTFT p99, and one 10 % slower at TPOT worse at TPOT p50
// (the default least difference, 5 %, and confidence), at 20 requests a
// second a side, on both kinds of stream; with INFERTOP_POWER=1 beside
// the bootstrap read every second on the same streams (slow: a
// bootstrap a look). The figures are logged; the bounds asserted are
// loose guards against a regression of the method (measured 2026-12-03,
// with the design effect: TPOT p50 34 s, TTFT p99 272 s lognormal, the
// bootstrap's 20 s and 47 s; the heavy tail's p99 moves by a fifth of
// its probability only, and takes far longer: past 600 s). TTFT p99's
// goal of 60 s is out of reach of any sequence at this level: at the
// point that binds, the two sides' evidence grows by about 0.045 nats a
// second (the binomial divergences of 20 requests, 0.993 against 0.99
// below and 0.983 against 0.99 above, with the 5 % least effect), and a
// call needs log(1/α) = 4.6 nats and the mixture's cost, 100 s or more.
func TestAnytimePower(t *testing.T) {
	if raceDetector {
		t.Skip("pure arithmetic: make test-accuracy runs it without -race")
	}
	stats := DefaultStats()
	alpha := (1 - DefaultConfidence) / float64(len(stats))
	ttftP99, tpotP50 := mustStat(t, "ttft_p99"), mustStat(t, "tpot_p50")
	const runs = 51
	for _, kind := range []streamKind{logNormal, heavyTail} {
		for _, c := range []struct {
			st   Stat
			slow side
			goal time.Duration
		}{
			{ttftP99, side{kind: kind, ttft: 1.2, tpot: 1, errP: 0.01}, 60 * time.Second},
			{tpotP50, side{kind: kind, ttft: 1, tpot: 1.1, errP: 0.01}, 30 * time.Second},
		} {
			var took []int
			for seed := range uint64(runs) {
				took = append(took, timeToCall(seed, kind, c.slow, c.st, alpha, 10*60))
			}
			med := time.Duration(median(took)) * time.Second
			t.Logf("%s, %s %s: median time to call %v (goal %v); times %v", kind, c.st.Name, slowText(c.slow), med, c.goal, quartiles(took))
			if c.st == tpotP50 && med > 45*time.Second || c.st == ttftP99 && kind == logNormal && med > 7*time.Minute {
				t.Errorf("%s, %s: median time to call %v, past its guard", kind, c.st.Name, med)
			}
			if os.Getenv("INFERTOP_POWER") != "" {
				var bt []int
				for seed := range uint64(21) {
					bt = append(bt, bootstrapTimeToCall(seed, kind, c.slow, c.st, 10*60))
				}
				t.Logf("%s, %s %s: the bootstrap's median time to call %v over 21 runs; times %v", kind, c.st.Name, slowText(c.slow),
					time.Duration(median(bt))*time.Second, quartiles(bt))
			}
		}
	}
}

// TestAnytimeMarginFalsePositives: a canary 5 % slower at every latency
// is never a breach of a +10 % margin (ttft_p99<+10%, tpot_p50<+10%) at
// any look of 30 minutes, in a tenth of aaRuns runs of each kind (10 at
// the least).
func TestAnytimeMarginFalsePositives(t *testing.T) {
	if raceDetector {
		t.Skip("pure arithmetic: make test-accuracy runs it without -race")
	}
	stats := DefaultStats()
	alpha := (1 - DefaultConfidence) / float64(len(stats))
	ttftP99, tpotP50 := mustStat(t, "ttft_p99"), mustStat(t, "tpot_p50")
	for _, kind := range []streamKind{logNormal, heavyTail} {
		breaches := 0
		for seed := range uint64(marginRuns(t)) {
			rng := rand.New(rand.NewPCG(seed, 0x5))
			base, slow := side{kind: kind, ttft: 1, tpot: 1, errP: 0.01}, side{kind: kind, ttft: 1.05, tpot: 1.05, errP: 0.01}
			var tt [2]*sideTally
			tt[0], tt[1] = newSideTally(), newSideTally()
			for sec := 1; sec <= 30*60; sec++ {
				tt[0].add(base, rng, perSecond)
				tt[1].add(slow, rng, perSecond)
				if l := newLook(tt); sec >= MinSeconds && (l.called(ttftP99, alpha, 0.10, true) || l.called(tpotP50, alpha, 0.10, true)) {
					breaches++
					break
				}
			}
		}
		t.Logf("%s, +5%% against a +10%% margin: %d of %d runs breached at some look", kind, breaches, marginRuns(t))
		if breaches > 0 {
			t.Errorf("%s: +5%% called beyond a +10%% margin in %d runs", kind, breaches)
		}
	}
}

// marginRuns is TestAnytimeMarginFalsePositives' runs of each kind.
func marginRuns(t *testing.T) int { return max(aaRuns(t)/10, 10) }

func slowText(s side) string {
	return fmt.Sprintf("(canary TTFT ×%.2f, TPOT ×%.2f)", s.ttft, s.tpot)
}

// timeToCall is the first second at which st is called worse, up to
// limit seconds (limit+1: never).
func timeToCall(seed uint64, kind streamKind, slow side, st Stat, alpha float64, limit int) int {
	rng := rand.New(rand.NewPCG(seed, 0x90))
	base := side{kind: kind, ttft: 1, tpot: 1, errP: 0.01}
	var t [2]*sideTally
	t[0], t[1] = newSideTally(), newSideTally()
	for sec := 1; sec <= limit; sec++ {
		t[0].add(base, rng, perSecond)
		t[1].add(slow, rng, perSecond)
		if sec >= MinSeconds && newLook(t).called(st, alpha, DefaultMinEffect, true) {
			return sec
		}
	}
	return limit + 1
}

// bootstrapTimeToCall is timeToCall for today's bootstrap over Samples,
// on the same streams (its newest DefaultSamples a side).
func bootstrapTimeToCall(seed uint64, kind streamKind, slow side, st Stat, limit int) int {
	rng := rand.New(rand.NewPCG(seed, 0x90))
	base := side{kind: kind, ttft: 1, tpot: 1, errP: 0.01}
	t0 := time.Unix(0, 0)
	s := NewSamples(DefaultStats(), 0, t0)
	for sec := 1; sec <= limit; sec++ {
		for i, sd := range []side{base, slow} {
			shared := sd.second(rng)
			for j := range perSecond {
				ttft, tpot, e2e, failed := sd.request(rng, shared)
				res := probe.Result{HasTTFT: true, TTFT: ms(ttft), E2E: ms(e2e), OutputTokens: 128}
				_ = tpot // the record's TPOT is (E2E-TTFT)/127, which is tpot
				if failed {
					res.Class = probe.HTTP5xx
				}
				now := t0.Add(time.Duration(sec)*time.Second + time.Duration(j)*time.Second/perSecond)
				s.Observe(Side(i), load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, now)
			}
		}
		if sec < MinSeconds {
			continue
		}
		c := s.Compare(Options{Seed: seed + uint64(sec), Resamples: 500})
		for _, r := range c.Results {
			if r.Stat.Name == st.Name && r.Verdict == Worse {
				return sec
			}
		}
	}
	return limit + 1
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func median(xs []int) int {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func quartiles(xs []int) string {
	s := slices.Sorted(slices.Values(xs))
	return fmt.Sprintf("q1 %d s, median %d s, q3 %d s", s[len(s)/4], s[len(s)/2], s[3*len(s)/4])
}

// TestAllowed: the false-alarm property's bound on its runs' calls.
func TestAllowed(t *testing.T) {
	for n, want := range map[int]int{30: 2, 100: 4, 1000: 10} {
		if got := allowed(n); got != want {
			t.Errorf("allowed(%d) = %d, want %d", n, got, want)
		}
	}
}
