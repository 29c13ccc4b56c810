package load

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/sim"
)

// TestResetCacheBetweenStages: with ResetPrefixCache, every stage of a
// walk after the first starts cold: its first request finds nothing of
// the shared prefix in the sim's cache, though the requests after it
// do, and the sim's own counter and the snapshots count a reset a stage.
// Without it, the first request of a stage finds the prefix cached.
func TestResetCacheBetweenStages(t *testing.T) {
	t.Parallel()
	for _, reset := range []bool{true, false} {
		t.Run(map[bool]string{true: "reset", false: "kept"}[reset], func(t *testing.T) {
			t.Parallel()
			p, _ := sim.Preset("fast")
			p.PrefixCacheBlocks = 4096
			var mu sync.Mutex
			first := map[int]Record{} // the earliest request of each phase
			hits := map[int]int{}     // each phase's requests that found some of the prompt cached
			r := startRig(t, p, Knobs{Concurrency: 1, PromptTokens: 128, OutputTokens: 2}, func(c *Config) {
				c.PrefixTokens = 64
				client := timedClient(t, c, p)
				c.Do, c.ResetPrefixCache, c.ResetCache = client.Do, reset, client.ResetPrefixCache
				c.OnResult = func(rec Record) {
					mu.Lock()
					defer mu.Unlock()
					if f, ok := first[rec.Phase]; !ok || rec.At < f.At {
						first[rec.Phase] = rec
					}
					if rec.Server.CachedTokens > 0 {
						hits[rec.Phase]++
					}
				}
			})
			stages, err := ParseStages("concurrency=1,duration=250ms;concurrency=1,duration=250ms;concurrency=1,duration=250ms")
			if err != nil {
				t.Fatal(err)
			}
			// Each stage as Walk begins it, held until it has requests
			// (not for its duration: on a busy machine a stage of 250 ms
			// once began none).
			for i, st := range stages {
				r.eng.beginStage(context.Background(), i, st)
				waitFor(t, r.eng, 30*time.Second, fmt.Sprintf("stage %d's requests", i+1), func(s Snapshot) bool {
					return len(s.Phases) == i+1 && s.Phases[i].Completed >= 3
				})
			}
			r.eng.Finish(EndDuration)
			s := waitFor(t, r.eng, 10*time.Second, "the end of the run", func(s Snapshot) bool { return s.Done && s.InFlight == 0 })
			r.stop()
			mu.Lock()
			defer mu.Unlock()
			if len(s.Phases) != 3 {
				t.Fatalf("%d phases", len(s.Phases))
			}
			for _, ph := range s.Phases[1:] {
				f, ok := first[ph.ID]
				if !ok || !f.Server.HasCached || hits[ph.ID] == 0 {
					t.Fatalf("phase %d: first %+v, %d hits", ph.ID, f.Server, hits[ph.ID])
				}
				if cold := f.Server.CachedTokens == 0; cold != reset {
					t.Errorf("phase %d's first request found %d tokens cached; reset %v", ph.ID, f.Server.CachedTokens, reset)
				}
			}
			want := map[bool]int64{true: 2, false: 0}[reset]
			if s.CacheResets.Done != want || s.CacheResets.Failed != 0 {
				t.Errorf("resets %+v, want %d", s.CacheResets, want)
			}
			rec := httptest.NewRecorder()
			r.sim.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			var line string
			for l := range strings.Lines(rec.Body.String()) {
				if strings.HasPrefix(l, "infertop_sim_prefix_cache_resets_total{") {
					line = strings.TrimSpace(l)
				}
			}
			if !strings.HasSuffix(line, fmt.Sprintf("} %d", want)) {
				t.Errorf("the sim's /metrics: %q, want %d resets", line, want)
			}
		})
	}
}
