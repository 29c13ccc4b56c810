package compare

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/infertop/infertop/load"
)

// TestVerdictsKeepEachSetting: the last verdict of each setting, in the
// order the settings first ran; a pause is no new setting.
func TestVerdictsKeepEachSetting(t *testing.T) {
	var v Verdicts
	a := load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128}
	b := a
	b.Concurrency = 16
	v.Keep(a, "first")
	v.Keep(a, "canary slower")
	v.Keep(b, "not enough data")
	paused := a
	paused.Paused = true
	v.Keep(paused, "no difference found yet")
	got := v.Others(b)
	if len(got) != 1 || got[0].Line != "no difference found yet" || got[0].Label() != "concurrency 8, prompt 256, output 128" {
		t.Fatalf("%+v", got)
	}
	var w strings.Builder
	if err := WriteSettings(&w, got); err != nil || w.String() != "\nEarlier settings, each its last live verdict:\n  concurrency 8, prompt 256, output 128: no difference found yet\n" {
		t.Fatalf("%q %v", w.String(), err)
	}
	v.Reset()
	if len(v.Others(load.Knobs{})) != 0 {
		t.Fatal("kept after a reset")
	}
}

// TestTableFits80Columns: the comparison's table, printed as the
// dashboard quits, fits the 80 columns it ran in, with counts of five
// digits (on main its rows took 88: "12345 / 12345  canary worse").
func TestTableFits80Columns(t *testing.T) {
	c := Comparison{Confidence: 0.998, Family: 0.99, Resamples: 2000}
	for _, st := range Stats(nil) {
		r := Result{Stat: st, Baseline: 1234.56, Canary: 1703.2, NBaseline: 12345, NCanary: 12345, Delta: 0.38, Lo: 0.212, Hi: 0.551, Verdict: Worse}
		if st.ErrorRate {
			r.Baseline, r.Canary, r.Delta, r.Lo, r.Hi = 0.0123, 0.0456, 0.0333, 0.01, 0.05
		}
		c.Results = append(c.Results, r)
	}
	var b strings.Builder
	if err := c.WriteTable(&b, "http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, l := range lines[:len(lines)-3] { // the rows; the verdict's line below wraps as prose
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("%d columns: %q", n, l)
		}
	}
}
