package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/capacity"
	"github.com/infertop/infertop/compare"
	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
	"github.com/infertop/infertop/telemetry"
)

// The reports below are one of every kind of run, built directly (no
// load runs), so that each kind's JSON is held to the one schema: a
// result of any kind is read with the same schema and the same types.

// record is one finished request of e2e milliseconds, failed when fail.
func record(group string, ttft, e2e time.Duration, fail bool) load.Record {
	res := probe.Result{Group: group, HasTTFT: true, TTFT: ttft, E2E: e2e, OutputTokens: 8, TTFB: ttft / 2}
	if fail {
		res = probe.Result{Group: group, Class: probe.HTTP5xx, Status: 503}
	}
	return load.Record{Result: res, Phase: 1, Knobs: load.Knobs{Concurrency: 8}}
}

// testComparison is a pair's comparison over 30 seconds, the canary 30 %
// slower, with a regression gate.
func testComparison(t *testing.T) compare.Comparison {
	t.Helper()
	regs, err := compare.ParseRegressions([]string{"ttft_p50<+10%", "error_rate<+1pp"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	s := compare.NewSamples(compare.Stats(regs), 0, t0)
	rng := rand.New(rand.NewPCG(1, 2))
	for sec := range 30 {
		for range 20 {
			at := t0.Add(time.Duration(sec)*time.Second + 500*time.Millisecond)
			for side, f := range []float64{1, 1.3} {
				d := time.Duration(f * float64(20+rng.IntN(10)) * float64(time.Millisecond))
				s.Observe(compare.Side(side), record("", d, 10*d, rng.IntN(100) == 0), at)
			}
		}
	}
	return s.Compare(compare.Options{Regressions: regs, Resamples: 200, MinSeconds: 3})
}

// testGrouping is a split of three groups (the third past a limit of
// two: "other"), plus requests without a group.
func testGrouping(t *testing.T) compare.Grouping {
	t.Helper()
	regs, err := compare.ParseRegressions([]string{"e2el_p50<+10%"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	g := compare.NewGroups(compare.Stats(regs), 0, 2, t0)
	rng := rand.New(rand.NewPCG(3, 4))
	for sec := range 30 {
		at := t0.Add(time.Duration(sec)*time.Second + 500*time.Millisecond)
		for i := range 60 {
			grp := []string{"fp_old", "fp_new", "fp_third"}[i%3]
			f := map[string]float64{"fp_old": 1, "fp_new": 1.3, "fp_third": 1}[grp]
			d := time.Duration(f * float64(20+rng.IntN(10)) * float64(time.Millisecond))
			g.Observe(record(grp, d, 10*d, false), at)
		}
		g.Observe(record("", 0, 0, true), at)
	}
	gr := g.Compare(compare.Options{Regressions: regs, Resamples: 200, MinSeconds: 3})
	gr.By = "header:X-Backend"
	return gr
}

// testCapacity is a search's outcome: three steps, the second the knee.
func testCapacity(t *testing.T, prompt, output int) capacity.Result {
	t.Helper()
	d := func(p50, p99 time.Duration) load.Dist {
		return load.Dist{Count: 100, Mean: p50, Std: p50 / 10, Min: p50 / 2, P50: p50, P90: p99 * 9 / 10, P95: p99 * 95 / 100, P99: p99, P999: p99, Max: p99}
	}
	objs, err := slo.ParseAll([]string{"ttft_p99<=150ms"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []capacity.Step
	for i, l := range []float64{4, 8, 16} {
		ms := time.Duration(40*(i+1)*(i+1)) * time.Millisecond
		steps = append(steps, capacity.Step{N: i + 1, Load: l, Knobs: load.Knobs{Concurrency: int(l), PromptTokens: prompt, OutputTokens: output},
			WarmupPhase: 2*i + 1, Phase: 2*i + 2, Start: time.Duration(i) * 2 * time.Second, Measured: 1500 * time.Millisecond,
			Completed: 100, ReqPerSec: 20 * l, OutTokPerSec: 20 * l * float64(output), GoodPerSec: 20 * l, ReqKnown: true, PerRequestKnown: true,
			TTFT: d(ms, 2*ms), TPOT: d(ms/10, ms/5), E2E: d(5*ms, 10*ms), Held: i < 2, Why: "held"})
	}
	steps[2].Why, steps[2].Failed, steps[2].ErrorRate = "breach certain", 3, 0.03
	return capacity.Result{Over: capacity.Concurrency, Objectives: objs, Prompt: prompt, Output: output, Found: true, MaxLoad: 8,
		Knee: 1, Bad: 16, Steps: steps, Why: "resolved: 8 held, 16 broke", Elapsed: 6 * time.Second}
}

// kinds are a report of every kind of run, by name.
func kinds(t *testing.T) map[string]*Report {
	t.Helper()
	out := map[string]*Report{}

	// Plain, with phases (a stage walk: two knob settings), open loop's
	// arrivals, the history, the server's and GPUs' readings and energy.
	out["plain"] = testReport()
	rich := testReport()
	rich.Final.Scheduled = 210
	rich.Final.Phases[0].Warmup = true
	rich.Final.Errors = []load.ErrorCount{{Class: probe.HTTP5xx, Status: 503, Message: "overloaded", Count: 4}}
	start := rich.Manifest.Start
	secs := make([]load.Second, 60)
	for i := range secs {
		secs[i] = load.Second{Sec: int64(i), Completed: 3, OutTokens: 400, InTokens: 800, InFlight: 8, TTFT: [3]uint32{9000, 13000, 15000}, E2E: [3]uint32{90000, 130000, 150000}}
	}
	secs[40].Failed, secs[40].ByClass[probe.HTTP5xx] = 4, 4
	rich.History = &load.History{Seconds: secs, Run: load.PhaseHistograms{Hist: [load.NumMetrics][]byte{load.TTFT: []byte("HISTFAAAAB")}},
		Phases: []load.PhaseHistograms{{ID: 1, Warmup: true}, {ID: 2, Hist: [load.NumMetrics][]byte{load.E2E: []byte("HISTFAAAAC")}}}}
	for i := range 60 {
		rich.Readings = append(rich.Readings, telemetry.Reading{At: start.Add(time.Duration(i) * time.Second), HasServer: true, Running: 8, Waiting: float64(i % 3),
			GenTokens: float64(400 * i), HasKV: true, KVUsage: 0.5, HasGPU: i%10 != 0, PowerW: 300, UtilPct: 80})
	}
	rich.Energy = &Energy{Source: "DCGM", Run: EnergyFigures{Joules: 18000, AvgWatts: 300, JoulesPerToken: 0.7, TokensPerJoule: 1.4, From: "energy counter", OK: true},
		Phases: map[int]EnergyFigures{1: {Joules: 9000, AvgWatts: 300, From: "energy counter", OK: true}}}
	out["phases"] = rich

	// --find-max: one search.
	search := testReport()
	search.Capacity = &capacity.Outcome{Over: capacity.Concurrency, Objectives: testCapacity(t, 64, 8).Objectives,
		Cells: []capacity.Cell{{Prompt: 64, Output: 8, Result: testCapacity(t, 64, 8)}}}
	out["find-max"] = search

	// --matrix: a search per cell, one cell stopped early.
	matrix := testReport()
	m := &capacity.Matrix{Prompts: []int{16, 64}, Outputs: []int{4}}
	stopped := capacity.Result{Over: capacity.Concurrency, Knee: -1, Why: "stopped after 0 steps: interrupt"}
	matrix.Capacity = &capacity.Outcome{Over: capacity.Concurrency, Objectives: search.Capacity.Objectives, Matrix: m,
		Cells: []capacity.Cell{{Prompt: 16, Output: 4, Result: testCapacity(t, 16, 4)}, {Prompt: 64, Output: 4, Result: stopped}}, Stopped: "interrupt"}
	out["matrix"] = matrix

	// --compare: the baseline's result holds the comparison and the
	// canary's whole result.
	pair := testReport()
	var canary bytes.Buffer
	if err := testReport().WriteJSON(&canary); err != nil {
		t.Fatal(err)
	}
	pj := testComparison(t).PairJSON(pair.Manifest.URL, pair.Manifest.Model, canary.Bytes())
	pair.Compare = &Compare{Pair: &pj}
	out["compare"] = pair

	// --split-by.
	split := testReport()
	sj := testGrouping(t).JSON()
	split.Compare = &Compare{Split: &sj}
	out["split-by"] = split

	// A split before any group answered: baseline_group null.
	none := testReport()
	ng := compare.NewGroups(compare.DefaultStats(), 0, 0, time.Now()).Compare(compare.Options{})
	ng.By = "field:system_fingerprint"
	nj := ng.JSON()
	none.Compare = &Compare{Split: &nj}
	out["split-by, no group"] = none
	return out
}

// TestEveryKindMatchesSchema: the JSON of every kind of run matches the
// one schema, and reads back into report's types as written.
func TestEveryKindMatchesSchema(t *testing.T) {
	sch := compile(t)
	for name, r := range kinds(t) {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := r.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(mustUnmarshal(t, b.Bytes())); err != nil {
				t.Fatalf("%s: result does not match result.schema.json: %v", name, err)
			}
			var res struct {
				Infertop InfertopJSON `json:"infertop"`
			}
			if err := json.Unmarshal(b.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			inf := res.Infertop
			switch {
			case r.Compare != nil && r.Compare.Pair != nil:
				c := inf.Compare
				if c == nil || c.Pair == nil || c.Split != nil || len(c.Pair.Metrics) == 0 || c.Pair.Baseline.Report != compare.BaselineReport ||
					len(c.Pair.Regressions) != 2 || !c.Pair.Regressed {
					t.Fatalf("compare read back as %+v", c)
				}
				// The canary's whole result is a result of its own.
				if err := sch.Validate(mustUnmarshal(t, c.Pair.Canary)); err != nil {
					t.Fatalf("the canary's result: %v", err)
				}
			case r.Compare != nil:
				c := inf.Compare
				if c == nil || c.Split == nil || c.Pair != nil || c.Split.SplitBy != r.Compare.Split.SplitBy || len(c.Split.Groups) != len(r.Compare.Split.Groups) {
					t.Fatalf("split read back as %+v", c)
				}
			case r.Capacity != nil:
				if c := inf.Capacity; c == nil || (c.Matrix != nil) != (r.Capacity.Matrix != nil) || c.Over != "concurrency" {
					t.Fatalf("capacity read back as %+v", c)
				}
			}
		})
	}
}

// TestSchemaCatchesKinds: the schema is precise about each kind's
// parts: a document that breaks one is caught.
func TestSchemaCatchesKinds(t *testing.T) {
	sch := compile(t)
	all := kinds(t)
	for _, tt := range []struct {
		kind  string
		path  []string
		spoil func(map[string]any)
	}{
		{"compare", []string{"infertop", "compare"}, func(m map[string]any) { delete(m, "metrics") }},
		{"compare", []string{"infertop", "compare"}, func(m map[string]any) { m["surprise"] = 1 }},
		{"compare", []string{"infertop", "compare", "baseline"}, func(m map[string]any) { m["report"] = "elsewhere" }},
		{"compare", []string{"infertop", "compare", "canary"}, func(m map[string]any) { delete(m, "infertop") }},
		{"split-by", []string{"infertop", "compare"}, func(m map[string]any) { delete(m, "ungrouped") }},
		{"split-by", []string{"infertop", "compare"}, func(m map[string]any) { m["canary"] = map[string]any{} }},
		{"split-by", []string{"infertop", "compare", "baseline_group"}, func(m map[string]any) { m["index"] = 2 }},
		{"compare", []string{"infertop", "compare"}, func(m map[string]any) { m["metrics"].([]any)[4].(map[string]any)["delta_unit"] = "relative" }},
		{"compare", []string{"infertop", "compare"}, func(m map[string]any) { m["metrics"].([]any)[0].(map[string]any)["interval"] = []any{1.0} }},
		{"split-by", []string{"infertop", "compare"}, func(m map[string]any) { m["split_by"] = "cookie:x" }},
		{"split-by", []string{"infertop", "compare"}, func(m map[string]any) { m["groups"].([]any)[0].(map[string]any)["group"] = strings.Repeat("x", 65) }},
		{"split-by", []string{"infertop", "compare"}, func(m map[string]any) { delete(m["groups"].([]any)[0].(map[string]any), "metrics") }},
		{"matrix", []string{"infertop", "capacity", "matrix"}, func(m map[string]any) { delete(m, "cells") }},
		{"matrix", []string{"infertop", "capacity"}, func(m map[string]any) { m["why"] = "a matrix's top is no search" }},
		{"matrix", []string{"infertop", "capacity", "matrix"}, func(m map[string]any) { delete(m["cells"].([]any)[0].(map[string]any), "why") }},
		{"find-max", []string{"infertop", "capacity"}, func(m map[string]any) { delete(m, "duration_s") }},
		{"find-max", []string{"infertop", "capacity", "at", "latency"}, func(m map[string]any) { m["itl"] = m["ttft"] }},
		{"matrix", []string{"infertop", "capacity"}, func(m map[string]any) { m["surprise"] = 1 }},
		{"find-max", []string{"infertop", "capacity"}, func(m map[string]any) { m["over"] = "prompt" }},
	} {
		var b bytes.Buffer
		if err := all[tt.kind].WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		m := doc
		for _, k := range tt.path {
			m = m[k].(map[string]any)
		}
		tt.spoil(m)
		broken, _ := json.Marshal(doc)
		if err := sch.Validate(mustUnmarshal(t, broken)); err == nil {
			t.Errorf("%s: a result broken at %v passed the schema", tt.kind, tt.path)
		}
	}
}

// TestSchemaGroupBound: the schema's bound on a group's value is the
// probe's, the one Result.Group is cut to.
func TestSchemaGroupBound(t *testing.T) {
	var sch struct {
		Defs struct {
			GroupValue struct {
				MaxLength int `json:"maxLength"`
			} `json:"group_value"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema(), &sch); err != nil {
		t.Fatal(err)
	}
	if n := sch.Defs.GroupValue.MaxLength; n != probe.MaxGroupBytes {
		t.Errorf("the schema's group_value.maxLength is %d, probe.MaxGroupBytes %d", n, probe.MaxGroupBytes)
	}
}
