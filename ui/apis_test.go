package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestReasoningAndEmbeddingsPanels: a reasoning model's latency table
// shows TTFO beside TTFT; an embeddings API's gives way to E2E (no TTFT,
// TPOT, ITL, nor tok/s out to show as zeros).
func TestReasoningAndEmbeddingsPanels(t *testing.T) {
	m := newTestModel(t, newEngine(t))
	s := fixedSnapshot()
	s.Run.ReasoningTokens = 100
	s.Latency[load.TTFO] = load.Dist{Count: 10, P50: 900 * time.Millisecond, P99: 1500 * time.Millisecond}
	m.snap = s
	if got := m.latencyTable(60, 12); !strings.Contains(got, "TTFO") || !strings.Contains(got, "TTFT") {
		t.Errorf("reasoning: no TTFO beside TTFT:\n%s", got)
	}
	if rows, _ := cmpMetrics(&s); len(rows) != 5 || rows[1] != load.TTFO {
		t.Errorf("comparison rows %v", rows)
	}

	s = fixedSnapshot()
	s.Target.API = "openai-embeddings"
	m.snap = s
	table := m.latencyTable(60, 12)
	if strings.Contains(table, "TTFT") || strings.Contains(table, "TPOT") || strings.Contains(table, "ITL") || !strings.Contains(table, "E2E") {
		t.Errorf("embeddings: latency table\n%s", table)
	}
	if p := m.ttftPanel(30, 6); strings.Contains(p, "TTFT") || !strings.Contains(p, "E2E") {
		t.Errorf("embeddings: the TTFT panel\n%s", p)
	}
	if p := m.throughputPanel(30, 6); strings.Contains(p, "tok/s out") || !strings.Contains(p, "tok/s in") {
		t.Errorf("embeddings: the throughput panel\n%s", p)
	}
}

// TestInvalidAnswersPanel: where answers are judged (structured output,
// tools), the errors panel shows the window's invalid rate under the
// error rate; where none is, nothing of it.
func TestInvalidAnswersPanel(t *testing.T) {
	m := newTestModel(t, newEngine(t))
	s := fixedSnapshot()
	m.snap = s
	if p := m.errorsPanel(40, 8); strings.Contains(p, "invalid") {
		t.Errorf("nothing judged:\n%s", p)
	}
	s.Valid, s.Invalid = 977, 23
	m.snap = s
	if p := m.errorsPanel(40, 8); !strings.Contains(p, "2.3% invalid answers · 23 of 1000") {
		t.Errorf("judged:\n%s", p)
	}
	if p := m.errorsPanel(20, 8); !strings.Contains(p, "2.3% invalid") {
		t.Errorf("narrow:\n%s", p)
	}
}
