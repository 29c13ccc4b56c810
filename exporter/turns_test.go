package exporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simtest"
	"github.com/infertop/infertop/slo"
)

// simRun runs the engine configured by cfg against the sim, each finished
// request observed by x, until n have finished; then x takes the last
// snapshot.
func simRun(t *testing.T, x *Exporter, cfg load.Config, n int64) load.Snapshot {
	t.Helper()
	p, _ := sim.Preset("fast")
	srv := simtest.Start(t, p)
	client, err := probe.New(probe.Config{URL: srv.ChatURL, Model: p.Model})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cfg.Do, cfg.OnResult, cfg.MaxRequests, cfg.Tick = client.Do, x.Observe, n, 20*time.Millisecond
	e, err := load.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		s := e.Latest()
		if s.TotalCompleted+s.TotalFailed >= n {
			x.Update(s, slo.FromWindow(s))
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests finished", s.TotalCompleted+s.TotalFailed, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scrape(t *testing.T, x *Exporter) map[string]float64 {
	t.Helper()
	fams, err := x.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%q}", l.GetName(), l.GetValue())
			}
			switch {
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestSessionSeries: a sessions run on the sim shows each turn's TTFT
// under its turn's label, 1..Turns and no other, and a whole session's
// time for each session that ran every turn, as the engine counted them.
func TestSessionSeries(t *testing.T) {
	x := New(nil)
	s := simRun(t, x, load.Config{Knobs: load.Knobs{Concurrency: 1, PromptTokens: 16, OutputTokens: 4}, Sessions: load.Sessions{Turns: 3}}, 9)
	m := scrape(t, x)
	for turn := 1; turn <= 3; turn++ {
		if got := m[fmt.Sprintf(`infertop_turn_ttft_seconds{turn="%d"}_count`, turn)]; got != 3 {
			t.Errorf("turn %d: %v TTFTs, want 3", turn, got)
		}
	}
	if _, ok := m[`infertop_turn_ttft_seconds{turn="4"}_count`]; ok {
		t.Error("a turn past the three configured")
	}
	if got := m["infertop_session_seconds_count"]; got != 3 || int64(got) != s.Sessions.Completed {
		t.Errorf("%v sessions timed, the engine counted %d", got, s.Sessions.Completed)
	}
	if _, ok := m["infertop_trace_behind_seconds"]; ok {
		t.Error("a replay's series without a replay")
	}
	// A record whose turn is past any a run has is not a label.
	x.Observe(load.Record{Result: probe.Result{HasTTFT: true, TTFT: time.Millisecond}, Turn: load.MaxTurns + 1})
	if n := len(scrape(t, x)); n != len(m) {
		t.Errorf("%d series after a turn past load.MaxTurns, %d before", n, len(m))
	}
}

// TestTraceSeries: a replay on the sim shows how far behind it is and
// has been, where it is and what it sent, as the engine's status says.
func TestTraceSeries(t *testing.T) {
	tr, err := load.LoadTrace("../load/testdata/trace/mooncake.jsonl", load.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x := New(nil)
	s := simRun(t, x, load.Config{Trace: tr}, int64(len(tr.Entries)))
	m := scrape(t, x)
	st := s.Trace
	for name, want := range map[string]float64{
		"infertop_trace_arrivals_total": float64(len(tr.Entries)), "infertop_trace_speed": 1,
		"infertop_trace_behind_max_seconds": st.MaxBehind.Seconds(), "infertop_trace_span_seconds": tr.Span.Seconds(),
		"infertop_trace_falling_behind": 0,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s %v (served %v), want %v", name, got, ok, want)
		}
	}
	if !st.On {
		t.Errorf("the engine's status: %+v", st)
	}
	for k := range m {
		if strings.HasPrefix(k, "infertop_turn_ttft_seconds{") {
			t.Errorf("a turn's series without sessions: %s", k)
		}
	}
}
