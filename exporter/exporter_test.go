package exporter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/slo"
)

func TestExporter(t *testing.T) {
	objs, _ := slo.ParseAll([]string{"ttft_p99<=100ms", "error_rate<1%"})
	x := New(objs)
	ok := probe.Result{Status: 200, HasTTFT: true, TTFT: 50 * time.Millisecond, Chunks: []time.Duration{60 * time.Millisecond, 70 * time.Millisecond},
		E2E: 70 * time.Millisecond, OutputTokens: 3, InputTokens: 11, TTFB: time.Millisecond}
	x.Observe(load.Record{Result: ok, Good: true})
	x.Observe(load.Record{Result: ok})
	x.Observe(load.Record{Result: probe.Result{Class: probe.HTTP429}})
	s := load.Snapshot{InFlight: 5, Knobs: load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128}, Completed: 2, Failed: 1}
	s.Latency[load.TTFT] = load.Dist{Count: 2, P99: 50 * time.Millisecond}
	s.Run = load.Phase{Completed: 2, Failed: 1, Incomplete: 4, Pending: 5}
	x.Update(s, slo.FromWindow(s))

	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for _, want := range []string{
		`infertop_requests_total{class="ok"} 2`, `infertop_requests_total{class="429"} 1`, `infertop_requests_total{class="5xx"} 0`,
		`infertop_good_requests_total 1`, `infertop_ttft_seconds_count 2`, `infertop_itl_seconds_count 4`, `infertop_tpot_seconds_count 2`,
		`infertop_e2e_seconds_bucket{le="0.1"} 2`, `infertop_output_tokens_total 6`, `infertop_input_tokens_total 22`,
		`infertop_in_flight_requests 5`, `infertop_concurrency_target 8`, `infertop_prompt_tokens_target 256`,
		`infertop_slo_held{slo="ttft_p99<=100ms"} 1`, `infertop_slo_held{slo="error_rate<1%"} 0`, "go_goroutines",
		`infertop_requests_sent_total 12`, `infertop_requests_incomplete_total 4`,
		`infertop_window_latency_seconds{metric="ttft",quantile="0.99"} 0.05`, `infertop_window_latency_seconds{metric="e2e",quantile="0.5"} NaN`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if _, err := Listen("256.1.1.1:1"); err == nil {
		t.Error("a bad address was accepted")
	}
}

// TestGrafanaDashboard: every metric the dashboard in deploy/grafana
// queries is one the exporter serves.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana/infertop.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	objs, _ := slo.ParseAll([]string{"ttft_p99<=1s"})
	x := New(objs)
	x.Observe(load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: time.Millisecond, E2E: time.Millisecond}})
	x.Update(load.Snapshot{}, slo.Figures{})
	fams, err := x.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range fams {
		served[f.GetName()] = true
	}
	metric := regexp.MustCompile(`infertop_[a-z_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range metric.FindAllString(tg.Expr, -1) {
				n++
				if !served[m] && !served[strings.TrimSuffix(m, "_bucket")] {
					t.Errorf("panel %q queries %s, which the exporter does not serve", p.Title, m)
				}
			}
		}
	}
	if n < 7 {
		t.Fatalf("only %d metrics queried", n)
	}
}
