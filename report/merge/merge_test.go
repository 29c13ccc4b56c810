package merge

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/schematest"
)

// fixture is a result of one phase at knobs whose TTFT and E2E are vals
// (microseconds), built as the writer builds one: the histograms in
// their V2 encoding beside the exact figures.
func fixture(t testing.TB, knobs report.KnobsJSON, vals []int64) report.InfertopJSON {
	t.Helper()
	h := hdr.New(1, 3_600_000_000, 3)
	var sum, sq float64
	for _, v := range vals {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		sum, sq = sum+float64(v), sq+float64(v)*float64(v)
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(len(vals))
	mean := sum / n
	d := report.DistJSON{Count: int64(len(vals)), Mean: mean / 1000, Std: math.Sqrt(sq/n-mean*mean) / 1000,
		Min: float64(slices.Min(vals)) / 1000, Max: float64(slices.Max(vals)) / 1000}
	lat := map[string]report.DistJSON{}
	for _, k := range report.MetricKeys() {
		lat[k] = report.DistJSON{}
	}
	lat["ttft"], lat["e2el"] = d, d
	hists := map[string]string{"ttft": string(enc), "e2el": string(enc)}
	ph := report.PhaseJSON{ID: 1, Knobs: knobs, DurationS: 2, Sent: int64(len(vals)), Completed: int64(len(vals)), RequestThroughput: n / 2,
		ErrorsByClass: map[string]int64{"5xx": 0}, Latency: lat}
	run := ph
	run.ID = 0
	m := report.NewManifest("test")
	m.URL, m.API, m.Model, m.Knobs, m.Start, m.End = "http://127.0.0.1:1/v1", "openai-chat", "sim", knobs, time.Unix(1e9, 0).UTC(), time.Unix(1e9+2, 0).UTC()
	return report.InfertopJSON{Manifest: m, Run: run, Phases: []report.PhaseJSON{ph}, ErrorsByClass: map[string]int64{}, Errors: []report.ErrorJSON{},
		SLO: []report.VerdictJSON{}, SLOHeld: true,
		Histograms: &report.HistogramsJSON{Encoding: report.HistogramEncoding, Run: hists, Phases: []report.PhaseHistogramsJSON{{ID: 1, Hist: hists}}}}
}

func encodeFile(t testing.TB, r report.InfertopJSON) []byte {
	t.Helper()
	b, err := json.Marshal(report.File{MaxConcurrency: 4, Infertop: r})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decoded(t *testing.T, name string, r report.InfertopJSON) Input {
	t.Helper()
	in, err := Decode(name, encodeFile(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

var knobs4 = report.KnobsJSON{Mode: "closed", Concurrency: 4, PromptTokens: 16, OutputTokens: 6}

// TestMergeExact: the merged percentiles are those of all the values,
// the moments exact, and the merged result is a result.
func TestMergeExact(t *testing.T) {
	var a, b []int64
	for i := range 1000 {
		a = append(a, int64(1000+i*7))
		b = append(b, int64(50_000+i*i))
	}
	m, err := Merge([]Input{decoded(t, "a", fixture(t, knobs4, a)), decoded(t, "b", fixture(t, knobs4, b))}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := slices.Sorted(slices.Values(append(append([]int64(nil), a...), b...)))
	d := m.Result.Run.Latency["ttft"]
	for _, q := range []struct {
		got float64
		q   float64
	}{{d.P50, 0.5}, {d.P90, 0.9}, {d.P99, 0.99}, {d.P999, 0.999}} {
		want := float64(all[int(math.Ceil(q.q*float64(len(all))))-1]) / 1000
		if math.Abs(q.got-want) > want*0.001 {
			t.Errorf("p%g: merged %.3f ms, exact %.3f ms", q.q*100, q.got, want)
		}
	}
	var s float64
	for _, v := range all {
		s += float64(v)
	}
	if want := s / float64(len(all)) / 1000; math.Abs(d.Mean-want) > 1e-6 || d.Count != 2000 || d.Min != 1 || d.Max != float64(all[len(all)-1])/1000 {
		t.Errorf("merged %+v, mean want %.6f", d, want)
	}
	if r := m.Result.Run; r.Sent != 2000 || r.RequestThroughput != 1000 || m.MaxConcurrency != 8 {
		t.Errorf("run %+v, max concurrency %d", r, m.MaxConcurrency)
	}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, buf.Bytes())
	// A merged result is a load of the whole (concurrency 8), refused
	// beside one of its parts, merged with another of its kind.
	again, err := Decode("ab", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if k := again.Result.Manifest.Knobs.Concurrency; k != 8 || again.Result.Phases[0].Knobs.Concurrency != 8 {
		t.Errorf("the merged knobs: concurrency %d", k)
	}
	if _, err := Merge([]Input{again, decoded(t, "a", fixture(t, knobs4, a))}, Options{}); !errors.Is(err, ErrNotMergeable) {
		t.Errorf("a merge beside one of its parts: %v", err)
	}
	if _, err := Merge([]Input{again, again}, Options{}); err == nil || !strings.Contains(err.Error(), "the same run as ab (counted once)") {
		t.Errorf("one result twice: %v", err)
	}
	later := again // another run of the same figures
	later.Result.Manifest.Start = later.Result.Manifest.Start.Add(time.Second)
	m4, err := Merge([]Input{again, later}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d4 := m4.Result.Phases[0].Latency["e2el"]; d4.Count != 4000 || d4.P99 != m.Result.Phases[0].Latency["e2el"].P99 {
		t.Errorf("merged again: %+v", d4)
	}
}

// TestNotMergeable: results of another load are refused by name in one
// line, unless forced.
func TestNotMergeable(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	base := fixture(t, knobs4, vals)
	for _, tt := range []struct {
		name, want string
		spoil      func(*report.InfertopJSON)
	}{
		{"url", "another endpoint", func(r *report.InfertopJSON) { r.Manifest.URL = "http://127.0.0.1:2/v1" }},
		{"knobs", "other knobs", func(r *report.InfertopJSON) { r.Manifest.Knobs.Concurrency = 8 }},
		{"version", "another version", func(r *report.InfertopJSON) { r.Manifest.Version = "v9" }},
		{"model", "another model", func(r *report.InfertopJSON) { r.Manifest.Model = "other" }},
		{"phases", "has no a phase at concurrency 4", func(r *report.InfertopJSON) {
			r.Phases[0].Knobs.Concurrency = 8
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := fixture(t, knobs4, vals)
			tt.spoil(&other)
			ins := []Input{decoded(t, "a", base), decoded(t, "b", other)}
			_, err := Merge(ins, Options{})
			if !errors.Is(err, ErrNotMergeable) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			m, err := Merge(ins, Options{Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if f := m.Result.Merged.Forced; len(f) == 0 || !strings.Contains(strings.Join(f, "; "), tt.want) {
				t.Errorf("forced: %q", f)
			}
			var buf bytes.Buffer
			if err := m.Write(&buf); err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, buf.Bytes())
		})
	}
}

// TestBadResults: crafted files are one-line errors, never a panic or a
// decoder's unbounded work.
func TestBadResults(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	// A histogram whose header declares 1 to 2^62 at 4 digits.
	bomb := func() string {
		h := hdr.New(1, 1<<62, 4)
		b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}()
	for _, tt := range []struct {
		name, want string
		spoil      func(*report.InfertopJSON)
	}{
		{"counts", "sent 2 is less than completed 3", func(r *report.InfertopJSON) { r.Run.Sent = 2 }},
		{"negative", "a count of -1", func(r *report.InfertopJSON) { r.Phases[0].Failed, r.Phases[0].Sent = -1, 2 }},
		{"no histograms", "no histograms", func(r *report.InfertopJSON) { r.Histograms = nil }},
		{"a histogram short", "no histogram", func(r *report.InfertopJSON) { delete(r.Histograms.Run, "ttft") }},
		{"bomb", "geometry", func(r *report.InfertopJSON) { r.Histograms.Run["ttft"] = bomb }},
		{"garbage", "histogram", func(r *report.InfertopJSON) {
			r.Histograms.Run["ttft"] = base64.StdEncoding.EncodeToString([]byte("HISTFAAAAB garbage"))
		}},
		{"compare", "comparison", func(*report.InfertopJSON) {}},
		{"not a result", "no infertop.manifest", func(r *report.InfertopJSON) { r.Manifest.Tool = "" }},
		{"objectives", "objectives", func(r *report.InfertopJSON) { r.SLO = []report.VerdictJSON{{Expr: "ttft_p99 <= soon"}} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := fixture(t, knobs4, vals)
			tt.spoil(&other)
			b := encodeFile(t, other)
			if tt.name == "compare" {
				b = bytes.Replace(b, []byte(`"slo_held":true`), []byte(`"slo_held":true,"compare":{"split_by":"x"}`), 1)
			}
			in, err := Decode("b", b)
			if err == nil {
				_, err = Merge([]Input{decoded(t, "a", fixture(t, knobs4, vals)), in}, Options{Force: true})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
	// Files: one, none, too many values (past the size: report's tests).
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, encodeFile(t, fixture(t, knobs4, vals)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFiles([]string{good, filepath.Join(dir, "none.json")}); err == nil {
		t.Error("a missing file read")
	}
	if _, err := Decode("dense", []byte("["+strings.Repeat("0,", 9<<20)+"0]")); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("dense: %v", err)
	}
	if _, err := Merge([]Input{decoded(t, "a", fixture(t, knobs4, vals))}, Options{}); err == nil {
		t.Error("one result merged")
	}
	ins, err := ReadFiles([]string{good, good})
	if err != nil || ins[1].Name != good {
		t.Errorf("two of one name: %v, %+v", err, ins)
	}
}

// FuzzDecode: any bytes are a result or an error, merged or refused,
// never a panic.
func FuzzDecode(f *testing.F) {
	good := encodeFile(f, fixture(f, knobs4, []int64{1000, 2000}))
	f.Add(good)
	f.Add([]byte(`{"infertop":{"manifest":{"tool":"infertop"},"histograms":{"run":{"ttft":"HISTFAAAAB"}},"run":{"latency":{"ttft":{"count":1}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := Decode("fuzz", b)
		if err != nil {
			return
		}
		g, err := Decode("good", good)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := Merge([]Input{g, in}, Options{Force: true}); err == nil {
			var buf bytes.Buffer
			_ = m.Write(&buf)
		}
	})
}

// TestAgentShares: the results of agents (infertop agent --of) are
// shares of one load: each its part of the knobs, the whole as given
// alike; merged, the knobs are the whole's.
func TestAgentShares(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	share := func(c int, settings map[string]string) Input {
		r := fixture(t, report.KnobsJSON{Mode: "closed", Concurrency: c, PromptTokens: 16, OutputTokens: 6}, vals)
		r.Manifest.Settings = settings
		return decoded(t, "agent", r)
	}
	whole := map[string]string{"of": "2", "concurrency": "5", "requests": "61"}
	m, err := Merge([]Input{share(3, whole), share(2, whole)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.Manifest.Knobs.Concurrency != 5 || len(m.Result.Phases) != 1 || m.Result.Phases[0].Knobs.Concurrency != 5 {
		t.Errorf("merged knobs %+v, phases %+v", m.Result.Manifest.Knobs, m.Result.Phases)
	}
	other := map[string]string{"of": "2", "concurrency": "6", "requests": "61"}
	if _, err := Merge([]Input{share(3, whole), share(3, other)}, Options{}); !errors.Is(err, ErrNotMergeable) || !strings.Contains(err.Error(), "--concurrency") {
		t.Errorf("shares of another whole: %v", err)
	}
	if _, err := Merge([]Input{share(3, whole), share(2, nil)}, Options{}); !errors.Is(err, ErrNotMergeable) || !strings.Contains(err.Error(), "shares of another load") {
		t.Errorf("a share beside a run: %v", err)
	}
}

// TestLiveCounts: a running agent's result, its figures a snapshot older
// than its histograms, merges from the histogram's own moments.
func TestLiveCounts(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	live := fixture(t, knobs4, vals)
	d := live.Run.Latency["ttft"]
	d.Count, d.Mean = 2, 1.5
	live.Run.Latency["ttft"] = d
	m, err := Merge([]Input{decoded(t, "a", fixture(t, knobs4, vals)), decoded(t, "live", live)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Result.Run.Latency["ttft"]; got.Count != 6 || math.Abs(got.Mean-2) > 0.01 || got.Max < 2.99 {
		t.Errorf("merged %+v", got)
	}
}

// TestTraceShares: shares of one trace merge, their arrivals added, the
// worst lag kept; a share of another trace, or a replay beside a load
// that is none, is refused.
func TestTraceShares(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	share := func(arrivals int, behind float64, settings map[string]string) Input {
		r := fixture(t, knobs4, vals)
		r.Manifest.Settings = settings
		r.Trace = &report.TraceJSON{Name: "t.jsonl", Format: "jsonl", Speed: 1, Arrivals: arrivals, Entries: arrivals, SpanS: 10, MaxBehindS: behind, FellBehind: behind > 0.1}
		return decoded(t, "agent", r)
	}
	whole := map[string]string{"of": "2", "trace": "t.jsonl"}
	m, err := Merge([]Input{share(6, 0.01, whole), share(5, 0.3, whole)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr := m.Result.Trace; tr == nil || tr.Arrivals != 11 || tr.Entries != 11 || tr.MaxBehindS != 0.3 || !tr.FellBehind || tr.SpanS != 10 {
		t.Errorf("the merged replay: %+v", tr)
	}
	other := map[string]string{"of": "2", "trace": "u.jsonl"}
	if _, err := Merge([]Input{share(6, 0, whole), share(5, 0, other)}, Options{}); !errors.Is(err, ErrNotMergeable) || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("shares of another trace: %v", err)
	}
	none := fixture(t, knobs4, vals)
	none.Manifest.Settings = whole
	if _, err := Merge([]Input{share(6, 0, whole), decoded(t, "plain", none)}, Options{}); !errors.Is(err, ErrNotMergeable) || !strings.Contains(err.Error(), "another kind of load") {
		t.Errorf("a replay beside a plain load: %v", err)
	}
}

// TestGaps: Gaps merges phases some results lack (an agent that has not
// taken a knob change yet) from those that have them, naming each gap,
// and still refuses another load.
func TestGaps(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	a, b := fixture(t, knobs4, vals), fixture(t, knobs4, vals)
	b.Phases[0].Knobs.PromptTokens = 32 // its phase at the new knobs; a has none
	ins := []Input{decoded(t, "a", a), decoded(t, "b", b)}
	m, err := Merge(ins, Options{Gaps: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Result.Phases) != 2 || m.Result.Phases[1].Completed != 3 || m.Result.Run.Completed != 6 ||
		!strings.Contains(strings.Join(m.Result.Merged.Forced, "; "), "a has no a phase at concurrency 4, prompt 32") {
		t.Errorf("phases %+v, forced %q", m.Result.Phases, m.Result.Merged.Forced)
	}
	b.Manifest.URL = "http://127.0.0.1:2/v1"
	if _, err := Merge([]Input{decoded(t, "a", a), decoded(t, "b", b)}, Options{Gaps: true}); !errors.Is(err, ErrNotMergeable) {
		t.Errorf("another endpoint with gaps: %v", err)
	}
}
