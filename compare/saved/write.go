package saved

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/sanitize"
)

// The table's columns, in the text's and the markdown's order.
var columns = []string{"statistic", "base", "new", "delta", "interval", "requests", "verdict"}

// cells are a row's columns.
func (r Row) cells() []string {
	verdict := "not enough data"
	if r.Judged {
		verdict = compare.VerdictWord(r.Verdict.String())
		if r.Verdict == compare.NoDifference {
			verdict = noDifference(r)
		}
	}
	delta := "—"
	if r.NBase > 0 && r.NNew > 0 && (r.Stat.ErrorRate || r.Base > 0) {
		delta = deltaText(r.Stat, r.Interval.Delta)
	}
	return []string{r.Stat.Label(), compare.ValueText(unit(r.Stat), r.Base, clampCount(r.NBase)),
		compare.ValueText(unit(r.Stat), r.New, clampCount(r.NNew)), delta, intervalText(r),
		compare.RequestsText(clampCount(r.NBase), clampCount(r.NNew)), verdict}
}

// noDifference says a verdict of no difference as what its interval
// shows: within the least difference that matters when the whole
// interval lies inside it, else that none is shown yet (an interval of
// +0.4 % to +9.2 % shows neither a difference past 5 % nor its absence).
func noDifference(r Row) string {
	least, unit := compare.DefaultMinEffect*100, " %"
	if r.Stat.ErrorRate {
		least, unit = compare.DefaultMinErrorEffect*100, " pp"
	}
	if r.Interval.Lo >= -least/100 && r.Interval.Hi <= least/100 {
		return fmt.Sprintf("within ±%g%s", least, unit)
	}
	return "no difference shown"
}

// Outcome is the verdict in a line: the first gate that did not pass
// (a breach before a gate not judged), or that every gate held.
func (j *Judgement) Outcome() string {
	fs := j.Failures()
	switch {
	case len(fs) > 0 && j.breached():
		return fmt.Sprintf("%s regressed against %s: %s", j.New, j.Base, fs[0])
	case len(fs) > 0:
		return fmt.Sprintf("%s not passed against %s: %s", j.New, j.Base, fs[0])
	case len(j.Gates) == 0 && len(j.SLO) == 0:
		return "no gate given (--regression, --slo): nothing to hold " + j.New + " to"
	}
	return "every gate held"
}

// method says how the intervals were made, in a line.
func (j *Judgement) method() string {
	n := 0
	for _, s := range j.Scopes {
		n += len(s.Rows)
	}
	return fmt.Sprintf("%.3g%% confidence sequences (%.3g%% over all %d), from each result's histograms", j.Confidence*100, j.Family*100, n)
}

// WriteText writes the judgement as a table for a terminal or a CI log:
// both results, what was compared, each statistic on both sides with
// the difference, its interval and the verdict; then the gates.
func (j *Judgement) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Comparison · base %s (%s) · new %s (%s)\n", j.Base, j.BaseAbout, j.New, j.NewAbout)
	for _, f := range j.Forced {
		fmt.Fprintf(&b, "  forced: %s\n", f)
	}
	fmt.Fprintf(&b, "  %s; %s\n", j.PhasesNote, j.method())
	if j.Open {
		b.WriteString("  TTFT and E2E from the intended send time (the open loop's)\n")
	}
	for _, s := range j.Scopes {
		if s.Label != "" {
			fmt.Fprintf(&b, "\n%s\n", s.Label)
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\n", strings.Join(columns, "\t"))
		for _, r := range s.Rows {
			fmt.Fprintf(tw, "  %s\n", strings.Join(r.cells(), "\t"))
		}
		tw.Flush()
	}
	if len(j.Gates) > 0 {
		b.WriteString("\nRegressions:\n")
		for _, g := range j.Gates {
			fmt.Fprintf(&b, "  %s\n", g)
		}
	}
	if len(j.SLO) > 0 {
		fmt.Fprintf(&b, "\nObjectives, on %s:\n", j.New)
		for _, v := range j.SLO {
			fmt.Fprintf(&b, "  %s\n", v.Text)
		}
	}
	fmt.Fprintf(&b, "\n%s\n", j.Outcome())
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the judgement as GitHub-flavoured markdown, for a
// pull request's comment: the outcome first, then the table and the
// gates. What a file named is escaped: a model's name is no markup.
func (j *Judgement) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	mark := "✅"
	switch {
	case j.Regressed():
		mark = "❌"
	case len(j.Gates) == 0 && len(j.SLO) == 0:
		mark = "ℹ️" // nothing held: no tick over a table that may say worse
	}
	fmt.Fprintf(&b, "### %s infertop compare: %s\n\n", mark, md(j.Outcome()))
	fmt.Fprintf(&b, "Base **%s** (%s) · new **%s** (%s)  \n", md(j.Base), md(j.BaseAbout), md(j.New), md(j.NewAbout))
	fmt.Fprintf(&b, "%s; %s", md(j.PhasesNote), md(j.method()))
	if j.Open {
		b.WriteString("; TTFT and E2E from the intended send time")
	}
	b.WriteString("\n")
	for _, f := range j.Forced {
		fmt.Fprintf(&b, "\n> forced: %s", md(f))
	}
	if len(j.Forced) > 0 {
		b.WriteString("\n")
	}
	for _, s := range j.Scopes {
		b.WriteString("\n")
		if s.Label != "" {
			fmt.Fprintf(&b, "**%s**\n\n", md(s.Label))
		}
		fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(columns, " | "), strings.Repeat("---|", len(columns)))
		for _, r := range s.Rows {
			c := r.cells()
			for i := range c {
				c[i] = md(c[i])
			}
			if r.Judged && r.Verdict == compare.Worse {
				c[len(c)-1] = "**" + c[len(c)-1] + "**"
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(c, " | "))
		}
	}
	if len(j.Gates) > 0 {
		b.WriteString("\n**Regressions**\n\n")
		for _, g := range j.Gates {
			fmt.Fprintf(&b, "- %s\n", md(g.String()))
		}
	}
	if len(j.SLO) > 0 {
		fmt.Fprintf(&b, "\n**Objectives, on %s**\n\n", md(j.New))
		for _, v := range j.SLO {
			fmt.Fprintf(&b, "- %s\n", md(v.Text))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CreateMarkdown creates the file the markdown goes to (nil for none
// or -), before the results are read: a path that cannot be written is
// the caller's to fix at once, and one of the results (inputs) is never
// overwritten.
func CreateMarkdown(path string, inputs []string) (*os.File, error) {
	if path == "" || path == "-" {
		return nil, nil
	}
	for _, in := range inputs {
		a, errA := os.Stat(in)
		b, errB := os.Stat(path)
		if filepath.Clean(in) == filepath.Clean(path) || errA == nil && errB == nil && os.SameFile(a, b) {
			return nil, fmt.Errorf("%s is one of the results", sanitize.Text(path))
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, errors.New(sanitize.Text(err.Error()))
	}
	return f, nil
}

// md escapes text for markdown: every character markup reads (HTML's
// too), so that a crafted name renders as the text it is.
func md(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
