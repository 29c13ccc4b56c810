package compare

import (
	"encoding/json"
	"math"
)

// The types below are a comparison as a result's infertop.compare holds
// it (report/result.schema.json describes it): typed, so that the writer
// and every reader (the HTML report, a script in Go) share one
// definition of the keys, and a reader decodes what the writer encoded.

// ResultJSON is one statistic compared, as the JSON report writes it.
type ResultJSON struct {
	Name string `json:"name"`
	// Unit is ms for a latency, fraction for the error rate; DeltaUnit is
	// relative (0.38: +38 %) or rate (0.005: +0.5 percentage points).
	Unit string `json:"unit"`
	// Baseline and Canary are each side's statistic in Unit; null when a
	// side has no sample.
	Baseline  *float64 `json:"baseline"`
	Canary    *float64 `json:"canary"`
	DeltaUnit string   `json:"delta_unit"`
	// Delta is the newer side's difference in DeltaUnit; null unless
	// both sides have samples.
	Delta *float64 `json:"delta"`
	// Interval is [lo, hi] at Confidence; null when not judged.
	Interval   []float64 `json:"interval"`
	NBaseline  int       `json:"n_baseline"`
	NCanary    int       `json:"n_canary"`
	Seconds    int       `json:"seconds"`
	Verdict    string    `json:"verdict"`
	Confidence float64   `json:"confidence"`
}

// GateJSON is one regression judged.
type GateJSON struct {
	Expr      string  `json:"expr"`
	Tolerance float64 `json:"tolerance"`
	Judged    bool    `json:"judged"`
	Breached  bool    `json:"breached"`
	// Text says how the gate came out, its margin verdict included
	// ("within the margin", "undecided", ...).
	Text string `json:"text"`
}

// ComparisonJSON is one comparison's statistics and gates: a pair's
// infertop.compare has its keys at the top (PairJSON), a split's has them
// in every newer group (GroupJSON).
type ComparisonJSON struct {
	// Method says how the comparison was made (Method).
	Method string `json:"method"`
	// Confidence is each interval's; FamilyConfidence the comparison's
	// as a whole (Bonferroni over the statistics).
	Confidence       float64 `json:"confidence"`
	FamilyConfidence float64 `json:"family_confidence"`
	Resamples        int     `json:"resamples"`
	// Metrics are the statistics compared, Regressions the gates judged
	// (empty without --regression).
	Metrics     []ResultJSON `json:"metrics"`
	Regressions []GateJSON   `json:"regressions"`
	// Regressed is true when a gate was breached with confidence;
	// Verdict is the comparison's line.
	Regressed bool   `json:"regressed"`
	Verdict   string `json:"verdict"`
}

// PairJSON is a pair's infertop.compare (`run --compare`), in the
// baseline's result: the comparison, what the baseline is, and the
// canary's whole result, so one file holds the run.
type PairJSON struct {
	ComparisonJSON
	Baseline BaselineJSON `json:"baseline"`
	// Canary is the canary's result, as its own file holds it (the same
	// schema as the baseline's, without a compare of its own).
	Canary json.RawMessage `json:"canary"`
}

// BaselineJSON names a pair's baseline; its report is the result's top
// level (Report says so: "the top level").
type BaselineJSON struct {
	URL    string `json:"url"`
	Model  string `json:"model"`
	Report string `json:"report"`
}

// BaselineReport is what BaselineJSON.Report says: the baseline's
// figures are those of the result that holds the comparison.
const BaselineReport = "the top level"

// SplitJSON is a split's infertop.compare (`run --split-by`): the
// baseline group, and each newer group compared with it.
type SplitJSON struct {
	Method string `json:"method"`
	// SplitBy is the split's spec ("header:X-Backend").
	SplitBy string `json:"split_by"`
	// BaselineGroup is null before any group answered.
	BaselineGroup *BaselineGroupJSON `json:"baseline_group"`
	// Groups are the newer groups in the order seen, OtherGroup's last.
	Groups    []GroupJSON   `json:"groups"`
	Regressed bool          `json:"regressed"`
	Verdict   string        `json:"verdict"`
	Ungrouped UngroupedJSON `json:"ungrouped"`
}

// BaselineGroupJSON is a split's baseline group: the value that named it
// (raw, as the server sent it), its number (always 1), its requests, and
// whether --baseline-group named it (else it answered first).
type BaselineGroupJSON struct {
	Group    string `json:"group"`
	Index    int    `json:"index"`
	Requests int    `json:"requests"`
	Named    bool   `json:"named"`
}

