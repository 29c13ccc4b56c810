package session

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sim"
)

// The comparison's two properties against real sims, the stage of their
// own that make test-compare runs (and .ci/run after make test-endurance):
// minutes of sims, too long for make test's budget, and without -race.
// The race detector makes the judgement no safer (it is arithmetic on one
// goroutine; the suite has the pair's fan-out under -race) and it distorts
// what is measured: with both sims and both engines instrumented on two
// busy cores, one side of two identical sims was 10-16 % slower at TTFT
// p50 than the other (seen), a real difference of the two processes'
// timing that the bootstrap rightly calls, not a property of the sims.

// compareStage skips t outside the stage (INFERTOP_COMPARE unset, or
// -short) and under -race (see above).
func compareStage(t *testing.T) {
	t.Helper()
	if testing.Short() || os.Getenv("INFERTOP_COMPARE") == "" {
		t.Skip("minutes of sims: the comparison stage (make test-compare)")
	}
	if raceDetector {
		t.Skip("the race detector distorts the two sims' timing: make test-compare runs it without -race")
	}
}

// identicalRun is one run of TestPairFalsePositives: its seed, the
// comparison at the end, and whether a live comparison said worse before.
type identicalRun struct {
	seed    uint64
	c       compare.Comparison
	liveBad bool
}

// margin is how near the run came to a worse verdict: the largest lower
// bound of a statistic's interval as a multiple of its minimum effect (a
// verdict says worse past 1), and that statistic. An interval of one point
// (the error rate when neither side failed) says nothing and is passed over.
func (r identicalRun) margin() (float64, compare.Result) {
	m, at := math.Inf(-1), compare.Result{}
	for _, res := range r.c.Results {
		least := compare.DefaultMinEffect
		if res.Stat.ErrorRate {
			least = compare.DefaultMinErrorEffect
		}
		if res.Lo != res.Hi && res.Lo/least > m {
			m, at = res.Lo/least, res
		}
	}
	return m, at
}

func better(c compare.Comparison) bool {
	return slices.ContainsFunc(c.Results, func(r compare.Result) bool { return r.Verdict == compare.Better })
}

// Property (1)'s load and numbers. Twenty pairs at once: each pair's
// sides suffer the same contention at the same moment, and the bootstrap
// draws seconds for both sides together, so what the other pairs do to
// the machine cancels out of a pair's difference (what does not cancel is
// what the property is about). The hold is the fewest seconds a statistic
// is judged after (MinSeconds, the dashboard's) and one more for the
// first, partial one: each statistic has several hundred samples a side
// (p99 needs 200), so every run is judged as the dashboard judges it at
// its first verdict. Every request is the same length, as the dashboard's
// default load: the hard case. A closed loop then phase-locks with the
// sim's decode steps, TTFT turns bimodal (about 6 ms and 10 ms here), and
// which mode a side sits in more is a state that lasts seconds. Measured
// with MinSeconds 10 and one-second blocks: 8 of 100 runs called worse
// and 8 better, all at TTFT p50, whose difference spread 8.7 % (s.d.)
// between runs where the intervals implied about 1.5 %; with two-second
// blocks 7 worse; with MinSeconds 20 and cube-root blocks (blockSeconds),
// 1 of 100. With output lengths spread ±50 % none of 100 was called even
// at 10 s. It can fail: with a canary 1.1× slower (at 10 s, spread
// lengths), 77 of 100 were called worse.
const (
	identicalRuns   = 100
	identicalAtOnce = 20
)

// identicalLoad is run seed's load (seed from 0).
func identicalLoad(seed uint64) load.Config {
	return load.Config{Knobs: load.Knobs{Concurrency: 4, PromptTokens: 64, OutputTokens: 16}, Seed: seed + 1}
}

