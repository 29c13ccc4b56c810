package promsource

import (
	"context"
	"fmt"
	"os"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// BenchmarkGet: one instant query's answer for 50 servers of the vLLM
// exposition recorded from the sim (the watch's 1 Hz case), decoded and
// rebuilt into families; the metadata is asked for once, before, and
// the answer's bytes are made once.
func BenchmarkGet(b *testing.B) {
	for _, n := range []int{50, 400} {
		b.Run(fmt.Sprint(n, " servers"), func(b *testing.B) {
			e, err := os.ReadFile("../telemetry/testdata/vllm-sim.txt")
			if err != nil {
				b.Fatal(err)
			}
			p := &prom{servers: map[string]map[string]*dto.MetricFamily{}, groups: map[string]string{}, keep: true}
			for i := range n {
				inst := fmt.Sprintf("10.0.%d.%d:8000", i/200, i%200)
				p.servers[inst], p.groups[inst] = parse(b, string(e)), []string{"stable", "canary"}[i%2]
			}
			s, err := New(Config{URL: serve(b, p), By: "version", Names: names(p.servers["10.0.0.0:8000"])})
			if err != nil {
				b.Fatal(err)
			}
			got, err := s.Get(context.Background())
			if err != nil || len(got) != n {
				b.Fatalf("%d servers: %v", len(got), err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := s.Get(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(p.series())/float64(b.N+1), "series/op")
		})
	}
}
