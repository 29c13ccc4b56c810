package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// Outputs are the report files a run writes (empty: not written).
type Outputs struct {
	JSON, CSV, Text string
}

// Write writes rep to every file of o.
func Write(rep *report.Report, o Outputs) error {
	write := func(path string, fn func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		var b bytes.Buffer // a failed report leaves no half file
		if err := fn(&b); err != nil {
			return fmt.Errorf("report %s: %w", path, err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	return errors.Join(write(o.JSON, rep.WriteJSON), write(o.CSV, rep.WriteCSV), write(o.Text, rep.WriteText))
}

// Save writes the reports of the run as s shows it into dir, named for
// the run's start (infertop-START.json, .csv, .txt), and says where.
func (r *Runner) Save(ctx context.Context, s load.Snapshot, dir string) (string, error) {
	base := filepath.Join(dir, "infertop-"+r.started.Format("20060102-150405"))
	if err := Write(r.Report(ctx, s), Outputs{JSON: base + ".json", CSV: base + ".csv", Text: base + ".txt"}); err != nil {
		return "", err
	}
	return base + ".{json,csv,txt}", nil
}
