package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/report/htmlreport"
)

// runReport is `infertop report RUN.json [B.json] [-o RUN.html]`: a run's
// JSON result drawn as one self-contained HTML file, or two runs on the
// same axes.
func (a *app) runReport(args []string) error {
	fs := newFlagSet("report", "Usage: infertop report RUN.json [OTHER.json] [-o FILE.html]\n\nDraws a run's JSON result (run --json, or the dashboard's s key) as one\nself-contained HTML page: manifest, summary per phase, latency, throughput,\nerrors and in flight over time, each phase's latency distribution, and the\ncapacity curve, comparison and GPU power when the run has them. Two results\nare drawn on the same axes. Default output: the first file's name with .html.", a.stdout)
	out := fs.StringP("output", "o", "", "write the page to this file (- for standard output)")
	if err := fs.Parse(args); err != nil { // not parse: the files are arguments
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	paths := fs.Args()
	if len(paths) < 1 || len(paths) > 2 {
		return usagef("report: give one or two JSON results, not %d", len(paths))
	}
	runs, err := htmlreport.ReadRuns(paths)
	if err != nil {
		return usagef("report: %v", err)
	}
	var b bytes.Buffer
	if err := htmlreport.Write(&b, runs); err != nil {
		return usageError{err} // a file that is not a result is the caller's to fix
	}
	dst := *out
	if dst == "" {
		dst = strings.TrimSuffix(paths[0], ".json") + ".html"
	}
	if dst == "-" {
		_, err := a.stdout.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(a.stderr, "infertop report: wrote %s (%d KB)\n", dst, (b.Len()+1023)/1024)
	return nil
}
