package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/htmlreport"
	"github.com/infertop/infertop/telemetry"
)

// Outputs are the report files a run writes (empty: not written).
type Outputs struct {
	JSON, CSV, Text string
	// HTML is the self-contained page drawn from the JSON (htmlreport).
	HTML string
	// Replace writes each file beside its path and renames it into place:
	// a symlink planted at the path is replaced, never written through
	// (the s key's files, in a directory others may write to).
	Replace bool
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
		if o.Replace {
			return ReplaceFile(path, b.Bytes())
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	page := func(w io.Writer) error {
		return htmlreport.WriteReport(w, rep, strings.TrimSuffix(filepath.Base(o.HTML), filepath.Ext(o.HTML)))
	}
	return errors.Join(write(o.JSON, rep.WriteJSON), write(o.CSV, rep.WriteCSV), write(o.Text, rep.WriteText), write(o.HTML, page))
}

// ReplaceFile writes data to a new file in path's directory and renames it
// to path, which replaces whatever was there (a symlink included): how
// the s key's files are written, and any file saved beside them.
// Its errors name path, never the temporary file's name, which means
// nothing to the person who asked for path.
func ReplaceFile(path string, data []byte) error {
	fail := func(err error) error {
		var pe *os.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	fh, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fail(err)
	}
	_, werr := fh.Write(data)
	if err := errors.Join(werr, fh.Chmod(0o644), fh.Close()); err != nil {
		os.Remove(fh.Name())
		return fail(err)
	}
	if err := os.Rename(fh.Name(), path); err != nil {
		os.Remove(fh.Name())
		return fail(err)
	}
	return nil
}

// CheckDir makes sure, before a run, that the s key can write its
// reports into dir: a directory that takes a new file. A typo must not
// wait for the first save to be found.
func CheckDir(dir string) error {
	st, err := os.Stat(dir)
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%s: %w", dir, pe.Err)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	fh, err := os.CreateTemp(dir, ".infertop-check.*")
	if err != nil {
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	fh.Close()
	return os.Remove(fh.Name())
}

// CheckOutputs makes sure, before a run, that every path can be written
// and that no two outputs share one (a typo must not cost the run). A file
// that did not exist is removed again.
func CheckOutputs(paths map[string]string) error {
	seen := map[string]string{}
	for name, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, p, err)
		}
		if other, ok := seen[abs]; ok {
			return fmt.Errorf("%s and %s are the same file, %s", other, name, p)
		}
		seen[abs] = name
		_, statErr := os.Stat(p)
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fh.Close()
		if os.IsNotExist(statErr) {
			os.Remove(p)
		}
	}
	return nil
}

// history is the run's whole record for the report: the engine's seconds
// and histograms (nil when ctx ends first) and the scraper's readings.
func (r *Runner) history(ctx context.Context) (*load.History, []telemetry.Reading) {
	var rs []telemetry.Reading
	if r.scraper != nil {
		rs = r.scraper.History()
	}
	h, err := r.eng.History(ctx)
	if err != nil {
		return nil, rs
	}
	return &h, rs
}

// Save writes the reports of the run as s shows it into dir, named for
// the run's start (infertop-START.json, .csv, .txt, .html), and says where.
func (r *Runner) Save(ctx context.Context, s load.Snapshot, dir string) (string, error) {
	return SaveAs(r.Report(ctx, s), r.SaveBase(dir))
}

// SaveBase is where Save writes into dir: its files' path without the
// extension, named for the run's start (dir/infertop-START). Files saved
// beside them (a comparison's canary) are named from it.
func (r *Runner) SaveBase(dir string) string {
	return filepath.Join(dir, "infertop-"+r.started.Format("20060102-150405"))
}

// SaveAs writes rep's reports at base (base.json, .csv, .txt, .html), each
// replacing what was there (see Outputs.Replace), and says where.
func SaveAs(rep *report.Report, base string) (string, error) {
	if err := Write(rep, Outputs{JSON: base + ".json", CSV: base + ".csv", Text: base + ".txt", HTML: base + ".html", Replace: true}); err != nil {
		return "", err
	}
	return base + ".{json,csv,txt,html}", nil
}