// runIdentical runs identicalRuns pairs, identicalAtOnce at a time: a
// baseline of quick's model and a canary whose costs are canary times it
// (1: the same), judged by opt. Each run varies the load's seed (the
// prompts) and the sims' (their jitter); the two sims of a run have
// different seeds, so their step jitter is drawn independently, as two
// replicas' noise is: with one seed both would draw the same jitter
// step for step and look more alike than any two endpoints.
func runIdentical(t *testing.T, canary float64, opt compare.Options) []identicalRun {
	t.Helper()
	hold := time.Duration(compare.MinSeconds+1) * time.Second
	var runs []identicalRun
	for batch := range identicalRuns / identicalAtOnce {
		// A subtest per batch: its cleanups stop the batch's pairs and sims
		// before the next starts.
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			var pairs []*Pair
			var seeds []uint64
			for i := range identicalAtOnce {
				seed := uint64(batch*identicalAtOnce + i)
				base := quick(t, 2*seed+1)
				can := slower(quick(t, 2*seed+2), canary)
				// The dashboard's pace of live comparisons (Config.Every's
				// default): ten pairs at 200 ms would spend a core on them.
				pairs = append(pairs, startPairEvery(t, base, can, identicalLoad(seed), opt, time.Second))
				seeds = append(seeds, seed)
			}
			live := make([]bool, len(pairs))
			for end := time.Now().Add(hold); time.Now().Before(end); {
				time.Sleep(time.Second)
				for i, p := range pairs {
					if c, ok := p.Comparison(); ok && compare.Comparison.Worse(c) {
						live[i] = true
					}
				}
			}
			for i, p := range pairs {
				// What the dashboard computes every second, now.
				runs = append(runs, identicalRun{seed: seeds[i], c: p.Compare(0), liveBad: live[i]})
			}
		})
	}
	return runs
}

// TestPairFalsePositives checks property (1): two sims with the same
// parameters (but their jitter's seed, see runIdentical), under the same
// load with the same seed, are called worse ("canary slower" or "failing
// more") at the end of the run in at most 7 of 100 seeded runs (see the
// bound below), judged by
// Pair.Compare with the dashboard's options (MinEffect 5 %, 0.1pp for the
// error rate, Bonferroni 99 % a statistic). Every statistic of every run
// must have been judged, so that the count is of verdicts, not of runs too
// short to have one. The runs called faster (a false positive the other
// way) and those called worse at some live look before the end are
// logged, not held to a bound: a person watching looks many times, the
// property is about the verdict at the end.
func TestPairFalsePositives(t *testing.T) {
	compareStage(t)
	start := time.Now()
	runs := runIdentical(t, 1, compare.Options{})
	if t.Failed() {
		return
	}
	fps, faster, live, unjudged := 0, 0, 0, 0
	for _, r := range runs {
		if compare.Comparison.Worse(r.c) {
			fps++
		}
		if better(r.c) {
			faster++
		}
		if r.liveBad {
			live++
		}
		for _, res := range r.c.Results {
			if res.Verdict == compare.NotEnough {
				unjudged++
				t.Errorf("seed %d: %s not judged (%d/%d samples over %d s): %s", r.seed, res.Stat.Name, res.NBaseline, res.NCanary, res.Seconds, r.c.Line())
			}
		}
	}
	slices.SortFunc(runs, func(a, b identicalRun) int {
		ma, _ := a.margin()
		mb, _ := b.margin()
		return cmp.Compare(mb, ma)
	})
	for _, r := range runs[:5] { // the nearest to a worse verdict
		m, res := r.margin()
		t.Logf("seed %d: %s %s (%s), its lower bound %.2f of the minimum effect: %s", r.seed, res.Stat.Name, res.DeltaText(), res.Interval(), m, r.c.Line())
	}
	t.Logf("%d runs in %v: called worse at the end: %d of %d; faster: %d; worse at some live look: %d",
		len(runs), time.Since(start).Round(time.Second), fps, len(runs), faster, live)
	// The bound is the count's, not the rate's: 100 runs of a rate
	// measured at about 2.6 % (0, 1, 3, 3 and 6 of 100 in five runs of
	// this stage, 2026-12-03) pass "at most 5" only 95 % of the time, so
	// the stage failed on chance alone; "at most 7" fails 0.6 % of the
	// time at that rate, and still fails most runs of a rate of 10 %.
	if fps > 7 {
		t.Errorf("%d of %d identical pairs called worse at the end (want at most 7)", fps, len(runs))
	}
}

