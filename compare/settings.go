package compare

import (
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/infertop/infertop/load"
)

// SettingVerdict is the last comparison made under one knob setting, as
// its one-line verdict.
type SettingVerdict struct {
	Knobs load.Knobs
	Line  string
}

// Label names the setting in a line: "concurrency 8, prompt 256, output
// 128" (the rate in the open loop).
func (v SettingVerdict) Label() string { return knobsLabel(v.Knobs) }

func knobsLabel(k load.Knobs) string {
	level := fmt.Sprintf("concurrency %d", k.Concurrency)
	if k.Mode == load.OpenLoop {
		level = "rate " + strconv.FormatFloat(k.Rate, 'g', 4, 64) + "/s"
	}
	return fmt.Sprintf("%s, prompt %d, output %d", level, k.PromptTokens, k.OutputTokens)
}

// Verdicts keeps each knob setting's last comparison, in the order the
// settings first ran. A knob change starts the comparison over (the
// samples of one setting say nothing of another), and the verdict of the
// setting that ran before it would be lost: a save after the change said
// "0 / 0 not enough data" of a setting judged over 30 s. The phase table
// keeps each setting's figures; this keeps each setting's verdict. Its
// methods are safe from any goroutine.
type Verdicts struct {
	mu   sync.Mutex
	list []SettingVerdict
}

// Keep records line as the newest verdict under k, replacing the one
// kept for k's setting (the pause is not a change).
func (v *Verdicts) Keep(k load.Knobs, line string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range v.list {
		if samePhase(v.list[i].Knobs, k) {
			v.list[i] = SettingVerdict{k, line}
			return
		}
	}
	v.list = append(v.list, SettingVerdict{k, line})
}

// Others are the verdicts kept of every setting but k's, in the order the
// settings first ran.
func (v *Verdicts) Others(k load.Knobs) []SettingVerdict {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []SettingVerdict
	for _, sv := range v.list {
		if !samePhase(sv.Knobs, k) {
			out = append(out, sv)
		}
	}
	return out
}

// Reset forgets every verdict (a reset of the statistics).
func (v *Verdicts) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.list = nil
}

// WriteSettings writes the verdicts of the settings that ran before the
// current one, a line each, under a heading; nothing when there are none.
func WriteSettings(w io.Writer, vs []SettingVerdict) error {
	if len(vs) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\nEarlier settings, each its last live verdict:\n"); err != nil {
		return err
	}
	for _, sv := range vs {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", sv.Label(), sv.Line); err != nil {
			return err
		}
	}
	return nil
}

// Knobs is the setting the samples held belong to; ok is false before
// the first request or knob change. Epoch counts the restarts (a new
// setting, a reset): a comparison is of Knobs only if the epoch read
// before it is the epoch after.
func (s *Samples) Knobs() (k load.Knobs, epoch int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setting.knobs, s.epoch, s.setting.hasKnob
}

// Knobs is Samples.Knobs for the groups.
func (g *Groups) Knobs() (k load.Knobs, epoch int, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.setting.knobs, g.epoch, g.setting.hasKnob
}
