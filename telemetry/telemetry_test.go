package telemetry

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseServer(t *testing.T) {
	tests := []struct {
		file, kind       string
		running, waiting float64
		kv               float64
		hasKV            bool
		prompt, gen      float64
		ttft             bool
	}{
		{"vllm-sim.txt", "vllm", 0, 0, 0, true, 32, 24, true},
		{"llamacpp.txt", "llamacpp", 0, 0, 0, false, 80, 24, false},
		{"sglang.txt", "sglang", 12, 3, 0.42, true, 51200, 20480, true},
		{"tgi.txt", "tgi", 16, 4, 0, false, 420, 150, false},
	}
	for _, tt := range tests {
		s, ok, err := ParseServer(open(t, tt.file))
		if err != nil || !ok {
			t.Fatalf("%s: ok %v err %v", tt.file, ok, err)
		}
		if s.Engine != tt.kind || s.Running.V != tt.running || s.Waiting.V != tt.waiting || s.KVUsage.Has != tt.hasKV ||
			math.Abs(s.KVUsage.V-tt.kv) > 1e-9 || s.PromptTokens.V != tt.prompt || s.GenTokens.V != tt.gen || (s.TTFT != nil) != tt.ttft {
			t.Errorf("%s: %+v", tt.file, s)
		}
	}
	// A page from an engine it does not know shows nothing.
	if _, ok, err := ParseServer(open(t, "dcgm.txt")); ok || err != nil {
		t.Errorf("a DCGM page read as a server: %v %v", ok, err)
	}
	// Lines of no family read are dropped unread: garbage is no engine.
	if _, ok, err := ParseServer(strings.NewReader("not a { metrics page")); ok || err != nil {
		t.Errorf("garbage read as a server: %v %v", ok, err)
	}
	if _, _, err := ParseServer(strings.NewReader("vllm:num_requests_running{ garbage\n")); err == nil {
		t.Error("a garbled line of a family read parsed")
	}
}

func TestQuantile(t *testing.T) {
	s, _, _ := ParseServer(open(t, "sglang.txt"))
	// 10 under 0.1 s, 80 in (0.1, 0.5], 10 in (0.5, 1]: the median is at
	// rank 50, 40 of 80 into the second bucket: 0.1 + 0.4×0.5 = 0.3.
	if q, ok := Quantile(s.TTFT, nil, 0.5); !ok || math.Abs(q-0.3) > 1e-9 {
		t.Fatalf("p50 %v %v", q, ok)
	}
	prev := &Histogram{Bounds: s.TTFT.Bounds, Counts: []float64{10, 10, 10, 10}}
	// Since prev: 0, 80, 90, 90 → p50 at rank 45, in (0.1, 0.5]: 0.1+0.4×45/80.
	if q, _ := Quantile(s.TTFT, prev, 0.5); math.Abs(q-(0.1+0.4*45.0/80)) > 1e-9 {
		t.Fatalf("windowed p50 %v", q)
	}
	if _, ok := Quantile(s.TTFT, s.TTFT, 0.5); ok {
		t.Fatal("a quantile of nothing")
	}
}

func TestParseDCGMAndNvidiaSMI(t *testing.T) {
	gpus, err := ParseDCGM(open(t, "dcgm.txt"))
	if err != nil || len(gpus) != 2 {
		t.Fatalf("%v %v", gpus, err)
	}
	g := gpus[0]
	if g.Index != "0" || g.PowerW != 512.25 || !g.HasEnergy || g.EnergyJ != 98765.432 || g.UtilPct != 97 || g.MemUsedMiB != 120000 || g.TempC != 61 || g.SMClockMHz != 1980 {
		t.Fatalf("gpu 0 %+v", g)
	}
	if _, err := ParseDCGM(open(t, "vllm-sim.txt")); err == nil {
		t.Fatal("a vLLM page read as DCGM")
	}
	line, err := ParseNvidiaSMILine("0, 312.45, 123456789, 87, 40960, 55, 1980")
	if err != nil || line.PowerW != 312.45 || line.EnergyJ != 123456.789 || !line.HasEnergy || line.SMClockMHz != 1980 {
		t.Fatalf("%+v %v", line, err)
	}
	line, err = ParseNvidiaSMILine("1, 70.1, [N/A], 0, 1, 30, 345")
	if err != nil || line.HasEnergy {
		t.Fatalf("[N/A] energy: %+v %v", line, err)
	}
	if _, err := ParseNvidiaSMILine("0, 1, 2"); err == nil {
		t.Fatal("a short line parsed")
	}
}

// TestEnergy against a hand-computed case: GPU 0 has a counter that is
// reset between the readings, GPU 1 has only power.
func TestEnergy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Sample{At: t0, GPUs: []GPU{{Index: "0", PowerW: 400, EnergyJ: 5000, HasEnergy: true}, {Index: "1", PowerW: 200}}}
	b := Sample{At: t0.Add(2 * time.Second), GPUs: []GPU{{Index: "0", PowerW: 420, EnergyJ: 5810, HasEnergy: true}, {Index: "1", PowerW: 300}}}
	j, src := Energy(a, b)
	// GPU 0: 5810−5000 = 810 J; GPU 1: (200+300)/2 × 2 s = 500 J.
	if j != 1310 || src != "energy counter and power × time" {
		t.Fatalf("%v J from %q", j, src)
	}
	c := Sample{At: t0.Add(4 * time.Second), GPUs: []GPU{{Index: "0", PowerW: 410, EnergyJ: 700, HasEnergy: true}}}
	if j, src := Energy(b, c); j != 700 || src != "energy counter" { // reset: 700 J since
		t.Fatalf("after a reset: %v J from %q", j, src)
	}
	if got := b.Power(); got != 720 {
		t.Fatalf("power %v", got)
	}
}
