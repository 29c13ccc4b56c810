package ui

import (
	"fmt"
	"strings"

	"github.com/infertop/infertop/telemetry"
)

// serverPanel is the server's and the GPUs' side, two lines under a title,
// or nothing when neither is read (an unknown server shows nothing rather
// than wrong figures).
func (m *Model) serverPanel(w int) string {
	v := m.fig.Server
	if v.Server == nil && v.GPU == nil {
		return ""
	}
	t := m.theme
	sep := t.Muted.Render(" · ")
	item := func(label, value string) string { return t.Muted.Render(label+" ") + t.Value.Render(value) }
	var lines []string
	lines = append(lines, m.title("Server", "its own metrics", w))
	if s := v.Server; s != nil {
		var parts []string
		switch {
		case s.Kind == "":
			parts = append(parts, t.Warn.Render("server metrics unreadable: "+s.Err))
		default:
			parts = append(parts, t.Text.Render(telemetry.KindName(s.Kind)), item("running", fmt.Sprintf("%.0f", s.Running)), item("waiting", fmt.Sprintf("%.0f", s.Waiting)))
			if s.HasKV {
				parts = append(parts, item("KV", pct(s.KVUsage)))
			}
			parts = append(parts, item("gen", num(s.GenPerSec)+" tok/s"), item("prefill", num(s.PromptTokPerSec)+" tok/s"))
			if s.HasPreempt {
				parts = append(parts, item("preempted", fmt.Sprintf("%.0f", s.Preemptions)))
			}
			if s.HasTTFT {
				parts = append(parts, t.Muted.Render("server TTFT p50 ")+t.P50.Render(dur(secs(s.TTFTP50)))+t.Muted.Render(" p99 ")+t.P99.Render(dur(secs(s.TTFTP99))))
			}
			if s.HasITL {
				parts = append(parts, t.Muted.Render("ITL p50 ")+t.P50.Render(dur(secs(s.ITLP50)))+t.Muted.Render(" p99 ")+t.P99.Render(dur(secs(s.ITLP99))))
			}
			if s.Stale {
				parts = append(parts, t.Warn.Render(fmt.Sprintf("stale %s: %s", clock(s.Age), s.Err)))
			}
		}
		lines = append(lines, strings.Join(parts, sep))
	}
	if g := v.GPU; g != nil {
		var parts []string
		if g.Count == 0 {
			parts = append(parts, t.Warn.Render(g.Source+" unreadable: "+g.Err))
		} else {
			parts = append(parts, t.Text.Render(fmt.Sprintf("GPU ×%d (%s)", g.Count, g.Source)), item("now", watts(g.PowerW)), item("avg", watts(g.AvgW)))
			if jpt, ok := m.fig.Window.JoulesPerToken, m.fig.Window.HasEnergy; ok {
				parts = append(parts, t.Value.Render(fmt.Sprintf("%.3g J/token", jpt))+t.Muted.Render(fmt.Sprintf(" %.3g tok/J", 1/jpt)))
			}
			parts = append(parts, item("util", fmt.Sprintf("%.0f%%", g.UtilPct)), t.Value.Render(fmt.Sprintf("%.0f°C", g.TempC)), t.Muted.Render("energy from "+g.EnergyFrom))
			if g.Stale {
				parts = append(parts, t.Warn.Render(fmt.Sprintf("stale %s: %s", clock(g.Age), g.Err)))
			}
		}
		lines = append(lines, strings.Join(parts, sep))
		if g.Count > 1 && g.Count <= 16 { // each GPU, on a line of its own
			var each []string
			for _, x := range g.GPUs {
				each = append(each, t.Muted.Render("GPU"+x.Index+" ")+t.Text.Render(watts(x.PowerW))+t.Muted.Render(fmt.Sprintf(" %.0f%%", x.UtilPct)))
			}
			lines = append(lines, strings.Join(each, sep))
		}
	}
	return block(lines, w, len(lines))
}

func watts(w float64) string {
	if w >= 1000 {
		return fmt.Sprintf("%.2f kW", w/1000)
	}
	return fmt.Sprintf("%.0f W", w)
}
