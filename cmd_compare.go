package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/compare/saved"
	"github.com/infertop/infertop/slo"
)

// runCompare is `infertop compare BASE.json NEW.json`: two saved results
// judged from their histograms (see package saved), with the gates of a
// live comparison and their exit code.
func (a *app) runCompare(args []string) (err error) {
	fs := newFlagSet("compare", "Usage: infertop compare BASE.json NEW.json [--regression EXPR]... [--slo EXPR]... [--markdown FILE] [--force]\n\nJudges two saved results (run --json): a baseline and a newer run of the same\nload, each statistic from the results' latency histograms with anytime-valid\nconfidence sequences, phase by phase when both ran the same phases. Prints\na table; --markdown writes one for a pull request's comment. Exit code 0\nwhen every gate held, 1 when a --regression was breached (or could not be\njudged) or an --slo failed on NEW, 2 for results that cannot be used or\ncompared (another API or load, a capacity search: --force compares them).", a.stdout)
	regs := fs.StringArray("regression", nil, "NEW's allowed worsening against BASE, repeatable, e.g. 'ttft_p99<+10%', 'error_rate<+0.5pp'; exit 1 when it is worse beyond it with confidence")
	objs := fs.StringArray("slo", nil, "objective NEW must hold, repeatable, over its run and each phase: e.g. 'ttft_p99<=500ms', 'error_rate<1%'")
	mdOut := fs.String("markdown", "", "also write the comparison as markdown, for a pull request's comment, to this file (- for standard output, instead of the table)")
	force := fs.Bool("force", false, "compare results that differ (API, streaming, load, phases, a search's result), naming each difference")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 2 {
		return usagef("compare: give two JSON results, BASE and NEW, not %d", fs.NArg())
	}
	o, err := compareOptions(*regs, *objs, *force)
	if err != nil {
		return usageError{err}
	}
	mdFile, err := saved.CreateMarkdown(*mdOut, fs.Args())
	if err != nil {
		return usagef("--markdown: %w", err)
	}
	if mdFile != nil {
		written := false
		defer func() {
			mdFile.Close()
			if !written { // no comment of a comparison that was never made
				os.Remove(mdFile.Name())
			}
		}()
		defer func() { written = err == nil || errors.As(err, new(exitError)) }()
	}
	var res [2]*saved.Result
	for i, p := range fs.Args() {
		if res[i], err = saved.Read(p); err != nil {
			return usagef("compare: %w", err)
		}
	}
	j, err := saved.Judge(res[0], res[1], o)
	if err != nil {
		return usagef("compare: %w", err)
	}
	var table, md bytes.Buffer
	if err := j.WriteText(&table); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if *mdOut != "" {
		if err := j.WriteMarkdown(&md); err != nil {
			return fmt.Errorf("compare: %w", err)
		}
	}
	switch *mdOut {
	case "-":
		_, err = a.stdout.Write(md.Bytes())
	case "":
		_, err = a.stdout.Write(table.Bytes())
	default:
		if _, err = a.stdout.Write(table.Bytes()); err == nil {
			_, err = mdFile.Write(md.Bytes())
		}
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if j.Regressed() {
		return exitError{1, fmt.Errorf("compare: %s", j.Outcome())}
	}
	return nil
}

// compareOptions are the gates from the flags: the regressions parsed as
// run --regression parses them, the objectives as run --slo does.
func compareOptions(regs, objs []string, force bool) (saved.Options, error) {
	rs, err := compare.ParseRegressions(regs)
	if err != nil {
		return saved.Options{}, fmt.Errorf("--regression: %w", err)
	}
	parsed, err := slo.ParseAll(objs)
	if err != nil {
		return saved.Options{}, fmt.Errorf("--slo: %w", err)
	}
	for _, o := range parsed {
		if o.NeedsEnergy() {
			return saved.Options{}, fmt.Errorf("--slo %s: a saved result's energy is not judged here", o.Expr)
		}
	}
	return saved.Options{Regressions: rs, Objectives: objs, Force: force}, nil
}