// GroupJSON is one newer group compared with the baseline group: its
// name, number (0 for OtherGroup) and requests, and the comparison as a
// pair's has it.
type GroupJSON struct {
	ComparisonJSON
	Group    string `json:"group"`
	Index    int    `json:"index"`
	Requests int    `json:"requests"`
}

// UngroupedJSON counts the requests no group could be read from, left
// out of the comparison.
type UngroupedJSON struct {
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
}

// JSON is the comparison's part of the report's infertop.compare; a
// pair's caller adds both sides (PairJSON), a split's the group.
func (c Comparison) JSON() ComparisonJSON {
	word := "canary"
	if c.Sides != ([2]string{}) {
		word = "group"
	}
	rs := make([]ResultJSON, 0, len(c.Results))
	for _, r := range c.Results {
		j := ResultJSON{Name: r.Stat.Name, Unit: "ms", DeltaUnit: "relative", NBaseline: r.NBaseline, NCanary: r.NCanary,
			Seconds: r.Seconds, Verdict: r.Verdict.text(word), Confidence: c.Confidence}
		if r.Verdict == Unresolvable { // the schema's verdicts predate it; the line says it
			j.Verdict = NoDifference.text(word)
		}
		if r.Stat.ErrorRate {
			j.Unit, j.DeltaUnit = "fraction", "rate"
		}
		if r.NBaseline > 0 {
			j.Baseline = &r.Baseline
		}
		if r.NCanary > 0 {
			j.Canary = &r.Canary
		}
		if r.NBaseline > 0 && r.NCanary > 0 {
			j.Delta = &r.Delta
		}
		if r.Verdict != NotEnough {
			j.Interval = []float64{finite(r.Lo), finite(r.Hi)}
		}
		rs = append(rs, j)
	}
	gs := []GateJSON{}
	for _, g := range c.Gates {
		gs = append(gs, GateJSON{Expr: g.Regression.Expr, Tolerance: g.Regression.Tolerance, Judged: g.Result.Verdict != NotEnough,
			Breached: g.Breached, Text: g.String()})
	}
	method := c.Method
	if method == "" {
		method = Method
	}
	return ComparisonJSON{Method: method, Confidence: c.Confidence, FamilyConfidence: c.Family, Resamples: c.Resamples,
		Metrics: rs, Regressions: gs, Regressed: c.Breached(), Verdict: c.Line()}
}

// PairJSON is the comparison as a pair's infertop.compare: with the
// baseline's URL and model, and canary, the canary's whole result.
func (c Comparison) PairJSON(baselineURL, baselineModel string, canary json.RawMessage) PairJSON {
	return PairJSON{ComparisonJSON: c.JSON(), Canary: canary,
		Baseline: BaselineJSON{URL: baselineURL, Model: baselineModel, Report: BaselineReport}}
}

// JSON is the split as the report's infertop.compare writes it: the
// baseline group, and per newer group its name, number, requests and the
// comparison as a Pair's JSON has it.
func (gr Grouping) JSON() SplitJSON {
	method := Method + "; a split pairs the seconds both groups had requests in"
	if gr.Anytime {
		method = AnytimeMethod + "; a split compares each newer group with the baseline's requests since that group's first"
	}
	out := SplitJSON{Method: method,
		SplitBy: gr.By, Groups: []GroupJSON{}, Regressed: gr.Breached(), Verdict: gr.Line(),
		Ungrouped: UngroupedJSON{Requests: gr.Ungrouped, Failed: gr.UngroupedFailed}}
	for _, c := range gr.Newer {
		out.Groups = append(out.Groups, GroupJSON{ComparisonJSON: c.JSON(), Group: c.Group.Name, Index: c.Group.Index, Requests: c.Group.Requests})
	}
	if gr.Baseline.Index > 0 {
		out.BaselineGroup = &BaselineGroupJSON{Group: gr.Baseline.Name, Index: 1, Requests: gr.Baseline.Requests, Named: gr.Named}
	}
	return out
}

// finite is v as JSON can hold it: an infinite end of an interval as the
// largest float, which DeltaText writes back as ∞.
func finite(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return unbounded
	case math.IsInf(v, -1):
		return -unbounded
	}
	return v
}
