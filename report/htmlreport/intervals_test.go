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
