package ui

import (
	"fmt"
	"strings"

	"github.com/infertop/infertop/load"
)

// header is two lines: what is watched and how it goes, then the knobs.
func (m *Model) header(w int) string {
	t, s := m.theme, &m.snap
	target := s.Target.URL
	if s.Target.Sim {
		target += " (embedded sim)"
	}
	state := t.Good.Render("● running")
	done := m.limitDur > 0 && s.Elapsed >= m.limitDur || m.limitReq > 0 && s.Finished() >= m.limitReq
	switch {
	case m.stopped:
		state = t.Bad.Render("■ stopped")
	case done:
		state = t.Accent.Render("■ done")
	case s.Knobs.Paused:
		state = t.Warn.Render("‖ paused")
	}
	right := t.Muted.Render("run ") + t.Value.Render(clock(s.Elapsed)) + "  " + state
	switch {
	case m.limitDur > 0 && !done:
		right = t.Muted.Render("ends in ") + t.Value.Render(clock(m.limitDur-s.Elapsed)) + "  " + right
	case m.limitReq > 0 && !done:
		right = t.Value.Render(fmt.Sprintf("%d/%d", s.Finished(), m.limitReq)) + t.Muted.Render(" requests  ") + right
	}
	left := t.Header.Render("infertop") + "  " + t.Value.Render(s.Target.Model) + t.Muted.Render(" · "+s.Target.API+" · ") +
		t.Text.Render(target)
	gap := w - lipglossWidth(right)
	line1 := fit(left, gap-1) + " " + right

	k := s.Knobs
	item := func(label, value string) string { return t.Muted.Render(label+" ") + t.Value.Render(value) }
	loop := item("concurrency", fmt.Sprint(k.Concurrency))
	if k.Mode == load.OpenLoop {
		loop = item("open loop", fmt.Sprintf("%.4g req/s", k.Rate))
		if s.Backlog > 0 {
			loop += t.Warn.Render(fmt.Sprintf(" backlog %d", s.Backlog))
		}
	}
	parts := []string{
		loop,
		item("prompt", lengthLabel(s.PromptLength, k.PromptTokens)),
		item("output", lengthLabel(s.OutputLength, k.OutputTokens)),
		item("window", window(s.Window)),
	}
	if s.Dataset > 0 {
		parts[1] = item("prompts", fmt.Sprintf("dataset of %d", s.Dataset))
	}
	if w >= 110 {
		parts = append(parts, item("theme", m.theme.Name))
	}
	if m.readOnly {
		parts = append(parts, t.Muted.Render("watching"))
	}
	line2 := fit(strings.Join(parts, t.Muted.Render(" · ")), w)
	if !m.haveSnap {
		line2 = fit(t.Muted.Render("waiting for the first snapshot…"), w)
	}
	return line1 + "\n" + line2
}

func lengthLabel(l load.Length, centre int) string {
	if l.Kind == "" || l.Kind == "fixed" {
		return fmt.Sprintf("%d tok", centre)
	}
	return l.String(centre)
}
