package sim

import (
	"math"
	"strings"
	"testing"
)

// TestSpecDecodeCounts: each answer's steps make exactly its tokens (a
// step is its accepted run and one token of the target's), every step
// drafts its DRAFT tokens, the same request plays out the same, and over
// many the acceptance is the chance's expectation: with 3 drafted at 0.6,
// (0.6 + 0.36 + 0.216)/3 = 0.392 of the draft (less a little where an
// answer's end cuts a run short).
func TestSpecDecodeCounts(t *testing.T) {
	sd := SpecDecode{Draft: 3, Accept: 0.6}
	var acc, drafted int
	for id := range uint64(2000) {
		n := 1 + int(id%200)
		c := sd.counts(7, id, n)
		if c.steps+c.accepted != n || c.drafted != 3*c.steps || c.accepted > c.drafted {
			t.Fatalf("id %d, %d tokens: %+v", id, n, c)
		}
		if c != sd.counts(7, id, n) {
			t.Fatalf("id %d: not repeatable", id)
		}
		acc, drafted = acc+c.accepted, drafted+c.drafted
	}
	if r := float64(acc) / float64(drafted); math.Abs(r-0.392) > 0.015 {
		t.Errorf("acceptance %.3f over %d drafted, want about 0.392", r, drafted)
	}
	if c := (SpecDecode{}).counts(7, 1, 100); c != (specCounts{}) {
		t.Errorf("off: %+v", c)
	}
	for _, bad := range []string{"3", "x:0.5", "3:y", "0:0.5", "17:0.5", "3:1.5", "3:-0.1"} {
		if _, err := ParseSpecDecode(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if sd, err := ParseSpecDecode(" 4:0.75 "); err != nil || sd != (SpecDecode{4, 0.75}) {
		t.Errorf("4:0.75: %+v %v", sd, err)
	}
	p, _ := Preset("fast")
	p.SpecDecode = SpecDecode{Draft: 20, Accept: 0.5}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "spec decode") {
		t.Errorf("validate: %v", err)
	}
}
