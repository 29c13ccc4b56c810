package telemetry

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// TestPerfOffered: TensorRT-LLM's /perf_metrics read as the run goes, the
// first read's entries (from before the run) left out, the rest in the
// run's figures, the window's and the OnPerf callback's.
func TestPerfOffered(t *testing.T) {
	fixture, err := os.ReadFile("../probe/testdata/tensorrt-llm/perf_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != probe.PerfMetricsPath {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Write(fixture)
	})
	var seen int
	s := NewScraper(Config{PerfURL: PerfURLFor("http://endpoint/v1/chat/completions"), Every: time.Second, Client: inProcess(h),
		OnPerf: func(probe.ServerPerf) { seen++ }})
	ctx := context.Background()
	now := time.Now()
	s.scrapePerf(ctx, now) // before the run
	if run, ok := s.PerfRun(); !ok || !run.Offered || run.Before != 3 || run.Entries != 0 {
		t.Fatalf("after the first read: %+v (%v), want 3 before, none in the run", run, ok)
	}
	s.scrapePerf(ctx, now.Add(time.Second))
	s.FinalPerf(ctx)
	run, _ := s.PerfRun()
	if run.Entries != 6 || seen != 6 || hits.Load() != 3 {
		t.Fatalf("%d entries, %d seen, %d reads; want 6, 6, 3", run.Entries, seen, hits.Load())
	}
	if q := run.Parts[PerfQueue]; q.Count != 6 || q.P50 < 6*time.Millisecond || q.P50 > 7*time.Millisecond {
		t.Errorf("queue %+v, want 6 entries, p50 about 6.4 ms", q)
	}
	if g := run.Parts[PerfGeneration]; g.Count != 6 || g.Max < 638*time.Millisecond || g.Max > 640*time.Millisecond {
		t.Errorf("generation %+v, want a max of 638.6 ms", g)
	}
	if run.ReusedBlocks != 16 || run.MissedBlocks != 30 || run.SpecAccepted != 144 || run.SpecDrafted != 240 {
		t.Errorf("counts %+v, want 16 reused, 30 missed blocks, 144 of 240 drafts", run.PerfCounts)
	}
	v := s.View(time.Minute)
	if v.Perf == nil || v.Perf.Entries != 6 || v.Perf.Parts[PerfTTFT].N != 6 || v.Perf.Parts[PerfTTFT].P99 < 48*time.Millisecond {
		t.Fatalf("window's view %+v, want 6 entries, their TTFTs", v.Perf)
	}
}

