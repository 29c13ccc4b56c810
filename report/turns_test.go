package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
)

// TestTurnsCacheHitRate: a sessions run's per-turn prefix-cache counts
// are in the JSON with their hit rate (within the schema), and in the
// text's sessions table as a column; a run whose server never said has
// neither the rate nor the column.
func TestTurnsCacheHitRate(t *testing.T) {
	d := load.Dist{Count: 4, P50: 80 * time.Millisecond, P99: 120 * time.Millisecond, Mean: 90 * time.Millisecond}
	turns := []load.TurnFigures{
		{Turn: 1, Completed: 4, PromptTokens: 235, TTFT: d, E2E: d, CachedTokens: 0, CachedOf: 940},
		{Turn: 2, Completed: 4, PromptTokens: 484, TTFT: d, E2E: d, CachedTokens: 903, CachedOf: 1934},
		{Turn: 3, Completed: 4, PromptTokens: 727, TTFT: d, E2E: d, CachedTokens: 1871, CachedOf: 2908},
	}
	for _, said := range []bool{true, false} {
		r := testReport()
		ts := append([]load.TurnFigures(nil), turns...)
		if !said {
			for i := range ts {
				ts[i].CachedTokens, ts[i].CachedOf = 0, 0
			}
		}
		r.Final.Sessions = load.SessionFigures{On: true, Turns: ts, Completed: 4, TurnsPerSess: 3, SessionTime: d}
		var text bytes.Buffer
		if err := r.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Infertop struct {
				Sessions *SessionsJSON `json:"sessions"`
			} `json:"infertop"`
		}
		if err := json.Unmarshal(summaryAndJSON(t, r).Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		s := doc.Infertop.Sessions
		if s == nil || len(s.Turns) != 3 {
			t.Fatalf("sessions: %+v", s)
		}
		if !said {
			for _, tj := range s.Turns {
				if tj.PrefixCacheHitRate != nil || tj.PromptTokensCacheKnown != 0 {
					t.Errorf("no server said, turn %d: %+v", tj.Turn, tj)
				}
			}
			if strings.Contains(text.String(), "cache hit") {
				t.Errorf("no server said, the table has a cache column:\n%s", text.String())
			}
			continue
		}
		for i, want := range []float64{0, 903.0 / 1934, 1871.0 / 2908} {
			tj := s.Turns[i]
			if tj.PrefixCacheHitRate == nil || *tj.PrefixCacheHitRate != want || tj.CachedPromptTokens != turns[i].CachedTokens || tj.PromptTokensCacheKnown != turns[i].CachedOf {
				t.Errorf("turn %d: %+v, want the rate %v", i+1, tj, want)
			}
		}
		for _, want := range []string{"cache hit", "     0.0 %", "46.7 %", "64.3 %"} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("want %q in the sessions table:\n%s", want, text.String())
			}
		}
	}
}
