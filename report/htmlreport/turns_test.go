package htmlreport

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/infertop/infertop/report"
)

// withSessions is the minimal result with a sessions table of n turns
// and a trace replay that fell behind, written with report's types.
func withSessions(t *testing.T, n int) []byte {
	t.Helper()
	var res report.File
	if err := json.Unmarshal([]byte(minimal), &res); err != nil {
		t.Fatal(err)
	}
	s := &report.SessionsJSON{TurnsPerSession: n, ThinkS: 2, Completed: 4, Capped: 2, SessionTime: report.DistJSON{Count: 4, P50: 9100, P90: 9800, P99: 9900, Mean: 9200, Max: 9950}}
	for i := range n {
		s.Turns = append(s.Turns, report.TurnJSON{Turn: i + 1, Completed: 4, Failed: int64(i % 2), PromptTokens: float64(250 * (i + 1)),
			TTFT: report.DistJSON{Count: 4, P50: 80 + float64(i), P99: 120 + float64(i), Mean: 90}, E2E: report.DistJSON{Count: 4, P50: 700, P99: 900}})
	}
	res.Infertop.Sessions = s
	res.Infertop.Trace = &report.TraceJSON{Name: "<b>mooncake</b>.jsonl", Format: "mooncake", Speed: 1.5, Arrivals: 1000, Entries: 1000, Passes: 1,
		SpanS: 5, MaxBehindS: 9.142, FellBehind: true, Skipped: 3}
	doc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestTurnsAndTrace: a sessions run's page has the per-turn table (a row
// a turn, as the text report's), the time of whole sessions and a chart
// of TTFT by turn; a replay's has how far behind it fell; a crafted file
// of more turns than a run can have draws load.MaxTurns rows and says so;
// a run with neither draws neither.
func TestTurnsAndTrace(t *testing.T) {
	var out bytes.Buffer
	if err := Write(&out, []Run{{Name: "a", JSON: withSessions(t, 5)}}); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(out.String())
	for _, want := range []string{"Sessions, turn by turn", "Sessions of 5 turns (think 2 s) · 4 sessions done · 2 started again at the context's cap",
		"A whole session (first turn's start to last answer, think times in it): p50 9100 ms, p90 9800 ms, p99 9900 ms, mean 9200 ms, max 9950 ms over 4 sessions",
		"<tr><td>1</td><td>4</td><td>0</td><td>250</td><td>80.0 ms</td><td>120 ms</td><td>90.0 ms</td><td>700 ms</td><td>900 ms</td></tr>",
		`<td class="bad">1</td><td>500</td><td>81.0 ms</td>`, `id="turns-ttft" data-lines="2"`,
		"Trace replay", "<b>mooncake</b>.jsonl (mooncake), 1.5× speed", "1000 arrivals of 1000 entries (1 whole pass) over 5 s",
		"fell behind: up to 9142 ms late", "3 failed rows skipped"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// A row a turn, and the summary's row of the run.
	if strings.Count(page, "<tr><td>") != 5+1 || strings.Contains(out.String(), "<b>mooncake") {
		t.Errorf("%d turn rows, want 5; the trace's name unescaped: %v", strings.Count(page, "<tr><td>"), strings.Contains(out.String(), "<b>mooncake"))
	}
	out.Reset()
	if err := Write(&out, []Run{{Name: "a", JSON: withSessions(t, 300)}, {Name: "b", JSON: withSessions(t, 3)}}); err != nil {
		t.Fatal(err)
	}
	page = html.UnescapeString(out.String())
	if n := strings.Count(page, "<tr><td>"); n != maxTurnRows+3+2 || !strings.Contains(page, "the first 100 turns of 300 shown") || !strings.Contains(page, `data-lines="4"`) {
		t.Errorf("%d rows of 300 and 3 turns, want %d and a note, and 4 lines on the chart", n, maxTurnRows+3+2)
	}
	var conv report.File
	json.Unmarshal(withSessions(t, 3), &conv)
	conv.Infertop.Sessions.Conversations = true
	doc, _ := json.Marshal(conv)
	out.Reset()
	if err := Write(&out, []Run{{Name: "c", JSON: doc}}); err != nil || !strings.Contains(out.String(), "Sessions of up to 3 turns") {
		t.Errorf("a dataset's conversations: %v", err)
	}
	out.Reset()
	if err := Write(&out, []Run{{Name: "plain", JSON: []byte(minimal)}}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, `id="turns"`) || strings.Contains(s, `id="trace"`) {
		t.Error("a run without sessions or a trace drew their sections")
	}
}

// TestTurnsCacheHitRate: where a turn's server said what its prefix
// cache held, the sessions table has the hit rate's column, "–" on a
// turn whose server did not say; none said, no column.
func TestTurnsCacheHitRate(t *testing.T) {
	var res report.File
	if err := json.Unmarshal(withSessions(t, 3), &res); err != nil {
		t.Fatal(err)
	}
	rate := func(v float64) *float64 { return &v }
	ts := res.Infertop.Sessions.Turns
	ts[0].CachedPromptTokens, ts[0].PromptTokensCacheKnown, ts[0].PrefixCacheHitRate = 0, 940, rate(0)
	ts[1].CachedPromptTokens, ts[1].PromptTokensCacheKnown, ts[1].PrefixCacheHitRate = 903, 1934, rate(903.0/1934)
	doc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, []Run{{Name: "a", JSON: doc}}); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(out.String())
	for _, want := range []string{"<th>prefix cache hit</th>", "<td>250</td><td class=\"cache\">0.0 %</td><td>80.0 ms</td>",
		`<td class="cache">46.7 %</td>`, `<td>750</td><td class="cache">–</td>`, "by its own count"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	out.Reset()
	if err := Write(&out, []Run{{Name: "a", JSON: withSessions(t, 3)}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "prefix cache hit") {
		t.Error("no server said, and the table has the cache's column")
	}
}
