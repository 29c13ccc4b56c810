package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestParseInvalidRate: invalid_rate is a rate in percentage points, added
// to the defaults only when asked (Stats' extra) or named.
func TestParseInvalidRate(t *testing.T) {
	st, err := ParseStat(" Invalid_Rate ")
	if err != nil || !st.Invalid || !st.ErrorRate || st.Name != "invalid_rate" || st.Label() != "invalid rate" {
		t.Fatalf("ParseStat: %+v %v", st, err)
	}
	reg, err := ParseRegression("invalid_rate<+1pp")
	if err != nil || reg.Stat != st || reg.Tolerance != 0.01 {
		t.Fatalf("ParseRegression: %+v %v", reg, err)
	}
	if _, err := ParseRegression("invalid_rate<+1%"); err == nil || !strings.Contains(err.Error(), "invalid_rate<+0.5pp") {
		t.Fatalf("a relative invalid rate: %v", err)
	}
	if _, err := ParseStat("invalid_p99"); err == nil || !strings.Contains(err.Error(), "invalid_rate") {
		t.Fatalf("an unknown statistic's error names invalid_rate: %v", err)
	}
	has := func(stats []Stat) int {
		n := 0
		for _, s := range stats {
			if s.Invalid {
				n++
			}
		}
		return n
	}
	if n := has(Stats(nil)); n != 0 {
		t.Fatalf("the defaults judge the invalid rate (%d)", n)
	}
	if n := has(Stats([]Regression{reg}, InvalidRate())); n != 1 {
		t.Fatalf("named and extra: %d invalid rates", n)
	}
	if got := Stats(nil, InvalidRate()); got[len(got)-1] != InvalidRate() || len(got) != len(DefaultStats())+1 {
		t.Fatalf("extra: %v", got)
	}
}

// feedInvalid feeds secs seconds of perSec requests a side: every third
// not judged, every 50th failed (an error, never an invalid answer), and
// of the canary's judged answers every 20th invalid (5 %).
func feedInvalid(observe func(Side, load.Record, time.Time), t0 time.Time, secs, perSec int) {
	for sec := range secs {
		for side := range 2 {
			for i := range perSec {
				res := probe.Result{HasTTFT: true, TTFT: 50 * time.Millisecond, E2E: 500 * time.Millisecond, OutputTokens: 16}
				n := sec*perSec + i
				switch {
				case n%50 == 7:
					res.Class = probe.HTTP5xx
				case n%3 != 0:
					res.Output.Judged = true
					res.Output.Valid = side == 0 || n%20 != 1
				}
				now := t0.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Second/time.Duration(perSec))
				observe(Side(side), load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}, now)
			}
		}
	}
}

// TestSamplesInvalidRate: a canary whose answers break 5 % of the time
// against a clean baseline is worse on the invalid rate, breaching
// invalid_rate<+1pp, by the confidence sequences and by the bootstrap;
// only the judged answers count, and the error rate is unmoved.
func TestSamplesInvalidRate(t *testing.T) {
	reg, err := ParseRegression("invalid_rate<+1pp")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1e9, 0)
	const secs, perSec = 60, 30
	for _, anytime := range []bool{true, false} {
		s := NewSamples(Stats([]Regression{reg}), 0, t0)
		s.SetAnytime(anytime)
		feedInvalid(s.Observe, t0, secs, perSec)
		c := s.Compare(Options{Regressions: []Regression{reg}, Anytime: anytime, Seed: 1})
		var inv, errs Result
		for _, r := range c.Results {
			switch r.Stat.Name {
			case "invalid_rate":
				inv = r
			case "error_rate":
				errs = r
			}
		}
		// Judged: the completed requests not a multiple of 3.
		judged := 0
		for n := range secs * perSec {
			if n%50 != 7 && n%3 != 0 {
				judged++
			}
		}
		if inv.NBaseline != judged || inv.NCanary != judged || inv.Baseline != 0 || inv.Canary < 0.045 || inv.Canary > 0.055 {
			t.Fatalf("anytime %v: invalid rate %+v (want %d judged a side, 5 %% on the canary)", anytime, inv, judged)
		}
		if inv.Verdict != Worse || !c.Breached() {
			t.Fatalf("anytime %v: %s: %+v", anytime, c.Line(), inv)
		}
		if errs.NBaseline != secs*perSec || errs.Verdict == Worse {
			t.Fatalf("anytime %v: error rate %+v", anytime, errs)
		}
		if b := c.Breaches(); len(b) != 1 || b[0].Expr != "invalid_rate<+1pp" {
			t.Fatalf("anytime %v: breaches %+v", anytime, b)
		}
		if !strings.HasPrefix(c.Line(), "canary breaking more answers: invalid rate +") {
			t.Fatalf("anytime %v: line %q", anytime, c.Line())
		}
		var sb strings.Builder
		if err := c.WriteTable(&sb, "a", "b"); err != nil || !strings.Contains(sb.String(), "invalid rate") {
			t.Fatalf("table (%v):\n%s", err, sb.String())
		}
	}
}

