package compare

import (
	"strings"
	"testing"
)

// TestGateTextSaysWhy: a gate whose point estimate is past its margin
// and still holds says why (the issue's "ttft_p99<+10%: held: +11%
// (+4.5%…+15%)" gave no hint): the interval reaches below the margin.
func TestGateTextSaysWhy(t *testing.T) {
	reg, err := ParseRegression("ttft_p99<+10%")
	if err != nil {
		t.Fatal(err)
	}
	r := Result{Stat: reg.Stat, Delta: 0.11, Lo: 0.045, Hi: 0.15, NBaseline: 500, NCanary: 500, Verdict: Worse}
	g := Gate{Regression: reg, Result: r}
	if s := g.String(); !strings.HasPrefix(s, "ttft_p99<+10%: held: ") || !strings.Contains(s, "above +10%, but not with confidence") {
		t.Fatalf("%q", s)
	}
	g.Result.Delta = 0.05
	if s := g.String(); strings.Contains(s, "not with confidence") {
		t.Fatalf("a point under the margin: %q", s)
	}
}
