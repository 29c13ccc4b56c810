package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// overloaded is the run: an open loop at 50 req/s that sent 227
// of its 750 arrivals through --max-in-flight 64, every one of those
// completed, the other 523 dropped from the backlog at the end.
func overloaded() *Report {
	k := load.Knobs{Mode: load.OpenLoop, Rate: 50, PromptTokens: 256, OutputTokens: 128}
	var lat [load.NumMetrics]load.Dist
	for m := range load.NumMetrics {
		lat[m] = load.Dist{Count: 227, Mean: time.Second, P50: time.Second, P99: 2 * time.Second, Max: 3 * time.Second}
	}
	p := load.Phase{ID: 1, Knobs: k, Duration: 18 * time.Second, Sending: 15 * time.Second, Completed: 227, Dropped: 523, Latency: lat,
		ReqPerSec: 12.6, SentPerSec: 15.1}
	run := p
	run.ID = 0
	m := NewManifest("v1")
	m.URL, m.API, m.Model, m.Stream = "http://127.0.0.1:8000/v1/chat/completions", "openai-chat", "sim", true
	m.Knobs = KnobsJSON{Mode: "open", Rate: 50, PromptTokens: 256, OutputTokens: 128}
	m.Start = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	m.End = m.Start.Add(18 * time.Second)
	final := load.Snapshot{Phases: []load.Phase{p}, Run: run, Scheduled: 750, Dropped: 523, Done: true}
	objs, _ := slo.ParseAll([]string{"error_rate<1%"})
	return &Report{Manifest: m, Final: final, Verdicts: Verdicts(objs, final, nil)}
}

// TestDroppedCounted: the arrivals an open loop never sent are counted
// in every output: the summary (scheduled = sent + dropped beside sent =
// completed + failed + incomplete), the JSON and the CSV; and the error
// rate and the gate count them as the late requests they are.
func TestDroppedCounted(t *testing.T) {
	r := overloaded()
	if Held(r.Verdicts) {
		t.Fatalf("error_rate<1%% held with 523 of 750 arrivals never sent: %v", r.Verdicts)
	}
	if v := r.Verdicts[0]; !v.Known || v.Actual < 0.69 || v.Actual > 0.70 {
		t.Fatalf("error rate %v (known %v), want 523/750", v.Actual, v.Known)
	}
	js := summaryAndJSON(t, r, "sent 227 = 227 completed + 0 failed + 0 incomplete", "750 arrivals scheduled = 227 sent + 523 dropped",
		"requests 227 ok, 0 failed, 523 dropped unsent", "counted as failed in error_rate", "an SLO was breached")
	var doc struct {
		Dropped  int64 `json:"dropped"`
		Sent     int64 `json:"sent"`
		Infertop struct {
			Scheduled int64 `json:"arrivals_scheduled"`
			Sent      int64 `json:"arrivals_sent"`
			Dropped   int64 `json:"arrivals_dropped"`
			SLOHeld   bool  `json:"slo_held"`
			Run       struct {
				Dropped int64 `json:"dropped"`
			} `json:"run"`
		} `json:"infertop"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	inf := doc.Infertop
	if doc.Dropped != 523 || doc.Sent != 227 || inf.Scheduled != 750 || inf.Sent != 227 || inf.Dropped != 523 || inf.Run.Dropped != 523 || inf.SLOHeld {
		t.Fatalf("JSON: %+v", doc)
	}
	rows := csvRows(t, r)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	if _, ok := col["dropped"]; !ok || rows[1][col["dropped"]] != "523" || rows[2][col["dropped"]] != "523" || rows[2][col["sent"]] != "227" {
		t.Fatalf("CSV: %v", rows)
	}
}

// TestBacklogNotSent: a report saved while the open loop runs (the
// dashboard's s) counts the backlog as waiting, not as sent or in flight.
func TestBacklogNotSent(t *testing.T) {
	r := overloaded()
	run := &r.Final.Run
	run.Completed, run.Dropped, run.Pending, run.Waiting = 288, 0, 32, 423
	r.Final.Phases[0] = *run
	r.Final.Phases[0].ID = 1
	r.Final.Scheduled, r.Final.Dropped, r.Final.Done = 743, 0, false
	summaryAndJSON(t, r, "sent 320 = 288 completed + 0 failed + 0 incomplete + 32 still in flight",
		"743 arrivals scheduled = 320 sent + 423 waiting in the backlog + 0 dropped")
}

// summaryAndJSON holds r's summary to each of want, and returns its JSON,
// held to the schema.
func summaryAndJSON(t *testing.T, r *Report, want ...string) *bytes.Buffer {
	t.Helper()
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("the summary lacks %q:\n%s", w, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	validate(t, js.Bytes())
	return &js
}

// TestMixedWalkCSV: the CSV's run row of a walk through both loops says
// so, rather than the first stage's loop.
func TestMixedWalkCSV(t *testing.T) {
	r := overloaded()
	closed := r.Final.Phases[0]
	closed.ID, closed.Knobs, closed.Dropped = 2, load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128}, 0
	r.Final.Phases = append(r.Final.Phases, closed)
	rows := csvRows(t, r)
	if got := rows[len(rows)-1]; got[0] != "run" || got[1] != "mixed" || rows[1][1] != "open" || rows[2][1] != "closed" {
		t.Fatalf("rows %v", rows)
	}
}

// csvRows is r's CSV, read back.
func csvRows(t *testing.T, r *Report) [][]string {
	t.Helper()
	var c bytes.Buffer
	if err := r.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestPrefixPromptTitle: with a shared prefix a phase's title says the
// prompt that went out, not the knob (256 shown, 1,008 sent).
func TestPrefixPromptTitle(t *testing.T) {
	r := overloaded()
	r.Final.PrefixTokens = 1000
	r.Final.Phases[0].InTokens = 227 * 1008
	summaryAndJSON(t, r, "Phase 1: open loop 50 req/s, prompt ≈1008 as the server counted (asked 256; every prompt starts with the 1000-token shared prefix), output 128 tokens")
}
