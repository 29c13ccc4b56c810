package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/tools/promtest"
)

// promServer runs a real Prometheus (Debian's package) scraping target
// every 200 ms, with native histograms on; the test skips without one.
func promServer(t *testing.T, target string) string {
	t.Helper()
	return promtest.Start(t, fmt.Sprintf("  - job_name: infertop\n    static_configs:\n      - targets: [%q]\n", target), "--enable-feature=native-histograms")
}

// promQuery is the value of a PromQL expression with one result, or false.
func promQuery(t *testing.T, base, expr string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// TestPrometheusReadsTheDashboardsFigures: a real Prometheus scraping the
// exporter reads the window's quantiles exactly as the snapshot has them,
// the request counters add up to the requests sent, and the native
// histogram's p99 lands near the exact one.
func TestPrometheusReadsTheDashboardsFigures(t *testing.T) {
	cfg := simConfig(t)
	cfg.Load.Knobs.Concurrency = 8
	cfg.Load.MaxRequests = 300
	cfg.MetricsAddr = "127.0.0.1:0"
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	prom := promServer(t, r.MetricsAddr())
	s := waitSnap(t, r, 60*time.Second, "the end", func(s load.Snapshot) bool { return s.Done })
	want := s.Latency[load.TTFT].P99.Seconds()
	q := `infertop_window_latency_seconds{metric="ttft",quantile="0.99"}`
	var got float64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// A scrape after the end: every request counted, the window still.
		sent, ok1 := promQuery(t, prom, `infertop_requests_sent_total`)
		v, ok2 := promQuery(t, prom, q)
		sum, ok3 := promQuery(t, prom, `sum(infertop_requests_total) + sum(infertop_requests_incomplete_total)`)
		if ok1 && ok2 && ok3 && sent == 300 && sum == 300 && math.Abs(v-want) < 1e-9 {
			got = v
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, the snapshot's %v; sent %v, finished + incomplete %v", q, v, want, sent, sum)
		}
	}
	native, ok := promQuery(t, prom, `histogram_quantile(0.99, infertop_ttft_seconds)`)
	exact := s.Run.Latency[load.TTFT].P99.Seconds()
	if !ok || math.Abs(native-exact)/exact > 0.1 {
		t.Errorf("native histogram p99 %v, exact %v", native, exact)
	}
	t.Logf("TTFT p99: snapshot %.6fs, Prometheus gauge %.6fs, native histogram_quantile %.6fs", want, got, native)
}
