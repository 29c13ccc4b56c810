package ui

import (
	"fmt"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/sanitize"
)

// header is two lines: what is watched and how it goes, then the knobs.
func (m *Model) header(w int) string {
	t, s := m.theme, &m.snap
	// The model name is what the endpoint said it serves and the URL may
	// hold what a user pasted: neither reaches the terminal raw.
	target := sanitize.Text(s.Target.URL)
	// The engine decides when the run is over; the header only says what
	// its snapshot says, and the clock is the snapshot's, which stops when
	// the run is done.
	state := t.Good.Render("● running")
	switch {
	case s.Done:
		state = t.Accent.Render("■ done")
		if s.DoneWhy != "" {
			state += t.Muted.Render(": " + s.DoneWhy)
		}
		if s.Incomplete > 0 {
			state += t.Warn.Render(fmt.Sprintf(" · %d incomplete", s.Incomplete))
		}
		if s.Dropped > 0 { // the open loop's arrivals never sent
			state += t.Warn.Render(fmt.Sprintf(" · %d dropped", s.Dropped))
		}
	case m.stopped:
		state = t.Bad.Render("■ stopped")
	case s.Ending():
		state = t.Warn.Render(fmt.Sprintf("ending: %d in flight", s.InFlight))
		if s.OldestInFlight > 0 { // a drain that does not end shows its oldest request's age growing
			state += t.Warn.Render(", oldest " + Duration(s.OldestInFlight))
		}
	case s.Knobs.Paused:
		state = t.Warn.Render("‖ paused")
	}
	right := t.Muted.Render("run ") + t.Value.Render(clock(s.Elapsed)) + "  " + state
	if s.Since > 0 { // a reset: the figures below run from it, the clock from the start
		right = t.Muted.Render("figures from ") + t.Value.Render(clock(s.Since)) + "  " + right
	}
	if !s.Ending() && !m.stopped { // the countdown to the limits, while they matter
		if l := s.Limits.Requests; l > 0 {
			right = t.Value.Render(fmt.Sprintf("%d/%d", s.Finished(), l)) + t.Muted.Render(" requests  ") + right
		}
		if l := s.Limits.Duration; l > 0 {
			right = t.Muted.Render("ends in ") + t.Value.Render(clock(max(l-s.Elapsed, 0))) + "  " + right
		}
	}
	line1 := m.headerLine(target, right, w)

	k := s.Knobs
	item := func(label, value string) string { return t.Muted.Render(label+" ") + t.Value.Render(value) }
	loop := item("concurrency", fmt.Sprint(k.Concurrency))
	if k.Mode == load.OpenLoop {
		loop = item("open loop", rateNum(k.Rate, 4)+" req/s")
		if s.Backlog > 0 {
			loop += t.Warn.Render(fmt.Sprintf(" backlog %d", s.Backlog))
		}
	}
	if s.Trace.On {
		loop = m.traceItem()
	}
	if s.BackingOff > 0 {
		// The load is below the concurrency knob on purpose: say so, or a
		// failing server looks like one that is simply answering slower.
		workers := "workers"
		if s.BackingOff == 1 {
			workers = "worker"
		}
		loop += t.Warn.Render(fmt.Sprintf(" backing off: %d %s after failures", s.BackingOff, workers))
	}
	// The knobs whole, never cut: the theme and the window (also in the
	// latency panel's title) give way first; the load and the lengths
	// take a second line when one is not enough (workers backing off).
	parts := []part{
		{loop, 0},
		{item("prompt", promptLabel(s)), 1},
		{item("output", lengthLabel(s.OutputLength, k.OutputTokens)), 1},
		{item("window", window(s.Window)), 2},
	}
	if st := s.Steady; st.Target > 0 && !st.Reached && !s.Done {
		// The figures so far are the ramp's: fewer in flight than asked.
		parts = append(parts, part{t.Warn.Render("not steady yet"), 1})
	}
	if s.Dataset > 0 {
		parts[1].text = item("prompts", fmt.Sprintf("dataset of %d", s.Dataset))
	}
	if s.Trace.On {
		parts[1].text = item("prompt", traceLength(k.PromptTokens, s.Trace.Prompt))
		parts[2].text = item("output", traceLength(k.OutputTokens, s.Trace.Output))
		parts = append(parts, part{t.Muted.Render(traceName(s.Trace)), 3})
	}
	if w >= 110 {
		parts = append(parts, part{item("theme", m.theme.Name), 3})
	}
	if m.readOnly {
		parts = append(parts, part{t.Muted.Render("watching"), 0})
	}
	sep := t.Muted.Render(" · ")
	var needed []part
	for _, p := range parts {
		if p.prio <= 1 {
			needed = append(needed, p)
		}
	}
	n := min(max(len(flow(needed, sep, w)), 1), 2)
	line2 := block(flowParts(parts, sep, w, n), w, n)
	if !m.haveSnap {
		line2 = fit(t.Muted.Render("waiting for the first snapshot…"), w)
	}
	return line1 + "\n" + line2
}

