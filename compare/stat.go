package compare

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/slo"
)

// Stat is one statistic compared between the sides: a percentile or the
// mean of a latency (per request, from the intended send time in the open
// loop), the error rate, or the invalid rate.
type Stat struct {
	// Name is how the command line and the reports spell it: ttft_p99,
	// e2el_mean, error_rate, invalid_rate.
	Name string
	// Metric is the latency (TTFT, TPOT, ITL, E2E or TTFB); Q the
	// percentile as a fraction (0.99), 0 for the mean.
	Metric load.Metric
	Q      float64
	// ErrorRate marks a rate of 0/1 outcomes, judged as the error rate
	// is: the share of requests that failed, or with Invalid the share
	// of judged answers that were invalid; Metric and Q are then unused.
	ErrorRate bool
	// Invalid (with ErrorRate) is the invalid rate: of the answers
	// judged (--response-format, --tools), the share that broke the
	// format or the tools' schema. A request not judged does not count.
	Invalid bool
}

// Label is the statistic as a table shows it: "TTFT p99", "error rate",
// "invalid rate".
func (s Stat) Label() string {
	if s.Invalid {
		return "invalid rate"
	}
	if s.ErrorRate {
		return "error rate"
	}
	_, stat, _ := strings.Cut(s.Name, "_")
	return s.Metric.String() + " " + stat
}

// minSamples is the fewest samples a side needs before the statistic is
// judged: 30 for a mean or a median, and enough that about two samples lie
// beyond a tail percentile (200 for p99), so an interval is never drawn
// from a tail made of one request.
func (s Stat) minSamples() int {
	if s.ErrorRate || s.Q == 0 {
		return 30
	}
	tail := min(s.Q, 1-s.Q)
	return max(30, int(2/tail+0.5))
}

// ParseStat reads a statistic's name: METRIC_pNN (p50, p99, p99.9),
// METRIC_median, METRIC_mean, error_rate or invalid_rate.
func ParseStat(name string) (Stat, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	switch name {
	case "error_rate":
		return Stat{Name: name, ErrorRate: true}, nil
	case "invalid_rate":
		return InvalidRate(), nil
	}
	// Compiled here, not in a package variable: parsing is rare (flags).
	m := regexp.MustCompile(`^(ttft|tpot|itl|e2el|e2e|ttfb)_(p\d+(?:\.\d+)?|median|mean)$`).FindStringSubmatch(name)
	if m == nil {
		return Stat{}, fmt.Errorf("unknown statistic %q: want ttft, tpot, itl, e2el or ttfb with _pNN or _mean, error_rate or invalid_rate", name)
	}
	metric := m[1]
	if metric == "e2e" {
		metric = "e2el"
	}
	s := Stat{Name: metric + "_" + m[2], Metric: metricOf(metric)}
	switch m[2] {
	case "mean":
	case "median":
		s.Q, s.Name = 0.5, metric+"_p50"
	default:
		p, err := strconv.ParseFloat(m[2][1:], 64)
		if err != nil || p <= 0 || p >= 100 {
			return Stat{}, fmt.Errorf("unknown statistic %q: a percentile is within p1..p99.9", name)
		}
		s.Q = p / 100
	}
	return s, nil
}

// DefaultStats are what a comparison judges when no --regression names
// more: the typical and the tail time to the first token, the decode speed,
// the tail of the whole request, and the errors.
func DefaultStats() []Stat {
	var out []Stat
	for _, n := range []string{"ttft_p50", "ttft_p99", "tpot_p50", "e2el_p99", "error_rate"} {
		s, _ := ParseStat(n)
		out = append(out, s)
	}
	return out
}

// InvalidRate is the invalid_rate statistic: the share of judged answers
// that were invalid.
func InvalidRate() Stat { return Stat{Name: "invalid_rate", ErrorRate: true, Invalid: true} }

// Regression is one allowed worsening of the canary against the baseline:
// 'ttft_p99<+10%' (relative) or 'error_rate<+0.5pp' (percentage points,
// as for invalid_rate).
type Regression struct {
	// Expr is the text as given.
	Expr string
	Stat Stat
	// Tolerance is the allowed difference: a fraction of the baseline for
	// latencies (0.10), a difference of rates for error_rate and
	// invalid_rate (0.005).
	Tolerance float64
}

// ParseRegression reads 'STAT<+N%' for a latency, 'error_rate<+Npp' for the
// error rate and 'invalid_rate<+Npp' for the invalid rate (< and <= mean the same: the canary fails when its
// difference is above the tolerance with confidence).
func ParseRegression(expr string) (Regression, error) {
	m := regexp.MustCompile(`^\s*([a-z0-9_.]+)\s*(<=|<)\s*([+-]?[0-9.]+)\s*(%|pp)\s*$`).FindStringSubmatch(strings.ToLower(expr))
	if m == nil {
		return Regression{}, fmt.Errorf("bad regression %q: want STAT<+N%% (e.g. ttft_p99<+10%%) or error_rate<+Npp (invalid_rate<+Npp)", expr)
	}
	s, err := ParseStat(m[1])
	if err != nil {
		return Regression{}, fmt.Errorf("bad regression %q: %w", expr, err)
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Regression{}, fmt.Errorf("bad regression %q: %w", expr, err)
	}
	switch {
	case s.ErrorRate && m[4] != "pp":
		return Regression{}, fmt.Errorf("bad regression %q: a rate's difference is in percentage points: %s<+0.5pp", expr, s.Name)
	case !s.ErrorRate && m[4] != "%":
		return Regression{}, fmt.Errorf("bad regression %q: a latency's difference is relative: %s<+10%%", expr, s.Name)
	}
	return Regression{Expr: strings.TrimSpace(expr), Stat: s, Tolerance: v / 100}, nil
}

// ParseRegressions parses every expression.
func ParseRegressions(exprs []string) ([]Regression, error) {
	var out []Regression
	for _, e := range exprs {
		r, err := ParseRegression(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// metricOf is the engine's metric of a name the statistic's pattern took.
func metricOf(name string) load.Metric {
	m, _ := slo.LatencyMetric(name)
	return m
}
