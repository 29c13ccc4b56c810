package watch

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infertop/infertop/promsource"
	"github.com/infertop/infertop/sim/simfleet"
	"github.com/infertop/infertop/tools/promtest"
)

// realPrometheus runs Debian's Prometheus scraping the fleet's servers
// (promtest's 200 ms), each with its group as a target label (as
// Kubernetes' service discovery relabels a pod's label).
func realPrometheus(t *testing.T, f *simfleet.Fleet) string {
	t.Helper()
	var conf strings.Builder
	conf.WriteString("  - job_name: sims\n    static_configs:\n")
	for _, s := range f.Servers {
		u, err := url.Parse(s.MetricsURL)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&conf, "      - targets: [%q]\n        labels: {group: %q, pod: %q}\n", u.Host, s.Group, s.Name)
	}
	return promtest.Start(t, conf.String())
}

// TestThroughPrometheus: four sims in two groups, watched directly and
// through a real Prometheus scraping them with the group as a label,
// give the same groups, servers, rates and bucket bounds; a canary 1.3
// times slower is called regressed in both modes within 45 s, and an
// identical one in neither. A stage of its own (make test-watch): it
// runs a Prometheus and two fleets for 45 s each.
func TestThroughPrometheus(t *testing.T) {
	if os.Getenv("INFERTOP_WATCH_PROMETHEUS") != "1" {
		t.Skip("a real Prometheus, in make test-watch (INFERTOP_WATCH_PROMETHEUS=1)")
	}
	for _, c := range []struct {
		slowdown float64
		want     bool // regressed
	}{{1.3, true}, {1, false}} {
		t.Run(fmt.Sprintf("slowdown %g", c.slowdown), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			f, err := simfleet.Start(ctx, simfleet.Config{Slowdown: c.slowdown, Rate: 10, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			prom := realPrometheus(t, f)
			var targets []Target
			for _, s := range f.Servers {
				targets = append(targets, Target{Name: s.Name, URL: s.MetricsURL, Group: s.Group})
			}
			direct := NewScrape("direct", func(context.Context) ([]Target, error) { return targets, nil }, nil, 3*time.Second)
			through, err := NewPrometheus(promsource.Config{URL: prom, Match: `{job="sims"}`, By: "group", Instance: "pod"})
			if err != nil {
				t.Fatal(err)
			}
			cfg := func(src Source) Config {
				return Config{Source: src, Baseline: simfleet.BaselineGroup, Canary: simfleet.CanaryGroup}
			}
			var (
				mu    sync.Mutex
				last  [2]Snapshot
				when  [2]float64
				wg    sync.WaitGroup
				limit = 45 * time.Second
			)
			for i, src := range []Source{direct, through} {
				w, err := New(cfg(src))
				if err != nil {
					t.Fatal(err)
				}
				wctx, stop := context.WithTimeout(ctx, limit)
				defer stop()
				wg.Add(2)
				go func() { defer wg.Done(); w.Run(wctx) }()
				go func() {
					defer wg.Done()
					snaps, unsubscribe := w.Subscribe()
					defer unsubscribe()
					for s := range snaps {
						mu.Lock()
						last[i] = s
						if s.Verdict.State == Regressed && when[i] == 0 {
							when[i] = s.Elapsed
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for i, mode := range []string{"direct", "through Prometheus"} {
				s := last[i]
				t.Logf("%s: %s (regressed after %.0f s)", mode, s.Verdict.Line, when[i])
				if got := s.Verdict.State == Regressed; got != c.want {
					t.Errorf("%s: verdict %s, want regressed %v", mode, s.Verdict.State, c.want)
				}
				if len(s.Groups) != 2 || s.Groups[0].Name != simfleet.BaselineGroup || s.Groups[0].Servers != 3 || s.Groups[1].Servers != 1 {
					t.Errorf("%s: groups %+v", mode, s.Groups)
				}
				for _, sv := range s.Servers {
					if sv.State != StateUp {
						t.Errorf("%s: %s is %s: %s", mode, sv.Name, sv.State, sv.Err)
					}
				}
			}
			// The same rates and buckets, read two ways: Prometheus holds
			// a scrape up to 200 ms old, so the rates agree within a few
			// per cent and the p50's bucket is the same or the next.
			d, p := last[0], last[1]
			if len(d.Groups) == 2 && len(p.Groups) == 2 {
				for g := range 2 {
					dr, pr := d.Groups[g].ReqPerSec, p.Groups[g].ReqPerSec
					t.Logf("%s: %.2f req/s direct, %.2f through Prometheus; TTFT p50 %s and %s", d.Groups[g].Name, dr, pr, FormatBound(d.Groups[g].TTFT.P50), FormatBound(p.Groups[g].TTFT.P50))
					if dr <= 0 || pr < 0.85*dr || pr > 1.15*dr {
						t.Errorf("%s: %.2f req/s direct, %.2f through Prometheus", d.Groups[g].Name, dr, pr)
					}
					db, pb := d.Groups[g].TTFT.P50, p.Groups[g].TTFT.P50
					if !db.OK || !pb.OK || db.Hi == nil || pb.Hi == nil || *db.Hi / *pb.Hi > 1.11 || *pb.Hi / *db.Hi > 1.11 {
						t.Errorf("%s: TTFT p50 %s direct, %s through Prometheus", d.Groups[g].Name, FormatBound(db), FormatBound(pb))
					}
				}
			}
		})
	}
}
