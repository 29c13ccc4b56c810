package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// SpecDecode is speculative decoding as the sim reports it: each step a
// draft model proposes Draft tokens, and the target model accepts each in
// turn with chance Accept until the first it rejects, then adds one of
// its own. Only the counts are simulated (vLLM's per-request
// speculative_decoding object and its spec_decode counters): the
// step's pace is the sim's as without it. The zero value is off.
type SpecDecode struct {
	Draft  int
	Accept float64
}

// ParseSpecDecode reads DRAFT:ACCEPT, e.g. 3:0.6 (three draft tokens a
// step, each accepted with chance 0.6).
func ParseSpecDecode(s string) (SpecDecode, error) {
	d, a, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return SpecDecode{}, fmt.Errorf("%q: want DRAFT:ACCEPT, e.g. 3:0.6", s)
	}
	n, err := strconv.Atoi(d)
	if err != nil {
		return SpecDecode{}, fmt.Errorf("%q: the draft tokens a step %q are no count", s, d)
	}
	f, err := strconv.ParseFloat(a, 64)
	if err != nil {
		return SpecDecode{}, fmt.Errorf("%q: the acceptance %q is no number", s, a)
	}
	sd := SpecDecode{Draft: n, Accept: f}
	return sd, sd.validate()
}

func (s SpecDecode) validate() error {
	if s == (SpecDecode{}) {
		return nil
	}
	if s.Draft < 1 || s.Draft > 16 || !(s.Accept >= 0 && s.Accept <= 1) {
		return fmt.Errorf("%d draft tokens a step, acceptance %v: want 1..16 and 0..1", s.Draft, s.Accept)
	}
	return nil
}

// specCounts are the counts of one request's speculative decoding.
type specCounts struct{ steps, accepted, drafted int }

// counts plays out the steps that make n output tokens, seeded by the
// sim's seed and the request's id (repeatable): each step accepts a run
// of its draft, at most what the answer still needs but its last token.
func (s SpecDecode) counts(seed, id uint64, n int) specCounts {
	var c specCounts
	if s.Draft == 0 || n <= 0 {
		return c
	}
	rng := rand.New(rand.NewPCG(seed, id^0x73706563))
	for made := 0; made < n; {
		acc := 0
		for acc < s.Draft && rng.Float64() < s.Accept {
			acc++
		}
		acc = min(acc, n-made-1)
		c.steps++
		c.accepted += acc
		c.drafted += s.Draft
		made += acc + 1
	}
	return c
}
