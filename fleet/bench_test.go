package fleet

import (
	"fmt"
	"testing"

	"github.com/infertop/infertop/report"
	"github.com/infertop/infertop/report/merge"
)

// BenchmarkMerge is the merge of n agents' results the follower makes
// every --agents-result-every: each a run of 10,000 requests.
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{4, 64} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			v := View{Source: "bench", Of: n}
			for i := range n {
				raw := result(b, 10000, int64(5+i%50), 0)
				in, err := merge.Decode(fmt.Sprint("agent ", i), raw)
				if err != nil {
					b.Fatal(err)
				}
				v.Agents = append(v.Agents, Agent{Addr: fmt.Sprint("10.0.0.", i, ":7070"), Status: report.AgentDone, Final: true, Result: &in, Raw: raw})
			}
			b.ResetTimer()
			for range b.N {
				if _, err := Merge(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
