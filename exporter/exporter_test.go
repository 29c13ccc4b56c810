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
	ok := probe.Result{Status: 200, HasTTFT: true, TTFT: 50 * time.Millisecond,
		E2E: 70 * time.Millisecond, OutputTokens: 3, InputTokens: 11, TTFB: time.Millisecond}
	// Two streams as they arrive: a first token, then two gaps and the
	// tokens of three messages; the second's server counts one token less
	// than it sent messages, taken back from the tokens that come next.
	for range 2 {
		x.Progress(load.Progress{TTFT: ok.TTFT, HasTTFT: true, Tokens: 1})
		x.Progress(load.Progress{ITLs: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, Tokens: 2})
	}
	x.Progress(load.Progress{Tokens: -1}) // the second's usage: 2 tokens for 3 messages
	x.Progress(load.Progress{Tokens: 1})  // paid back: the counter stands still
	x.Observe(load.Record{Result: ok, Good: true})
	x.Observe(load.Record{Result: ok})
	x.Observe(load.Record{Result: probe.Result{Class: probe.HTTP429}})
	s := load.Snapshot{InFlight: 5, Knobs: load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 128}, Completed: 2, Failed: 1}
	s.Latency[load.TTFT] = load.Dist{Count: 2, P99: 50 * time.Millisecond}
	s.SentEver, s.IncompleteEver = 12, 4
	s.Run = load.Phase{Completed: 2, Failed: 1, Incomplete: 4, Pending: 5}
	x.Update(s, slo.FromWindow(s))
	s.Run = load.Phase{Pending: 1} // a reset: the run's figures start again, the counters go on
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

// TestGroupSeries: a split's requests are counted and timed by their
// group, the first probe.MaxGroups named (sanitised: the server's text), the
// rest as "other"; a request without a group adds no group series.
func TestGroupSeries(t *testing.T) {
	x := New(nil)
	ok := func(g string, ttft time.Duration) load.Record {
		return load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: ttft, E2E: 2 * ttft, OutputTokens: 2, Group: g}}
	}
	x.Observe(ok("old", 10*time.Millisecond))
	x.Observe(ok("old", 10*time.Millisecond))
	x.Observe(ok("new\x1b]0;pwned\a", 30*time.Millisecond))
	x.Observe(load.Record{Result: probe.Result{Class: probe.HTTP5xx, Status: 500, Group: "old"}})
	for _, g := range []string{"c", "d", "e", "f", "g"} {
		x.Observe(ok(g, time.Millisecond))
	}
	x.Observe(ok("", time.Millisecond))
	fams, err := x.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	var labels []string
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			lv := map[string]string{}
			for _, l := range m.GetLabel() {
				lv[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "infertop_group_requests_total":
				counts[lv["group"]+" "+lv["class"]] = m.GetCounter().GetValue()
			case "infertop_group_ttft_seconds":
				labels = append(labels, lv["group"])
				counts[lv["group"]+" ttft"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if counts["old ok"] != 2 || counts["old 5xx"] != 1 || counts["old ttft"] != 2 || counts["other ok"] != 3 || counts["c ok"] != 1 {
		t.Errorf("group counts %v", counts)
	}
	if len(labels) != probe.MaxGroups+1 {
		t.Errorf("groups %q: want %d named and other", labels, probe.MaxGroups)
	}
	for _, l := range labels {
		if strings.ContainsAny(l, "\x1b\a") {
			t.Errorf("a group label carries the server's control bytes: %q", l)
		}
	}
	if _, ok := counts[" ok"]; ok {
		t.Error("a request without a group made a group series")
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
	// A split's request: the group series show only once one is seen.
	x.Observe(load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: time.Millisecond, E2E: time.Millisecond, Group: "g"}})
	// A session's turn and a replay's snapshot: their series show only
	// in such runs.
	x.Observe(load.Record{Result: probe.Result{Status: 200, HasTTFT: true, TTFT: time.Millisecond, E2E: time.Millisecond}, Turn: 1})
	x.Update(load.Snapshot{Trace: load.TraceStatus{On: true, Speed: 1}}, slo.Figures{})
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

// TestArrivalSeries: the open loop's arrivals, its backlog and the
// arrivals dropped from it unsent are series of their own, counters that
// only go up (a reset sets the snapshot's figures back, not them).
func TestArrivalSeries(t *testing.T) {
	x := New(nil)
	s := load.Snapshot{Backlog: 423, ScheduledEver: 743, SentEver: 320}
	x.Update(s, slo.FromWindow(s))
	got := scrape(t, x)
	if got["infertop_arrivals_total"] != 743 || got["infertop_backlog_requests"] != 423 || got["infertop_arrivals_dropped_total"] != 0 {
		t.Fatalf("while it runs: %v", got)
	}
	s = load.Snapshot{ScheduledEver: 750, DroppedEver: 523, SentEver: 227}
	x.Update(s, slo.FromWindow(s))
	s.ScheduledEver, s.DroppedEver = 0, 0 // a stale snapshot: the counters stay
	x.Update(s, slo.FromWindow(s))
	got = scrape(t, x)
	if got["infertop_arrivals_total"] != 750 || got["infertop_backlog_requests"] != 0 || got["infertop_arrivals_dropped_total"] != 523 {
		t.Fatalf("at the end: %v", got)
	}
}
