package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/infertop/infertop/report/merge"
)

// runMerge is `infertop merge A.json B.json ... -o all.json`: the results
// of runs that loaded one endpoint side by side, merged exactly into one
// result (see package merge).
func (a *app) runMerge(args []string) error {
	fs := newFlagSet("merge", "Usage: infertop merge A.json B.json ... -o ALL.json [--force]\n\nMerges the JSON results of runs that loaded one endpoint side by side (on\nseveral machines, each its share) into one result, exactly: the run's and\neach phase's latency histograms are added bucket for bucket and the\npercentiles read from the sum; counters and rates are summed; phases are\nmatched by their knobs. Each run's per-second series is kept as its own,\nunder infertop.merged.runs. Results of another endpoint, knobs or version\nare refused unless --force. infertop report draws the merged result.", a.stdout)
	out := fs.StringP("output", "o", "", "write the merged result to this file (- for standard output)")
	force := fs.Bool("force", false, "merge results that differ (endpoint, knobs, version, phases), naming each difference in the result")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	paths := fs.Args()
	if len(paths) < 2 {
		return usagef("merge: give two or more JSON results, not %d", len(paths))
	}
	if *out == "" {
		return usagef("merge: say where to write the merged result (-o ALL.json)")
	}
	ins, err := merge.ReadFiles(paths)
	if err != nil {
		return usageError{err}
	}
	m, err := merge.Merge(ins, merge.Options{Force: *force})
	if err != nil {
		return usageError{err}
	}
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if *out == "-" {
		_, err := a.stdout.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	for _, why := range m.Result.Merged.Refused { // sanitised by the merge
		fmt.Fprintf(a.stderr, "infertop merge: refused %s\n", why)
	}
	r := m.Result.Run
	fmt.Fprintf(a.stderr, "infertop merge: wrote %s: %d runs, %d sent = %d completed + %d failed + %d incomplete\n",
		*out, len(ins), r.Sent, r.Completed, r.Failed, r.Incomplete)
	return nil
}
