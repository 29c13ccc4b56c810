package capflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFloorRefused: a floor on a latency or the error rate
// ('ttft_p99>=500ms') is refused where it is read: more load only raises
// them, and the search burnt 50 s of steps down to the lowest before it
// failed. A limit to stay under, and a throughput floor, are taken.
func TestFloorRefused(t *testing.T) {
	for _, c := range []struct {
		expr string
		ok   bool
	}{{"ttft_p99>=500ms", false}, {"e2el_mean>1s", false}, {"error_rate>=1%", false}, {"ttft_p99<=500ms", true}, {"error_rate<1%", true}, {"output_throughput>=100", true}} {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		f := Add(fs)
		if err := fs.Parse([]string{"--find-max", c.expr}); err != nil {
			t.Fatal(err)
		}
		_, err := f.Objectives(false)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "--find-max "+c.expr) {
			t.Errorf("%s: %v", c.expr, err)
		}
	}
}
