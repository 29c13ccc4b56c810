package compare

import (
	"strings"
	"testing"

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
