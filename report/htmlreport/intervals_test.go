package htmlreport

import (
	"strings"
	"testing"

	"github.com/infertop/infertop/compare"
)

// TestComparisonIntervals: the report says which intervals it shows, the
// confidence sequences' or the bootstrap's, as the comparison's table
// does.
func TestComparisonIntervals(t *testing.T) {
	for method, want := range map[string]string{
		compare.AnytimeMethod: "99% confidence sequences (95% over all 5), valid at every look",
		compare.Method:        "99% intervals (95% over all 5), 1000 resamples",
	} {
		c := compare.ComparisonJSON{Method: method, Confidence: 0.99, FamilyConfidence: 0.95, Resamples: 1000, Metrics: make([]compare.ResultJSON, 5)}
		if got := comparison(c, "h", [2]string{"a", "b"}, "canary").Intervals; !strings.HasPrefix(got, want) {
			t.Errorf("%.20s…: %q, want %q…", method, got, want)
		}
	}
}

// TestComparisonInvalidRate: the invalid rate's row is labelled as the
// table's, in percent and percentage points.
func TestComparisonInvalidRate(t *testing.T) {
	b, c, d := 0.0, 0.05, 0.05
	m := compare.ResultJSON{Name: "invalid_rate", Unit: "fraction", DeltaUnit: "rate", Baseline: &b, Canary: &c, Delta: &d,
		Interval: []float64{0.03, 0.08}, NBaseline: 1900, NCanary: 1900, Verdict: "canary worse"}
	v := comparison(compare.ComparisonJSON{Metrics: []compare.ResultJSON{m}}, "h", [2]string{"a", "b"}, "canary")
	if r := v.Rows[0]; r.Stat != "invalid rate" || r.Canary != "5.00%" || r.Delta != "+5.00pp" {
		t.Fatalf("row %+v", r)
	}
}