// TestGroupsInvalidRate: a split judges the invalid rate as a pair does.
func TestGroupsInvalidRate(t *testing.T) {
	reg, _ := ParseRegression("invalid_rate<+1pp")
	t0 := time.Unix(1e9, 0)
	g := NewGroups(Stats([]Regression{reg}), 0, 0, t0)
	feedInvalid(func(side Side, rec load.Record, now time.Time) {
		rec.Group = []string{"fp_old", "fp_new"}[side]
		g.Observe(rec, now)
	}, t0, 60, 30)
	for _, anytime := range []bool{true, false} {
		gr := g.Compare(Options{Regressions: []Regression{reg}, Anytime: anytime, Seed: 1})
		if len(gr.Newer) != 1 || !gr.Breached() {
			t.Fatalf("anytime %v: %s", anytime, gr.Line())
		}
	}
}

// TestBinnedInvalidRateUnjudged: agents' seconds carry no judged
// answers, so the invalid rate stays unjudged there.
func TestBinnedInvalidRateUnjudged(t *testing.T) {
	b := NewBinned(Stats(nil, InvalidRate()), 0, 0)
	for sec := range int32(60) {
		for side := range 2 {
			b.Outcomes(Side(side), sec, 30, 0)
		}
	}
	for _, anytime := range []bool{true, false} {
		b.SetAnytime(anytime)
		for _, r := range b.Compare(Options{Anytime: anytime}).Results {
			if r.Stat.Invalid && (r.Verdict != NotEnough || r.NBaseline != 0) {
				t.Fatalf("anytime %v: %+v", anytime, r)
			}
			if r.Stat.Name == "error_rate" && r.Verdict == NotEnough {
				t.Fatalf("anytime %v: error rate unjudged: %+v", anytime, r)
			}
		}
	}
}

// BenchmarkObserve: one request counted (the engine's aggregator's
// call), without and with the invalid rate judged: its ring and counts
// are kept only when a statistic reads them.
func BenchmarkObserve(b *testing.B) {
	for _, tc := range []struct {
		name  string
		stats []Stat
	}{{"defaults", DefaultStats()}, {"invalid", Stats(nil, InvalidRate())}} {
		b.Run(tc.name, func(b *testing.B) {
			t0 := time.Unix(0, 0)
			s := NewSamples(tc.stats, 0, t0)
			res := probe.Result{HasTTFT: true, TTFT: 50 * time.Millisecond, E2E: 500 * time.Millisecond, OutputTokens: 128}
			res.Output.Judged, res.Output.Valid = true, true
			rec := load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}
			b.ReportAllocs()
			for i := range b.N {
				s.Observe(Side(i&1), rec, t0.Add(time.Duration(i)*time.Millisecond))
			}
		})
	}
}