// TestPairDefaultSim checks property (2): at the default sim's default
// load (load.DefaultConcurrency, DefaultPromptTokens, DefaultOutputTokens),
// a canary 20 % slower (every cost of the model 1.2×, so TTFT p99 too) is
// called slower within 60 s. The time to that verdict is logged with
// whether TTFT p99 itself was judged worse by then, and the watch goes on
// to 60 s for TTFT p99's own verdict (logged, not held: at about 8
// requests a second its 200 samples take half a minute).
func TestPairDefaultSim(t *testing.T) {
	compareStage(t)
	d, err := sim.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	const within = 60 * time.Second
	p := pairOfSims(t, d, slower(d, 1.2), load.Config{Knobs: load.Knobs{Concurrency: load.DefaultConcurrency,
		PromptTokens: load.DefaultPromptTokens, OutputTokens: load.DefaultOutputTokens}, Seed: 1}, compare.Options{})
	start := time.Now()
	c, took := waitVerdict(p, within, compare.Comparison.Worse)
	t.Logf("called after %v (TTFT p99 judged worse by then: %v): %s", took.Round(100*time.Millisecond), ttftP99Worse(c), c.Line())
	if !strings.HasPrefix(c.Line(), "canary slower") {
		t.Fatalf("not called slower in %v: %s", within, c.Line())
	}
	if !ttftP99Worse(c) {
		c, _ = waitVerdict(p, within-time.Since(start), ttftP99Worse)
		if ttftP99Worse(c) {
			t.Logf("TTFT p99 judged worse after %v: %s", time.Since(start).Round(100*time.Millisecond), c.Line())
		} else {
			t.Logf("TTFT p99 not judged worse in %v: %s", within, c.Line())
		}
	}
}

// TestPairAnytimeFalsePositives: issue 41's bound on real sims. Ten
// identical pairs at once (runIdentical's sims and load), judged with
// the confidence sequences (compare.Options.Anytime, the design effect
// from each side's seconds) and read every second for a minute past the
// first verdict (MinSeconds): none may ever call a difference, worse or
// better, at any look. The bootstrap is read beside on the same pairs,
// every second, and its calls logged: what the sequences are for.
func TestPairAnytimeFalsePositives(t *testing.T) {
	compareStage(t)
	const pairs = 10
	watch := time.Duration(compare.MinSeconds)*time.Second + time.Minute
	var ps []*Pair
	for i := range pairs {
		seed := uint64(i)
		ps = append(ps, startPairEvery(t, paced(quick(t, 2*seed+1)), paced(quick(t, 2*seed+2)), identicalLoad(seed), compare.Options{Anytime: true}, time.Second))
	}
	var seq, boot [pairs]string // each pair's first call, and when
	start := time.Now()
	for time.Since(start) < watch {
		time.Sleep(time.Second)
		at := time.Since(start).Round(time.Second)
		for i, p := range ps {
			if c, ok := p.Comparison(); ok && seq[i] == "" && differs(c) {
				seq[i] = fmt.Sprintf("at %v: %s", at, c.Line())
			}
			if c := p.src.Compare(compare.Options{Seed: uint64(at)}); boot[i] == "" && differs(c) {
				boot[i] = fmt.Sprintf("at %v: %s", at, c.Line())
			}
		}
	}
	called := func(firsts [pairs]string, method string) int {
		n := 0
		for i, f := range firsts {
			if f != "" {
				n++
				t.Logf("pair %d, %s: %s", i, method, f)
			}
		}
		return n
	}
	nSeq, nBoot := called(seq, "sequences"), called(boot, "bootstrap")
	t.Logf("%d identical pairs read every second for %v: ever called different: sequences %d, bootstrap %d", pairs, watch, nSeq, nBoot)
	for _, p := range ps {
		if c := p.Compare(0); slices.ContainsFunc(c.Results, func(r compare.Result) bool { return r.Verdict == compare.NotEnough }) {
			t.Errorf("a statistic not judged at the end: %s", c.Line())
		}
	}
	if nSeq > 0 {
		t.Errorf("the sequences called %d of %d identical pairs different at some look (want none)", nSeq, pairs)
	}
}

// paced is p with steps ten times as long (20 ms and 1 ms a sequence, a
// small model's decode): twenty sims of 2 ms steps on two cores spend
// most of a TTFT of a few milliseconds waiting for the scheduler, and
// which sim of a pair the scheduler favoured held for the whole run
// (TTFT p50 ±16-25 % between identical sims, called by the sequences in 3
// of 10 pairs, by the bootstrap in 6): a difference of the machine, not
// of the builds. With the sims' own time dominant, as a server's is, a
// millisecond of scheduling is a few per cent.
func paced(p sim.Params) sim.Params {
	p.StepBase, p.StepPerSeq = 20*time.Millisecond, time.Millisecond
	return p
}

// differs says a comparison calls a difference either way.
func differs(c compare.Comparison) bool { return compare.Comparison.Worse(c) || better(c) }
