package saved

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// ph is a phase of a synthetic result: n requests at knobs, each latency
// lognormal around its base value times slow.
type ph struct {
	knobs  report.KnobsJSON
	n      int
	slow   float64
	failed int64
	warmup bool
	open   bool // queue times, and TTFT* and E2E* (the open loop's)
	// judged: every completed request's answer judged, invalid of them
	// invalid.
	judged  bool
	invalid int64
}

var closed8 = report.KnobsJSON{Mode: "closed", Concurrency: 8, PromptTokens: 256, OutputTokens: 128}

// bases are the synthetic latencies' medians, in ms.
var bases = map[load.Metric]float64{load.TTFT: 150, load.TPOT: 10, load.ITL: 10, load.E2E: 1400, load.TTFB: 1}

// synth writes a result file of phases (ids from 1), its run their sum;
// seed draws the latencies.
func synth(t *testing.T, m report.Manifest, seed uint64, phases ...ph) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	m.Tool = "infertop"
	if m.API == "" {
		m.API = "openai-chat"
	}
	if m.Knobs == (report.KnobsJSON{}) {
		m.Knobs = phases[0].knobs
	}
	runH := map[load.Metric]*hdr.Histogram{}
	run := report.PhaseJSON{Latency: map[string]report.DistJSON{}}
	hists := report.HistogramsJSON{Encoding: report.HistogramEncoding, Run: map[string]string{}}
	var out []report.PhaseJSON
	for i, p := range phases {
		pj := report.PhaseJSON{ID: i + 1, Warmup: p.warmup, Knobs: p.knobs, Sent: int64(p.n), Completed: int64(p.n) - p.failed,
			Failed: p.failed, Latency: map[string]report.DistJSON{}}
		if p.judged {
			pj.Output = &report.OutputJSON{Valid: pj.Completed - p.invalid, Invalid: p.invalid}
			if run.Output == nil {
				run.Output = &report.OutputJSON{}
			}
			run.Output.Valid, run.Output.Invalid = run.Output.Valid+pj.Output.Valid, run.Output.Invalid+p.invalid
		}
		hs := map[string]string{}
		metrics := []load.Metric{load.TTFT, load.TPOT, load.ITL, load.E2E, load.TTFB}
		if p.open {
			metrics = append(metrics, load.Queue, load.TTFTIntended, load.E2EIntended)
		}
		for _, mt := range metrics {
			h := load.NewHistogram()
			base := bases[mt]
			switch mt {
			case load.Queue:
				base = 5
			case load.TTFTIntended:
				base = bases[load.TTFT] * 3 // the intended send time's: a different figure, told apart
			case load.E2EIntended:
				base = bases[load.E2E] * 3
			}
			for range p.n {
				v := base * p.slow * math.Exp(0.3*rng.NormFloat64())
				if err := h.RecordValue(int64(v * 1e3)); err != nil {
					t.Fatal(err)
				}
			}
			hs[report.MetricKey(mt)] = encode(t, h)
			pj.Latency[report.MetricKey(mt)] = distOf(h)
			if runH[mt] == nil {
				runH[mt] = load.NewHistogram()
			}
			runH[mt].Merge(h)
		}
		hists.Phases = append(hists.Phases, report.PhaseHistogramsJSON{ID: pj.ID, Warmup: p.warmup, Hist: hs})
		run.Sent, run.Completed, run.Failed = run.Sent+pj.Sent, run.Completed+pj.Completed, run.Failed+pj.Failed
		out = append(out, pj)
	}
	for mt, h := range runH {
		hists.Run[report.MetricKey(mt)] = encode(t, h)
		run.Latency[report.MetricKey(mt)] = distOf(h)
	}
	b, err := json.Marshal(map[string]any{"infertop": report.InfertopJSON{Manifest: m, Run: run, Phases: out, Histograms: &hists}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// distOf is the figures of h an objective reads, in ms.
func distOf(h *hdr.Histogram) report.DistJSON {
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1e3 }
	return report.DistJSON{Count: h.TotalCount(), Mean: h.Mean() / 1e3, P50: q(50), P90: q(90), P95: q(95), P99: q(99), P999: q(99.9),
		Min: float64(h.Min()) / 1e3, Max: float64(h.Max()) / 1e3}
}

func encode(t *testing.T, h *hdr.Histogram) string {
	t.Helper()
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decode(t *testing.T, name string, b []byte) *Result {
	t.Helper()
	r, err := Decode(name, b)
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return r
}

func regs(t *testing.T, exprs ...string) []compare.Regression {
	t.Helper()
	rs, err := compare.ParseRegressions(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestJudgeSlowerAndSame: a newer run 20 % slower breaches a 10 %
// margin, named; one of the same load (other draws) holds it, within
// the margin; the error rate's interval comes from the counts.
func TestJudgeSlowerAndSame(t *testing.T) {
	t.Parallel()
	base := decode(t, "base", synth(t, report.Manifest{}, 1, ph{knobs: closed8, n: 2000, slow: 1}))
	same := decode(t, "same", synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 2000, slow: 1}))
	slow := decode(t, "slow", synth(t, report.Manifest{}, 3, ph{knobs: closed8, n: 2000, slow: 1.2, failed: 100}))
	o := Options{Regressions: regs(t, "ttft_p50<+10%", "tpot_p50<+10%", "error_rate<+1pp")}

	j, err := Judge(base, slow, o)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Regressed() {
		t.Fatalf("a 20%% slower run held every gate:\n%s", text(t, j))
	}
	fs := j.Failures()
	for _, want := range []string{"tpot_p50<+10%: breached", "error_rate<+1pp: breached"} {
		if !strings.Contains(strings.Join(fs, "\n"), want) {
			t.Errorf("failures %q lack %q", fs, want)
		}
	}
	if !strings.HasPrefix(j.Outcome(), "slow regressed against base: regression ") {
		t.Errorf("outcome %q", j.Outcome())
	}
	for _, r := range j.Scopes[0].Rows {
		if r.Stat.Q == 0.99 {
			continue // a tail's interval over 2,000 requests is wide
		}
		if !r.Judged || r.Verdict != compare.Worse {
			t.Errorf("%s: judged %t, %v; want worse", r.Stat.Name, r.Judged, r.Verdict)
		}
	}

	j, err = Judge(base, same, o)
	if err != nil {
		t.Fatal(err)
	}
	if j.Regressed() {
		t.Fatalf("the same load regressed: %q", j.Failures())
	}
	if g := j.Gates[1]; g.Margin != compare.WithinMargin {
		t.Errorf("tpot_p50 of the same load: %v, want within the margin", g.Margin)
	}
	if got := text(t, j); !strings.Contains(got, "every gate held") {
		t.Errorf("table without its outcome:\n%s", got)
	}
}

func text(t *testing.T, j *Judgement) string {
	t.Helper()
	var b bytes.Buffer
	if err := j.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestJudgeTooFew: a gate on a statistic neither side has enough
// requests for is not judged, and does not pass.
func TestJudgeTooFew(t *testing.T) {
	t.Parallel()
	b := decode(t, "b", synth(t, report.Manifest{}, 1, ph{knobs: closed8, n: 100, slow: 1}))
	n := decode(t, "n", synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 100, slow: 1}))
	j, err := Judge(b, n, Options{Regressions: regs(t, "ttft_p99<+10%")})
	if err != nil {
		t.Fatal(err)
	}
	fs := j.Failures()
	if len(fs) != 1 || !strings.Contains(fs[0], "not judged: too few requests (100 and 100; ttft_p99 needs 200 a side)") {
		t.Fatalf("failures %q", fs)
	}
	if !strings.HasPrefix(j.Outcome(), "n not passed against b") {
		t.Errorf("outcome %q", j.Outcome())
	}
}

// TestJudgeRefuses: results that are not runs of one load are refused,
// every difference named, unless forced; forced, each is named in the
// table and the whole runs are judged when the phases differ.
func TestJudgeRefuses(t *testing.T) {
	t.Parallel()
	base := decode(t, "base", synth(t, report.Manifest{}, 1, ph{knobs: closed8, n: 300, slow: 1}))
	c16 := closed8
	c16.Concurrency = 16
	search := synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 300, slow: 1}, ph{knobs: c16, n: 300, slow: 1})
	search = bytes.Replace(search, []byte(`"infertop":{`), []byte(`"infertop":{"capacity":{"steps":[]},`), 1)
	for _, tc := range []struct {
		name string
		b    []byte
		want []string
	}{
		{"api", synth(t, report.Manifest{API: "openai-completions"}, 2, ph{knobs: closed8, n: 300, slow: 1}),
			[]string{"another endpoint API (openai-completions, not openai-chat)"}},
		{"stream", synth(t, report.Manifest{Stream: true}, 2, ph{knobs: closed8, n: 300, slow: 1}), []string{"streaming differs"}},
		{"knobs", synth(t, report.Manifest{}, 2, ph{knobs: c16, n: 300, slow: 1}),
			[]string{"another load (concurrency 16, prompt 256, output 128, not concurrency 8", "other phases"}},
		{"stages", synth(t, report.Manifest{Settings: map[string]string{"stages": "concurrency=8,duration=1m"}}, 2,
			ph{knobs: closed8, n: 300, slow: 1}), []string{`another load (--stages "concurrency=8,duration=1m", not "")`}},
		{"search", search, []string{"search is a capacity search's result", "other phases (2: concurrency 8"}},
	} {
		n := decode(t, tc.name, tc.b)
		_, err := Judge(base, n, Options{})
		if !errors.Is(err, ErrNotComparable) {
			t.Fatalf("%s: %v, want ErrNotComparable", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		j, err := Judge(base, n, Options{Force: true})
		if err != nil {
			t.Fatalf("%s forced: %v", tc.name, err)
		}
		if got := text(t, j); !strings.Contains(got, "forced: "+tc.want[0][:10]) {
			t.Errorf("%s forced: the table does not name it:\n%s", tc.name, got)
		}
	}
	// Another URL, model and version are what a comparison is for.
	other := decode(t, "other", synth(t, report.Manifest{URL: "http://canary:8000/v1", Model: "m2", Version: "v9"}, 2,
		ph{knobs: closed8, n: 300, slow: 1}))
	if _, err := Judge(base, other, Options{}); err != nil {
		t.Errorf("another URL, model and version: %v", err)
	}
	// A mean has no confidence sequence.
	if _, err := Judge(base, other, Options{Regressions: regs(t, "e2el_mean<+10%")}); err == nil || !strings.Contains(err.Error(), "name a percentile") {
		t.Errorf("a mean's regression: %v", err)
	}
}

// TestJudgePhases: runs of the same phases are judged phase by phase
// (the warm-up left out): a regression in the second phase alone is
// named with it; the confidence is split over every phase.
func TestJudgePhases(t *testing.T) {
	t.Parallel()
	c16 := closed8
	c16.Concurrency = 16
	warm := ph{knobs: closed8, n: 50, slow: 5, warmup: true}
	b := decode(t, "b", synth(t, report.Manifest{}, 1, warm, ph{knobs: closed8, n: 1500, slow: 1}, ph{knobs: c16, n: 1500, slow: 1}))
	n := decode(t, "n", synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 1500, slow: 1}, ph{knobs: c16, n: 1500, slow: 1.3}))
	j, err := Judge(b, n, Options{Regressions: regs(t, "tpot_p50<+10%")})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Scopes) != 2 || j.Scopes[1].Label != "phase 2 (concurrency 16, prompt 256, output 128)" {
		t.Fatalf("scopes %+v", j.Scopes)
	}
	if !strings.Contains(j.PhasesNote, "judged phase by phase, the warm-up left out") {
		t.Errorf("note %q", j.PhasesNote)
	}
	fs := j.Failures()
	if len(fs) != 1 || !strings.Contains(fs[0], "breached in phase 2") {
		t.Errorf("failures %q, want phase 2's breach alone", fs)
	}
	if want := 1 - 0.05/10; math.Abs(j.Confidence-want) > 1e-12 {
		t.Errorf("confidence %v, want %v (5 statistics × 2 phases)", j.Confidence, want)
	}
}

