package runner

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// TestSaveCountsTheBacklog: the dashboard's s while an open loop runs
// past --max-in-flight (the issue's "743 sent = 288 completed + 455
// still in flight" with --max-in-flight 4 here) counts the backlog as
// waiting, never as sent or in flight, as the headless run and the
// exporter do.
func TestSaveCountsTheBacklog(t *testing.T) {
	cfg := simConfig(t)
	cfg.Load.Knobs = load.Knobs{Mode: load.OpenLoop, Rate: 400, PromptTokens: 8, OutputTokens: 64}
	cfg.Load.MaxInFlight = 4
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s := waitSnap(t, r, 20*time.Second, "a backlog of 50", func(s load.Snapshot) bool { return s.Run.Waiting >= 50 })
	dir := t.TempDir()
	if _, err := r.Save(context.Background(), s, dir); err != nil {
		t.Fatal(err)
	}
	base := r.SaveBase(dir)
	text, err := os.ReadFile(base + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.ReadResult(base+".json", report.MaxResultBytes)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := report.DecodeFile("saved", b)
	if err != nil {
		t.Fatal(err)
	}
	run := doc.Infertop.Run
	if inFlight := run.Sent - run.Completed - run.Failed; inFlight > 8 || run.Backlog < 50 {
		t.Fatalf("saved: sent %d = %d completed + %d failed + %d in flight with --max-in-flight 4, backlog %d", run.Sent, run.Completed, run.Failed, inFlight, run.Backlog)
	}
	for _, l := range strings.Split(string(text), "\n") {
		if strings.Contains(l, "sent") && !strings.Contains(l, "req/s ·") {
			t.Log(l)
		}
	}
	if !strings.Contains(string(text), "waiting in the backlog") {
		t.Fatalf("the saved summary does not say what waits:\n%s", text)
	}
}
