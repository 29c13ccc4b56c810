package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestJSONHTTPPhases: the HTTP phases are written by k6's names where
// known, within the schema, and left out where not.
func TestJSONHTTPPhases(t *testing.T) {
	r := testReport()
	for i := range probe.NumHTTPPhases {
		d := time.Duration(i+1) * time.Millisecond
		r.Final.Run.HTTP[i] = load.Dist{Count: 200, Mean: d, Min: d, P50: d, P90: d, P95: d, P99: d, P999: d, Max: d}
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	var doc struct {
		Infertop struct {
			Run    PhaseJSON   `json:"run"`
			Phases []PhaseJSON `json:"phases"`
		} `json:"infertop"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Infertop.Run.HTTP["http_req_waiting"]; got.Count != 200 || got.P50 != 5 {
		t.Errorf("run's http_req_waiting %+v, want 200 at 5 ms", got)
	}
	if len(doc.Infertop.Run.HTTP) != int(probe.NumHTTPPhases) {
		t.Errorf("run's phases %v", doc.Infertop.Run.HTTP)
	}
	for _, p := range doc.Infertop.Phases {
		if p.HTTP != nil {
			t.Errorf("phase %d: HTTP phases %v where none was measured", p.ID, p.HTTP)
		}
	}
}

// TestRequestsLogServerTimings: a request's server timings are logged
// where the server gave them, with the client-server TTFT gap; none are
// where it gave none.
func TestRequestsLogServerTimings(t *testing.T) {
	var line RequestLine
	r := probe.Result{HasTTFT: true, TTFT: 30 * time.Millisecond, Server: probe.ServerTimings{
		Queue: 5 * time.Millisecond, HasQueue: true, TTFT: 20 * time.Millisecond, HasTTFT: true, CachedTokens: 16, HasCached: true}}
	line.server(&r)
	if line.ServerQueue == nil || *line.ServerQueue != 5 || *line.ServerTTFT != 20 || *line.ServerPrefill != 15 || *line.TTFTGap != 10 ||
		*line.CachedTokens != 16 || line.ServerGeneration != nil || line.ServerMeanITL != nil {
		t.Fatalf("%+v", line)
	}
	var none RequestLine
	none.server(&probe.Result{HasTTFT: true, TTFT: time.Millisecond})
	if none.ServerTTFT != nil || none.TTFTGap != nil || none.CachedTokens != nil {
		t.Fatalf("without the server's timings: %+v", none)
	}
}

// TestTextServerSide: the run's TTFT split and cache are in the text
// summary; asked for and offered by no answer, one line says so.
func TestTextServerSide(t *testing.T) {
	r := testReport()
	for i := range load.NumSplitParts {
		r.Final.Run.TTFTSplit[i] = load.Dist{Count: 9, P50: time.Duration(i+1) * time.Millisecond, P99: 9 * time.Millisecond}
	}
	r.Final.Run.CachedTokens, r.Final.Run.CachedOf = 250, 1000
	r.Final.Run.ServerCounted, r.Final.Run.CountMismatch = 200, 50
	r.Final.Run.SpecAccepted, r.Final.Run.SpecDrafted = 10, 129
	r.Final.Calibration = "prompts calibrated from the server's usage (/tokenize: \x1b[2J)"
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"where TTFT went (p50 / p99 of the 9 requests with the server's timings): connection 1ms / 9ms · server queue 2ms / 9ms · server prefill 3ms / 9ms · the rest 4ms / 9ms; the client's TTFT less the server's 5ms / 9ms",
		"prefix cache: 250 of 1000 prompt tokens held (25.0 %)", "prompts calibrated from the server's usage (/tokenize: ",
		"speculative decoding: 10 of 129 draft tokens accepted (7.8 %), by the server's count",
		"output tokens: the server's count for 200 streamed requests; the client's own (a token a message) differed from it in 50 (25.0 %)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "\x1b") {
		t.Error("the server's text reached the summary raw")
	}
	r = testReport()
	r.Manifest.Settings = map[string]string{"server-timings": "true"}
	buf.Reset()
	r.WriteText(&buf)
	if !strings.Contains(buf.String(), "server timings: not offered by this server") {
		t.Errorf("no word of the timings not offered:\n%s", buf.String())
	}
	var doc bytes.Buffer
	r.Final.Run.TTFTSplit[load.SplitGap].Count = 3
	r.Final.Run.TTFTSplit[load.SplitPrefill] = load.Dist{Count: 3, P50: 3 * time.Millisecond}
	r.Final.Run.ServerTimed, r.Final.Run.CachedTokens, r.Final.Run.CachedOf = 3, 250, 1000
	r.Final.Run.SpecAccepted, r.Final.Run.SpecDrafted = 10, 129
	if err := r.WriteJSON(&doc); err != nil {
		t.Fatal(err)
	}
	validate(t, doc.Bytes())
	var got struct {
		Infertop struct {
			Run PhaseJSON `json:"run"`
		} `json:"infertop"`
	}
	json.Unmarshal(doc.Bytes(), &got)
	if run := got.Infertop.Run; run.TTFTSplit["prefill"].P50 != 3 || run.TTFTSplit["gap"].Count != 3 || run.ServerTimed != 3 || run.CachedPromptTokens != 250 ||
		run.SpecAcceptedTokens != 10 || run.SpecDraftTokens != 129 {
		t.Errorf("JSON's run: split %v, timed %d, cached %d", run.TTFTSplit, run.ServerTimed, run.CachedPromptTokens)
	}
}