// TestJudgeOpenLoop: in the open loop TTFT and E2E are judged from the
// intended send time, as the live comparison and the objectives judge
// them.
func TestJudgeOpenLoop(t *testing.T) {
	t.Parallel()
	open := report.KnobsJSON{Mode: "open", Rate: 20, PromptTokens: 256, OutputTokens: 128}
	b := decode(t, "b", synth(t, report.Manifest{}, 1, ph{knobs: open, n: 500, slow: 1, open: true}))
	n := decode(t, "n", synth(t, report.Manifest{}, 2, ph{knobs: open, n: 500, slow: 1, open: true}))
	j, err := Judge(b, n, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Open {
		t.Fatal("an open loop's judgement is not marked open")
	}
	r := j.Scopes[0].Rows[0] // TTFT p50
	if r.Base < 2*bases[load.TTFT] {
		t.Errorf("TTFT p50 %.1fms: the service time's, not TTFT*'s (about %.0fms)", r.Base, 3*bases[load.TTFT])
	}
}

// TestJudgeObjectives: --slo objectives are checked on the newer result,
// over its run and each phase.
func TestJudgeObjectives(t *testing.T) {
	t.Parallel()
	b := decode(t, "b", synth(t, report.Manifest{}, 1, ph{knobs: closed8, n: 300, slow: 1}))
	n := decode(t, "n", synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 300, slow: 1}))
	j, err := Judge(b, n, Options{Objectives: []string{"error_rate<1%", "ttft_p50<=1ms"}})
	if err != nil {
		t.Fatal(err)
	}
	fs := j.Failures()
	if len(fs) != 2 || !strings.HasPrefix(fs[0], "objective ttft_p50<=1ms BREACHED in run") {
		t.Fatalf("failures %q", fs)
	}
	if !strings.Contains(j.Outcome(), "regressed") {
		t.Errorf("outcome %q", j.Outcome())
	}
}