// headerLine is the header's first line: what is watched on the left, the
// run's state on the right. What does not fit is dropped whole, least
// needed first (the API, then "embedded" of the sim, then the model), so
// the URL is never cut (a port shown as "800…" is a wrong port); a URL too
// long even alone goes on lines of its own under the first.
func (m *Model) headerLine(target, right string, w int) string {
	t, s := m.theme, &m.snap
	name := t.Header.Render("infertop") + "  "
	model := t.Value.Render(sanitize.Text(s.Target.Model)) + t.Muted.Render(" · ")
	api := t.Muted.Render(s.Target.API + " · ")
	url := t.Text.Render(target)
	sims := []string{"", ""}
	if s.Target.Sim {
		sims = []string{t.Text.Render(" (embedded sim)"), t.Text.Render(" (sim)")}
	}
	room := w - lipglossWidth(right) - 1
	for _, left := range []string{
		name + model + api + url + sims[0],
		name + model + url + sims[0],
		name + model + url + sims[1],
	} { // the model is never dropped: what is measured comes first

		if lipglossWidth(left) <= room {
			return fit(fit(left, room)+" "+right, w)
		}
	}
	bare := t.Value.Render(sanitize.Text(s.Target.Model)) // the URL goes below: no separator left hanging
	line := fit(fit(name+bare, room)+" "+right, w)        // never wider than the terminal, however long the state
	for i, l := range wrap(url+sims[1], w) {
		if i == 2 {
			break // a URL is not the dashboard: two lines of it at most
		}
		line += "\n" + fit(l, w)
	}
	return line
}

// promptLabel is the prompt length that goes out. With a shared prefix it
// is the current phase's mean prompt as the server counted it, once one
// request has come back (before: the knob, or the prefix and the
// request's marker when the prefix is the longer), and the prefix beside
// it: "prompt 100" said of 1,130 tokens a request sent was untrue.
func promptLabel(s *load.Snapshot) string {
	if s.PrefixTokens <= 0 {
		return lengthLabel(s.PromptLength, s.Knobs.PromptTokens)
	}
	sent := fmt.Sprintf("%d tok", max(s.Knobs.PromptTokens, s.PrefixTokens+1))
	for _, ph := range s.Phases {
		if ph.Current && ph.Completed > 0 {
			sent = fmt.Sprintf("≈%d tok", (ph.InTokens+ph.Completed/2)/ph.Completed)
		}
	}
	return fmt.Sprintf("%s (%d shared)", sent, s.PrefixTokens)
}

func lengthLabel(l load.Length, centre int) string {
	if l.Kind == "" || l.Kind == "fixed" {
		return fmt.Sprintf("%d tok", centre)
	}
	return l.String(centre)
}
