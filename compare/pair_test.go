package compare

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/runner"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
)

// quick is the fast preset with a small, jittered model cost, so that
// latency is the model's and a slower canary can be made by scaling it.
func quick(t *testing.T, seed uint64) sim.Params {
	t.Helper()
	p, err := sim.Preset("fast")
	if err != nil {
		t.Fatal(err)
	}
	p.StepBase, p.StepPerSeq, p.PrefillRate, p.Jitter, p.Seed = 2*time.Millisecond, 100*time.Microsecond, 50000, 0.05, seed
	return p
}

// slower scales every cost of p by f.
func slower(p sim.Params, f float64) sim.Params {
	p.StepBase = time.Duration(float64(p.StepBase) * f)
	p.StepPerSeq = time.Duration(float64(p.StepPerSeq) * f)
	p.StepPerKTok = time.Duration(float64(p.StepPerKTok) * f)
	if p.PrefillRate > 0 {
		p.PrefillRate /= f
	}
	return p
}

func startPair(t *testing.T, base, canary sim.Params, lc load.Config, opt Options) *Pair {
	t.Helper()
	b, c := simtest.Start(t, base), simtest.Start(t, canary)
	cfg := Config{Baseline: runner.Config{URL: b.URL, API: probe.OpenAIChat, Load: lc,
		Telemetry: runner.Telemetry{ServerMetrics: runner.ServerMetricsOff}}, CanaryURL: c.URL, Options: opt, Every: 200 * time.Millisecond}
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// waitVerdict polls the live comparison until stop says so or within
// passes; it returns the last comparison and when it was taken.
func waitVerdict(p *Pair, within time.Duration, stop func(Comparison) bool) (Comparison, time.Duration) {
	start := time.Now()
	var last Comparison
	for time.Since(start) < within {
		time.Sleep(100 * time.Millisecond)
		if c, ok := p.Comparison(); ok {
			last = c
			if stop(c) {
				break
			}
		}
	}
	return last, time.Since(start)
}

func ttftP99Worse(c Comparison) bool {
	for _, r := range c.Results {
		if r.Stat.Name == "ttft_p99" && r.Verdict == Worse {
			return true
		}
	}
	return false
}

// TestPairIdenticalSims: two sims with the same parameters give no
// regression verdict, and the same knobs reach both. The verdicts are the
// slow stage's (make test-slow): under -race, with both sims and both
// engines on two busy cores, one side is systematically slower than the
// other by 10-16 % at TTFT p50 (seen), which the bootstrap rightly calls;
// the suite keeps the knobs' fan-out and the synthetic 100-run property.
func TestPairIdenticalSims(t *testing.T) {
	fps := 0
	seeds, hold := uint64(3), 11*time.Second
	slow := os.Getenv("INFERTOP_SLOW") != ""
	if !slow {
		seeds, hold = 1, 2*time.Second
	}
	for seed := range seeds {
		p := startPair(t, quick(t, seed+1), quick(t, seed+1),
			load.Config{Knobs: load.Knobs{Concurrency: 8, PromptTokens: 64, OutputTokens: 16}, Seed: seed + 1}, Options{})
		time.Sleep(hold)
		c := p.Compare(2000)
		t.Logf("seed %d: %s", seed, c.Line())
		if slow && worse(c) {
			fps++
		}
		if seed == 0 { // a knob moves both
			k := p.Update(func(k *load.Knobs) { k.Concurrency = 4 })
			if got := p.Runner(Canary).Engine().Knobs(); got != k {
				t.Errorf("canary's knobs %+v, baseline's %+v", got, k)
			}
		}
		p.Stop()
	}
	if fps > 0 {
		t.Errorf("%d of 3 identical pairs called worse", fps)
	}
}

// TestPairDetectsSlowCanary: a canary whose every cost is 1.2× is called
// slower within 60 s (the fast preset with a model cost); whether TTFT p99
// itself was judged by then is logged (on an idle machine: in about 10 s).
func TestPairDetectsSlowCanary(t *testing.T) {
	p := startPair(t, quick(t, 1), slower(quick(t, 1), 1.2),
		load.Config{Knobs: load.Knobs{Concurrency: 8, PromptTokens: 256, OutputTokens: 16}, Seed: 1}, Options{})
	c, took := waitVerdict(p, 60*time.Second, worse)
	t.Logf("after %v (TTFT p99 judged worse: %v): %s", took.Round(100*time.Millisecond), ttftP99Worse(c), c.Line())
	if !strings.HasPrefix(c.Line(), "canary slower") {
		t.Fatalf("not called in 60 s: %s", c.Line())
	}
}

// TestPairDefaultSim: at the default sim's default load (concurrency 8,
// prompt 256, output 128), a canary 20 % slower is called slower at TTFT
// p99 within 60 s: the verdict says slower (TTFT p99's own verdict logged).
func TestPairDefaultSim(t *testing.T) {
	if testing.Short() || os.Getenv("INFERTOP_SLOW") == "" {
		t.Skip("a minute of the default sim: the slow stage (make test-slow)")
	}
	d, _ := sim.Preset("default")
	p := startPair(t, d, slower(d, 1.2), load.Config{Knobs: load.Knobs{Concurrency: load.DefaultConcurrency,
		PromptTokens: load.DefaultPromptTokens, OutputTokens: load.DefaultOutputTokens}, Seed: 1}, Options{})
	c, took := waitVerdict(p, 60*time.Second, worse)
	t.Logf("after %v (TTFT p99 judged worse: %v): %s", took.Round(100*time.Millisecond), ttftP99Worse(c), c.Line())
	if !strings.HasPrefix(c.Line(), "canary slower") {
		t.Fatalf("not called in 60 s: %s", c.Line())
	}
}

// TestPairExporterTargets: one address serves both sides' series,
// labelled by target.
func TestPairExporterTargets(t *testing.T) {
	b, c := simtest.Start(t, quick(t, 1)), simtest.Start(t, quick(t, 1))
	cfg := Config{Baseline: runner.Config{URL: b.URL, API: probe.OpenAIChat, MetricsAddr: "127.0.0.1:0",
		Load:      load.Config{Knobs: load.Knobs{Concurrency: 2, PromptTokens: 8, OutputTokens: 4}, Tick: 20 * time.Millisecond},
		Telemetry: runner.Telemetry{ServerMetrics: runner.ServerMetricsOff}}, CanaryURL: c.URL}
	// The address is chosen by the pair: find it by listening first.
	ln, err := (&net0{}).listen()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Baseline.MetricsAddr = ln
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	time.Sleep(500 * time.Millisecond)
	resp, err := http.Get("http://" + ln + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`infertop_requests_total{class="ok",target="baseline"}`, `infertop_requests_total{class="ok",target="canary"}`, "go_goroutines "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in\n%.2000s", want, body)
		}
	}
}
