package ui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/infertop/infertop/load"
)

// Duration formats a latency or an age as the dashboard does: at most 7
// cells, 3 significant digits, the unit chosen by size (850µs, 1.25ms,
// 18.7ms, 412ms, 1.70s, 42.3s, 312s), and "—" for nothing measured (zero or
// less). It is exported so that every text infertop prints (the headless
// progress line, the summaries) reads durations the one way the dashboard
// does, never as time.Duration's 16.7526s beside a 158.1ms.
func Duration(d time.Duration) string { return load.FormatDuration(d) }

// num formats a rate or count compactly: 812, 8.1k, 81k, 8.1M, 81M, 8.1G;
// never in scientific notation, and at most 5 cells below 10^12
// (a rate can be large: a fast endpoint's tokens per second). The
// thresholds sit where rounding would carry into the next unit, so 999.7
// prints 1.0k rather than 1000.
func num(f float64) string {
	a := math.Abs(f)
	switch {
	case f == 0:
		return "0"
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "—"
	case a < 9.95:
		return fmt.Sprintf("%.1f", f)
	case a < 999.5:
		return fmt.Sprintf("%.0f", f)
	case a < 9950:
		return fmt.Sprintf("%.1fk", f/1e3)
	case a < 999.5e3:
		return fmt.Sprintf("%.0fk", f/1e3)
	case a < 9.95e6:
		return fmt.Sprintf("%.1fM", f/1e6)
	case a < 999.5e6:
		return fmt.Sprintf("%.0fM", f/1e6)
	}
	return fmt.Sprintf("%.1fG", f/1e9)
}

// rateNum formats a rate a person set (the open loop's knob) with up to sig
// significant digits below 1000, so 1.25 and 812.5 read as typed, and as
// num does from 1000 up (1.2k, 12k, 1.2M): %g would print 1.234e+04.
func rateNum(f float64, sig int) string {
	if math.Abs(f) >= 999.5 || f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return num(f)
	}
	dec := min(max(sig-1-int(math.Floor(math.Log10(math.Abs(f)))), 0), 6)
	s := strconv.FormatFloat(f, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// count formats a count exactly when it fits in w cells, and as num does
// when it would not (a long run's requests in a narrow column).
func count(n int64, w int) string {
	if s := strconv.FormatInt(n, 10); len(s) <= w {
		return s
	}
	return num(float64(n))
}

// clock formats a run time as h:mm:ss or m:ss.
func clock(d time.Duration) string {
	s := int64(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// window formats a window length: 10s, 30s, 1m, 5m.
func window(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// pct formats a fraction as a percentage.
func pct(f float64) string {
	if f > 0 && f < 0.001 {
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", f*100)
}

// fit pads or cuts a (possibly styled) line to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if n := textWidth(s); n > w {
		return ansi.Truncate(s, w, "…")
	} else if n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// block makes lines into exactly h lines of exactly w cells.
func block(lines []string, w, h int) string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return strings.Join(out, "\n")
}

// padLeft right-aligns s in w cells.
func padLeft(s string, w int) string {
	if n := textWidth(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}

// secs turns seconds into a duration.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// wrap breaks a (possibly styled) text into lines of at most w cells, at
// spaces where it can and inside a word where it must (a URL, a JSON body).
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}

// wrapInto wraps s into at most n lines of w cells; when it needs more, the
// last line ends with more (an ellipsis and where to read the rest), so a
// cut never passes for the whole message.
func wrapInto(s string, w, n int, more string) []string {
	lines := wrap(s, w)
	if len(lines) <= n || n <= 0 {
		return lines[:min(len(lines), max(n, 0))]
	}
	lines = lines[:n]
	room := max(w-textWidth(more), 0)
	lines[n-1] = ansi.Truncate(strings.TrimRight(lines[n-1], " "), room, "") + more
	return lines
}

// part is one item of a line laid out by flowParts, with its priority:
// 0 is always kept, and the higher the number the sooner it is dropped
// when the items do not fit.
type part struct {
	text string
	prio int
}

// flowParts lays the parts out in at most n lines of w cells, joined by
// sep, never cutting a part across lines: what does not fit on a line
// goes to the next, and when n lines are not enough the parts of the
// highest priority number are dropped whole, the latest first, until they
// fit. A part wider than a line is wrapped on lines of its own; parts of
// priority 0 that still need more than n lines are cut at the n-th, with
// an ellipsis.
func flowParts(parts []part, sep string, w, n int) []string {
	if n <= 0 || w <= 0 {
		return nil
	}
	keep := slices.Clone(parts)
	for {
		lines := flow(keep, sep, w)
		if len(lines) <= n {
			return lines
		}
		drop, worst := -1, 0
		for i, p := range keep {
			if p.prio > 0 && p.prio >= worst {
				drop, worst = i, p.prio
			}
		}
		if drop < 0 {
			lines = lines[:n]
			lines[n-1] = ansi.Truncate(lines[n-1], w-1, "") + "…"
			return lines
		}
		keep = slices.Delete(keep, drop, drop+1)
	}
}

// flow lays the parts out greedily in lines of at most w cells.
func flow(parts []part, sep string, w int) []string {
	var lines []string
	cur, curW := "", 0
	sepW := textWidth(sep)
	for _, p := range parts {
		pw := textWidth(p.text)
		switch {
		case cur != "" && curW+sepW+pw <= w:
			cur, curW = cur+sep+p.text, curW+sepW+pw
			continue
		case cur != "":
			lines = append(lines, cur)
		}
		if pw <= w {
			cur, curW = p.text, pw
			continue
		}
		wrapped := wrap(p.text, w)
		lines = append(lines, wrapped[:len(wrapped)-1]...)
		cur = wrapped[len(wrapped)-1]
		curW = textWidth(cur)
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
