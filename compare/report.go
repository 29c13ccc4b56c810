package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// value formats one side's statistic.
func value(r Result, v float64, n int) string {
	unit := "ms"
	if r.Stat.ErrorRate {
		unit = "fraction"
	}
	return ValueText(unit, v, n)
}

// ValueText is one side's statistic as every table writes it (the text's,
// the HTML report's), from the JSON's unit: a fraction in percent,
// milliseconds to three figures at least (1235ms, 412ms, 15.1ms, as the
// dashboard); "—" over no requests.
func ValueText(unit string, v float64, n int) string {
	switch {
	case n == 0:
		return "—"
	case unit == "fraction":
		return fmt.Sprintf("%.2f%%", v*100)
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.2fms", v)
}

// RequestsText is the requests column: both sides' counts.
func RequestsText(baseline, canary int) string { return fmt.Sprintf("%d/%d", baseline, canary) }

// VerdictWord is a result's verdict as the tables write it, the word
// alone ("worse", not the JSON's "canary worse"): the columns name the
// sides.
func VerdictWord(verdict string) string {
	for _, w := range []Verdict{Worse, Better} {
		if word := w.text(""); strings.HasSuffix(verdict, " "+word) || verdict == word {
			return word
		}
	}
	return verdict
}

// WriteTable writes the comparison as a table: each statistic on both
// sides, the canary's difference, its interval and the verdict; then the
// regressions and the one-line verdict.
func (c Comparison) WriteTable(w io.Writer, baseline, canary string) error {
	var b strings.Builder
	cols := [2]string{"baseline", "canary"}
	if c.Sides == ([2]string{}) {
		fmt.Fprintf(&b, "Comparison · baseline %s · canary %s\n", baseline, canary)
	} else {
		// A split's: the columns are the groups' numbers, their names
		// (too long for a column) in the heading.
		fmt.Fprintf(&b, "Comparison · %s · %s\n", baseline, canary)
		for i := range cols {
			cols[i], _, _ = strings.Cut(c.side(i), " (")
		}
	}
	fmt.Fprintf(&b, "  %s\n", IntervalsText(c.Anytime, c.Confidence, c.Family, len(c.Results), c.Resamples))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  statistic\t%s\t%s\tdelta\tinterval\trequests\tverdict\n", cols[0], cols[1])
	// The verdict's word alone (worse, better): the columns name the
	// sides, and a table printed as the dashboard quits must fit the 80
	// columns it ran in (with "canary worse" and "n / n" it took 88).
	for _, r := range c.Results {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Stat.Label(), value(r, r.Baseline, r.NBaseline),
			value(r, r.Canary, r.NCanary), r.DeltaText(), r.Interval(), RequestsText(r.NBaseline, r.NCanary), r.Verdict.text(""))
	}
	tw.Flush()
	if len(c.Gates) > 0 {
		b.WriteString("\nRegressions:\n")
		for _, g := range c.Gates {
			fmt.Fprintf(&b, "  %s\n", g)
		}
		if c.Breached() {
			who := "the canary"
			if c.Sides != ([2]string{}) {
				who = c.side(1)
			}
			b.WriteString(who + " regressed\n")
		} else if n := len(only(c.Failures(), NotJudged)); n > 0 {
			// An objective with nothing measured never passes: lead with
			// what decides the exit code, as the exit code does.
			fmt.Fprintf(&b, "gate not passed: %d of %d not judged: no gate passed for them (too few requests); none breached\n", n, len(c.Gates))
		} else if n := c.undecided(); n > 0 {
			fmt.Fprintf(&b, "no regression found, %d of %d undecided: the interval still holds the margin\n", n, len(c.Gates))
		} else {
			b.WriteString("no regression found\n")
		}
	}
	fmt.Fprintf(&b, "\n%s\n", c.Line())
	_, err := io.WriteString(w, b.String())
	return err
}

// String says whether the regression was breached and why: with the
// confidence sequences, how its margin came out ("held, within the
// margin", "held, undecided", "breached: worse beyond the margin",
// "held, not resolvable with these buckets") and after how many seconds.
func (g Gate) String() string {
	if g.anytime && g.Kind() == HeldGate {
		// "held" first, as every reader of the gates has matched it.
		return g.Regression.Expr + ": held, " + g.Margin.String() + ": " + g.detail()
	}
	return g.Regression.Expr + ": " + g.Kind().String() + ": " + g.detail()
}

// Kind is how the gate came out: held, breached, or not judged.
func (g Gate) Kind() GateKind {
	switch {
	case g.Result.Verdict == NotEnough:
		return NotJudged
	case g.Breached:
		return Breached
	}
	return HeldGate
}

// detail is why the gate came out as it did, for a person.
func (g Gate) detail() string {
	r := g.Result
	minSecs := g.minSeconds
	if minSecs <= 0 {
		minSecs = MinSeconds
	}
	switch g.Kind() {
	case NotJudged:
		return fmt.Sprintf("too few requests (%d %s, %d %s; %s needs %d a side over %d s)",
			r.NBaseline, sideName(g.sides, 0), r.NCanary, sideName(g.sides, 1), r.Stat.Name, r.Stat.minSamples(), minSecs)
	case Breached:
		if g.anytime {
			return fmt.Sprintf("worse beyond the margin: %s (%s), above %s with confidence, after %d s", r.DeltaText(), r.Interval(),
				pct(r.Stat, g.Regression.Tolerance), r.Seconds)
		}
		return fmt.Sprintf("%s (%s), above %s with confidence", r.DeltaText(), r.Interval(), pct(r.Stat, g.Regression.Tolerance))
	}
	if g.anytime && g.Margin == WithinMargin {
		return fmt.Sprintf("%s (%s), at most %s with confidence, after %d s", r.DeltaText(), r.Interval(), pct(r.Stat, g.Regression.Tolerance), r.Seconds)
	}
	if r.Delta > g.Regression.Tolerance { // a point past the margin that holds: say why
		return fmt.Sprintf("%s (%s): above %s, but not with confidence (the interval reaches below it)", r.DeltaText(), r.Interval(), pct(r.Stat, g.Regression.Tolerance))
	}
	return fmt.Sprintf("%s (%s)", r.DeltaText(), r.Interval())
}

// undecided counts the gates judged whose interval still holds their
// margin (the confidence sequences' "undecided").
func (c Comparison) undecided() int {
	n := 0
	for _, g := range c.Gates {
		if g.anytime && g.Kind() == HeldGate && g.Margin == Undecided {
			n++
		}
	}
	return n
}

// IntervalsText says what a comparison's intervals are, under its
// heading: the confidence sequences' (anytime) or the bootstrap's, at
// confidence each and family over all stats.
func IntervalsText(anytime bool, confidence, family float64, stats, resamples int) string {
	if anytime {
		return fmt.Sprintf("%.3g%% confidence sequences (%.3g%% over all %d), valid at every look, over every request of the setting",
			confidence*100, family*100, stats)
	}
	return fmt.Sprintf("%.3g%% intervals (%.3g%% over all %d), %d resamples of the seconds both ran", confidence*100, family*100, stats, resamples)
}