// TestPerfNotOffered: a server without /perf_metrics (vLLM: 404, or a
// page that is no JSON list) is asked once, then left alone; the run
// says why.
func TestPerfNotOffered(t *testing.T) {
	for _, c := range []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"404", http.NotFound, "HTTP 404"},
		{"no list", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"detail":"Not Found"}`)) }, "not a JSON list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hits atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); c.h(w, r) })
			s := NewScraper(Config{PerfURL: "http://endpoint/perf_metrics", Every: time.Second, Client: inProcess(h)})
			now := time.Now()
			for i := range 3 {
				s.scrapePerf(context.Background(), now.Add(time.Duration(i)*time.Hour))
			}
			s.FinalPerf(context.Background())
			run, ok := s.PerfRun()
			if !ok || run.Offered || hits.Load() != 1 {
				t.Fatalf("%+v (%v) after %d reads, want not offered, asked once", run, ok, hits.Load())
			}
			if !strings.Contains(run.Err, c.want) {
				t.Errorf("err %q, want it to say %q", run.Err, c.want)
			}
			if v := s.View(time.Minute); v.Perf != nil {
				t.Errorf("view %+v, want none", v.Perf)
			}
		})
	}
}

// TestPerfRetried: a first read that failed for a while (a 503, the
// server starting) is tried again, backing off, and the list it then
// answers is read: only an answer that says there is none drops it.
func TestPerfRetried(t *testing.T) {
	var hits atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`[]`))
	})
	s := NewScraper(Config{PerfURL: "http://endpoint/perf_metrics", Every: time.Second, Client: inProcess(h)})
	now := time.Now()
	for i := range 3 {
		s.scrapePerf(context.Background(), now.Add(time.Duration(i)*time.Hour))
	}
	if run, ok := s.PerfRun(); !ok || !run.Offered || hits.Load() != 3 {
		t.Fatalf("%+v (%v) after %d reads, want offered, asked three times", run, ok, hits.Load())
	}
}

// TestPerfPastBounds: a /perf_metrics answer past the read's bounds is
// still the server's list: before the run, a backlog left out (the
// source kept); during it, a read lost and said.
func TestPerfPastBounds(t *testing.T) {
	huge := "[" + strings.Repeat("{},", probe.MaxPerfMetricsValues) + "{}]"
	var hits atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch hits.Add(1) {
		case 1, 3:
			w.Write([]byte(huge))
		default:
			w.Write([]byte(`[{"request_id":1,"perf_metrics":{"timing_metrics":{"arrival_time":5,"first_scheduled_time":5.25}}}]`))
		}
	})
	s := NewScraper(Config{PerfURL: "http://endpoint/perf_metrics", Every: time.Second, Client: inProcess(h)})
	now := time.Now()
	for i := range 4 {
		s.scrapePerf(context.Background(), now.Add(time.Duration(i)*time.Hour)) // past any backoff
	}
	run, ok := s.PerfRun()
	if !ok || !run.Offered || run.Entries != 2 || run.LostReads != 1 || run.Before != 0 {
		t.Fatalf("%+v (%v), want offered, 2 entries, 1 read lost", run, ok)
	}
	if q := run.Parts[PerfQueue]; q.Count != 2 || (q.P50-250*time.Millisecond).Abs() > 250*time.Microsecond { // 3 significant digits
		t.Errorf("queue %+v, want 2 at 250ms", q)
	}
}

// TestPerfJoin: a request whose answer is named by the server's number
// (chatcmpl-<request_id>) joins its /perf_metrics entry, whichever comes
// first: its client TTFT split by the entry's queue and prefill, in the
// run's figures, the window's and OnSplit's; other requests join none.
func TestPerfJoin(t *testing.T) {
	fixture, err := os.ReadFile("../probe/testdata/tensorrt-llm/perf_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reads.Add(1) == 1 {
			w.Write([]byte(`[]`)) // before the run: nothing kept
			return
		}
		w.Write(fixture) // request_id 3, 4 and 5
	})
	var splits []probe.TTFTSplit
	s := NewScraper(Config{PerfURL: "http://endpoint/perf_metrics", Every: time.Second, Client: inProcess(h),
		OnSplit: func(sp probe.TTFTSplit) { splits = append(splits, sp) }})
	ctx, now := context.Background(), time.Now()
	s.StartPerf(ctx)
	req := func(id string, ttft time.Duration) *probe.Result {
		return &probe.Result{ID: id, HasTTFT: true, TTFT: ttft, Blocked: time.Millisecond}
	}
	s.NoteRequest(req("chatcmpl-3", 60*time.Millisecond)) // back before its entry
	s.NoteRequest(req("chatcmpl-sim9", 60*time.Millisecond))
	s.scrapePerf(ctx, now.Add(time.Second))
	s.NoteRequest(req("cmpl-4", 50*time.Millisecond)) // after it
	s.NoteRequest(req("chatcmpl-77", 50*time.Millisecond))
	failed := req("chatcmpl-5", 50*time.Millisecond)
	failed.Class = probe.StreamCut
	s.NoteRequest(failed)

	run, _ := s.PerfRun()
	if run.Joined != 2 || len(splits) != 2 {
		t.Fatalf("%d joined, %d splits; want 3 and 4 joined", run.Joined, len(splits))
	}
	// Entry 3: queue 6.435 ms, prefill 41.607 ms, TTFT 48.042 ms; the
	// client's TTFT 60 ms, 1 ms of it the connection.
	sp := splits[0]
	near := func(name string, got time.Duration, wantMS float64) {
		t.Helper()
		if w := time.Duration(wantMS * float64(time.Millisecond)); (got - w).Abs() > 2*time.Microsecond {
			t.Errorf("%s = %v, want %.3f ms", name, got, wantMS)
		}
	}
	near("connection", sp.Connection, 1)
	near("queue", sp.Queue, 6.435)
	near("prefill", sp.Prefill, 41.607)
	near("rest", sp.Rest, 60-1-6.435-41.607)
	near("gap", sp.Gap, 60-48.042)
	if d := run.Split[load.SplitGap]; d.Count != 2 {
		t.Errorf("the run's gap %+v, want 2 requests", d)
	}
	v := s.View(time.Minute)
	if v.Perf.Joined != 2 || v.Perf.Split[load.SplitPrefill].N != 2 {
		t.Errorf("the window: %d joined, prefill %+v", v.Perf.Joined, v.Perf.Split[load.SplitPrefill])
	}
	// A request whose answer carried the server's timings itself has its
	// split counted from them (runner's Observe): joined, but not offered
	// to OnSplit twice.
	answered := req("chatcmpl-5", 55*time.Millisecond)
	answered.Server = probe.ServerTimings{Queue: 6 * time.Millisecond, HasQueue: true, TTFT: 40 * time.Millisecond, HasTTFT: true}
	s.NoteRequest(answered)
	if run, _ := s.PerfRun(); run.Joined != 3 || len(splits) != 2 {
		t.Errorf("an answer with its own timings: %d joined, %d splits; want 3 joined, still 2 splits", run.Joined, len(splits))
	}
}

// TestPendingBounded: each side of the join holds maxPending at most,
// the oldest dropped.
func TestPendingBounded(t *testing.T) {
	var p pending[int]
	for i := range uint64(3 * maxPending) {
		p.put(i, int(i))
		if i%2 == 0 {
			p.take(i)
		}
	}
	if len(p.m) > maxPending || len(p.order) > 2*maxPending {
		t.Fatalf("%d waiting, %d in order; want at most %d, %d", len(p.m), len(p.order), maxPending, 2*maxPending)
	}
	if _, ok := p.take(3*maxPending - 1); !ok {
		t.Error("the newest was dropped")
	}
	if _, ok := p.take(1); ok {
		t.Error("the oldest was kept")
	}
}
