package compare

import "math"

// Requests that are not independent. The confidence sequences' mixtures
// (anytime.go) count a side's requests as independent draws: n requests
// are worth n. On a real server they are not: a closed loop locks in step
// with the server's batches, and the requests of a second, often of
// several seconds, share a batch's fate (two identical sims' TTFT sat in
// one of two modes that lasted seconds). Then the count of requests at or
// below a value varies between runs by more than a binomial count does,
// and a sequence that reads it as binomial is too sure of itself: on real
// sims 10 of 100 identical pairs were called worse.
//
// What is done here: a design effect (Kish 1965, "Survey Sampling", §8:
// the variance of a clustered sample's count over a simple random
// sample's), estimated from the seconds' own counts, and each side's
// evidence divided by it. A side of n requests with design effect D is
// read as n/D independent requests: its mixture martingale's log, about n
// times a divergence, becomes about n/D times it. The clusters are
// seconds (a batch's shared fate; read at an upper confidence limit, see
// seconds) and blocks of seconds as long as the bootstrap's
// (blockSeconds: the cube root of the seconds held, 5 s over 200 s), so
// that a state lasting seconds is one cluster, not several.
//
// Why not a sequence over per-second aggregates (the fraction of a
// second's requests at or below x as a bounded observation, with a
// betting confidence sequence: Waudby-Smith & Ramdas 2023, "Estimating
// means of bounded random variables by betting", JRSS-B 86(1)): it is
// valid whatever the dependence inside a second, but only because it
// must allow the worst, a second whose requests all fall on one side of
// x. For a tail quantile that costs most of the evidence: a second with
// no request above the baseline's p99 can multiply a bet on "fewer than
// 1 % above" by at most 1/0.99, where twenty independent requests give
// 0.99^-20. Worked through by hand for the stream (20 requests a
// second, TTFT p99 +20 %, the 5 % least effect), the evidence per second
// at the binding point falls from about 0.045 to about 0.015 nats, some
// three times slower to call (an estimate, not measured). The design
// effect keeps the independent requests' pace when they are independent
// (D near 1: TTFT p99's median time to call 252 s with it, 217 s
// without, over the same 15 runs) and slows only as much as the
// dependence it measures. It also covers states of several seconds, which a
// per-second aggregate would take for independent.
//
// The price: D is estimated, not known, so the level holds approximately,
// not by Ville's inequality alone; a side's estimate is from its newest
// requests (the bootstrap's ring), and over a run of few seconds it has
// few blocks and swings wide (conservative: D below one is read as one).
// The sides are judged apart: what both live through together (one
// machine's load, a split's one server) raises each side's D, where the
// bootstrap's paired seconds cancel it. The A/A properties measure the
// level (anytime_props_test.go: independent and per-second correlated
// streams; session's stage: real sims).

// weight is the factor a side's log evidence is read at: 1/D, D at least
// one (a design effect below one, requests more alike across seconds
// than chance, is read as none: conservative).
func weight(deff float64) float64 {
	if !(deff > 1) {
		return 1
	}
	return 1 / deff
}

// designEffect is the design effect of the count of values at or below x
// in the values each gives (n values of v in second sec, any order): see
// seconds.
func designEffect(each func(yield func(sec int32, v float64, n int64)), x float64) float64 {
	first, last, any := int32(0), int32(0), false
	each(func(sec int32, _ float64, _ int64) {
		if !any {
			first, last, any = sec, sec, true
		}
		first, last = min(first, sec), max(last, sec)
	})
	if !any {
		return 1
	}
	secs := make([]block, last-first+1)
	each(func(sec int32, v float64, c int64) {
		b := &secs[sec-first]
		b.n += c
		if v <= x {
			b.k += c
		}
	})
	return seconds(secs)
}

// ringDeff is designEffect over a ring's samples, in one pass, since a
// look makes one for every statistic and side. A ring holds its samples
// in the order they came, so its oldest and newest give the seconds'
// span (a sample out of order is counted in the nearest second).
func ringDeff(r *ring, x float64) float64 {
	if r == nil || len(r.items()) == 0 {
		return 1
	}
	items := r.items()
	first, last := items[0].sec, items[len(items)-1].sec
	if r.full {
		first, last = items[r.next].sec, items[(r.next+len(items)-1)%len(items)].sec
	}
	last = max(first, last)
	secs := make([]block, last-first+1)
	for _, s := range items {
		b := &secs[min(max(s.sec, first), last)-first]
		b.n++
		if s.v <= x {
			b.k++
		}
	}
	return seconds(secs)
}

// block is the values of a block of seconds, and those at or below x.
type block struct{ n, k int64 }

// seconds is the design effect of the counts of consecutive seconds:
// the larger of two readings. Over blocks of one second, where a
// batch's shared fate shows, an upper bound: the estimate over m blocks
// varies as a χ² of m−1 degrees, and read as it comes it is too low in
// half the runs, which a sequence read every second turns into false
// calls (a stream whose seconds share a factor: 7 of 100 runs called,
// against 46 read as independent; with the bound 9 of 1,000, against
// 434); the bound is its 80 % upper
// confidence limit (Wilson–Hilferty's χ² quantile), 9 % above the
// estimate over 200 blocks, 38 % over 20. Over blocks of the cube root
// of the seconds (blockSeconds), where a state lasting seconds shows,
// the estimate itself.
func seconds(secs []block) float64 {
	d1, m1 := dispersion(secs)
	one := d1 * upper(m1-1)
	blk := int(blockSeconds(len(secs)))
	if blk == 1 {
		return max(one, d1)
	}
	blocks := make([]block, (len(secs)-1)/blk+1)
	for i, b := range secs {
		blocks[i/blk].n += b.n
		blocks[i/blk].k += b.k
	}
	db, _ := dispersion(blocks)
	return max(one, db)
}

// upper is k over the 20 % quantile of a χ² of k degrees (Wilson and
// Hilferty 1931): the factor from an estimate of a variance over k
// degrees to its 80 % upper confidence limit. 1 for none.
func upper(k int) float64 {
	if k < 1 {
		return 1
	}
	const z = -0.8416 // the normal's 20 % quantile
	c := 2 / (9 * float64(k))
	q := 1 - c + z*math.Sqrt(c)
	return 1 / max(q*q*q, 0.05)
}

// dispersion is the blocks' counts' spread about their expected share,
// over a binomial count's,
//
//	D = Σ_b (k_b − n_b·p)² / (p(1−p) Σ_b n_b) · m/(m−1),
//
// with p the share at or below x over all, and m the blocks with values.
// 1 when it cannot be told (fewer than two blocks, or every value on one
// side of x).
func dispersion(blocks []block) (float64, int) {
	var n, k int64
	m := 0
	for _, b := range blocks {
		n, k = n+b.n, k+b.k
		if b.n > 0 {
			m++
		}
	}
	if m < 2 || k == 0 || k == n {
		return 1, m
	}
	p := float64(k) / float64(n)
	var ss float64
	for _, b := range blocks {
		d := float64(b.k) - float64(b.n)*p
		ss += d * d
	}
	return ss / (p * (1 - p) * float64(n)) * float64(m) / float64(m-1), m
}
