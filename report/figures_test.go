package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestReportAfterAReset: a report saved after a reset says since when its
// figures run, and its CSV's run row has the run's setting since the
// reset (the open loop the o key opened), not the start's.
func TestReportAfterAReset(t *testing.T) {
	r := testReport()
	open := load.Knobs{Mode: load.OpenLoop, Rate: 5.28, Concurrency: 32, PromptTokens: 256, OutputTokens: 128}
	r.Final.Since = 160 * time.Second
	r.Final.Phases = []load.Phase{{ID: 9, Knobs: open, Start: 160 * time.Second, Duration: 7614 * time.Millisecond, Completed: 40}}
	r.Final.Run.Knobs, r.Final.Run.Duration = open, 7614*time.Millisecond
	var text, table bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Whole run since the reset at 2m40s · 7.614s") {
		t.Errorf("the summary does not say since when:\n%s", text.String())
	}
	if err := r.WriteCSV(&table); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&table).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if last := rows[len(rows)-1]; last[0] != "run" || last[1] != "open" || last[2] != "5.280" {
		t.Errorf("the run row %v", last[:4])
	}
}
