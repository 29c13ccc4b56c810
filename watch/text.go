package watch

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infertop/infertop/sanitize"
)

// maxRows bounds the servers a text view lists: a fleet of thousands
// is summed by its groups, and its table says how many are left out.
const maxRows = 50

// FormatBound is a quantile's bucket as a person reads it: "(250ms,
// 500ms]", "≤5ms" in the first bucket, ">20s" past the last bound.
func FormatBound(b Bound) string {
	if !b.OK {
		return "-"
	}
	switch {
	case b.Hi == nil:
		return ">" + dur(b.Lo)
	case b.Lo == 0:
		return "≤" + dur(*b.Hi)
	case *b.Hi == b.Lo:
		return dur(b.Lo)
	}
	return "(" + dur(b.Lo) + ", " + dur(*b.Hi) + "]"
}

func dur(s float64) string {
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return "?"
	}
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}

// Text writes the snapshot for a person: the groups side by side, the
// verdict and its regressions, and the servers (the first maxRows).
// Every name a server or the source gave has passed the sanitiser.
func Text(w io.Writer, s Snapshot) error {
	var b strings.Builder
	fmt.Fprintf(&b, "watching %s · %s · window %s\n", sanitize.Text(s.Source), time.Duration(s.Elapsed*float64(time.Second)).Round(time.Second), time.Duration(s.Window*float64(time.Second)))
	if s.SourceErr != "" {
		fmt.Fprintf(&b, "source: %s (the last servers are kept)\n", s.SourceErr)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tROLE\tUP\tREQ/S\tOUT TOK/S\tERRORS\tRUN\tWAIT\tKV\tTTFT p50\tTTFT p99\tITL p50\tE2E p99\tRESTARTS")
	for _, g := range s.Groups {
		errs, kv := "-", "-"
		if g.ErrorKnown {
			errs = fmt.Sprintf("%.2f%%", 100*g.ErrorRate)
		}
		if g.KVKnown {
			kv = fmt.Sprintf("%.0f%%", 100*g.KVUsage)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%.1f\t%.0f\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\n", sanitize.Short(sanitize.Text(g.Name), 24), g.Role,
			g.Up, g.Servers, g.ReqPerSec, g.OutTokPerSec, errs, g.Running, g.Waiting, kv,
			FormatBound(g.TTFT.P50), FormatBound(g.TTFT.P99), FormatBound(g.ITL.P50), FormatBound(g.E2E.P99), g.Restarts)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if line := ProbeLine(s.Probe); line != "" {
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "\nverdict: %s\n", sanitize.Text(s.Verdict.Line))
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, j := range s.Verdict.Regressions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\tn %d/%d\t%s\n", j.Expr, j.Verdict, delta(j), interval(j), j.NBase, j.NCanary, decided(j))
	}
	for _, o := range s.Verdict.Objectives {
		fmt.Fprintf(tw, "  %s\ton %s\t%s\t%s\n", o.Expr, sanitize.Text(o.Group), o.State, FormatBound(o.Actual))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Servers) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tGROUP\tENGINE\tSTATE\tREQ/S\tTTFT p99\tKV\tRUN\tWAIT\tRESTARTS\tNOTE")
		for i, r := range s.Servers {
			if i == maxRows {
				fmt.Fprintf(tw, "… %d more\n", len(s.Servers)-maxRows)
				break
			}
			kv := "-"
			if r.KVKnown {
				kv = fmt.Sprintf("%.0f%%", 100*r.KVUsage)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%.0f\t%.0f\t%d\t%s\n", sanitize.Short(sanitize.Text(r.Name), 40), sanitize.Short(sanitize.Text(r.Group), 24),
				r.Engine, r.State, r.ReqPer, FormatBound(r.TTFTP99), kv, r.Running, r.Waiting, r.Restarts, sanitize.Text(r.Err))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	// The tables' last columns are often empty (a server's note): their
	// padding would end the lines in spaces.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

// Progress is the snapshot in one line, for a headless watch's stderr.
func Progress(s Snapshot) string {
	var parts []string
	for _, g := range s.Groups {
		parts = append(parts, fmt.Sprintf("%s %d/%d up %.1f req/s TTFT p99 %s", sanitize.Short(sanitize.Text(g.Name), 24), g.Up, g.Servers, g.ReqPerSec, FormatBound(g.TTFT.P99)))
	}
	if p := ProbeProgress(s.Probe); p != "" {
		parts = append(parts, p)
	}
	return fmt.Sprintf("%s · %s · %s", time.Duration(s.Elapsed*float64(time.Second)).Round(time.Second), strings.Join(parts, " · "), sanitize.Text(s.Verdict.Line))
}

func delta(j Judged) string {
	if !j.Judged {
		return fmt.Sprintf("needs %d a side", j.Needs)
	}
	if j.Rate != nil {
		return fmt.Sprintf("%+.2fpp", 100*j.Delta)
	}
	return fmt.Sprintf("%+.1f%%", 100*j.Delta)
}

func interval(j Judged) string {
	if j.Lo == nil && j.Hi == nil {
		return ""
	}
	f := func(p *float64, inf string) string {
		if p == nil {
			return inf
		}
		if j.Rate != nil {
			return fmt.Sprintf("%+.2fpp", 100**p)
		}
		return fmt.Sprintf("%+.1f%%", 100**p)
	}
	return "[" + f(j.Lo, "-∞") + ", " + f(j.Hi, "+∞") + "]"
}

func decided(j Judged) string {
	if j.DecidedAfter == 0 {
		return ""
	}
	return "after " + time.Duration(j.DecidedAfter*float64(time.Second)).Round(time.Second).String()
}