// TestMarkdown: the markdown leads with the outcome, has a row per
// statistic, and a crafted model's name renders as text.
func TestMarkdown(t *testing.T) {
	t.Parallel()
	b := decode(t, "b", synth(t, report.Manifest{Model: "<img src=x onerror=alert(1)>|`"}, 1, ph{knobs: closed8, n: 2000, slow: 1}))
	n := decode(t, "n", synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 2000, slow: 1.2}))
	j, err := Judge(b, n, Options{Regressions: regs(t, "tpot_p50<+10%")})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := j.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{"### ❌ infertop compare: n regressed against b", "| TPOT p50 |", "**worse**",
		`\<img src=x onerror=alert(1)\>\|\` + "`", "- tpot\\_p50\\<+10%: breached"} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(<img") {
		t.Errorf("markdown holds raw HTML:\n%s", got)
	}
}

// TestJudgeInvalidRate: the invalid rate is judged from the judged
// answers' counts (not the failures), a default statistic only where
// answers were judged; 5 % invalid against none breaches
// invalid_rate<+1pp, and a hostile count is refused.
func TestJudgeInvalidRate(t *testing.T) {
	t.Parallel()
	b := decode(t, "b", synth(t, report.Manifest{}, 1, ph{knobs: closed8, n: 2000, slow: 1, failed: 100, judged: true}))
	n := decode(t, "n", synth(t, report.Manifest{}, 2, ph{knobs: closed8, n: 2000, slow: 1, failed: 100, judged: true, invalid: 95}))
	j, err := Judge(b, n, Options{Regressions: regs(t, "invalid_rate<+1pp")})
	if err != nil {
		t.Fatal(err)
	}
	rows := j.Scopes[0].Rows
	i := slices.IndexFunc(rows, func(r Row) bool { return r.Stat.Invalid })
	if i < 0 || rows[i].NBase != 1900 || rows[i].New != 0.05 || rows[i].Verdict != compare.Worse {
		t.Fatalf("rows %+v", rows)
	}
	if fs := j.Failures(); len(fs) != 1 || !strings.Contains(fs[0], "invalid_rate<+1pp") {
		t.Fatalf("failures %q", fs)
	}
	// Nothing judged: no invalid rate among the defaults.
	plain := decode(t, "p", synth(t, report.Manifest{}, 3, ph{knobs: closed8, n: 300, slow: 1}))
	j, err = Judge(plain, plain, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(j.Scopes[0].Rows, func(r Row) bool { return r.Stat.Invalid }) {
		t.Errorf("an invalid rate without answers judged: %+v", j.Scopes[0].Rows)
	}
	// More answers judged than completed: unusable.
	raw := synth(t, report.Manifest{}, 4, ph{knobs: closed8, n: 300, slow: 1, failed: 10, judged: true, invalid: -5})
	if _, err := Decode("x", raw); !errors.Is(err, ErrUnusable) {
		t.Errorf("a hostile count: %v", err)
	}
}

// TestNoDifferenceWords: a verdict of no difference says what its
// interval shows: within the least effect when the whole interval lies
// inside it, else that no difference is shown yet.
func TestNoDifferenceWords(t *testing.T) {
	lat := compare.Stat{Name: "ttft_p50", Q: 0.5}
	rate := compare.Stat{Name: "error_rate", ErrorRate: true}
	for _, c := range []struct {
		stat   compare.Stat
		lo, hi float64
		want   string
	}{
		{lat, -0.03, 0.04, "within ±5 %"},
		{lat, 0.004, 0.092, "no difference shown"},
		{lat, -0.08, 0.01, "no difference shown"},
		{rate, -0.0005, 0.0008, "within ±0.1 pp"},
		{rate, -0.0005, 0.003, "no difference shown"},
	} {
		r := Row{Stat: c.stat, Judged: true, Verdict: compare.NoDifference, Interval: compare.Interval{Lo: c.lo, Hi: c.hi}}
		if got := r.cells()[len(columns)-1]; got != c.want {
			t.Errorf("%s %+.4f…%+.4f: %q, want %q", c.stat.Name, c.lo, c.hi, got, c.want)
		}
	}
}
