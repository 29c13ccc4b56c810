package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// inProcess is a client whose requests h answers in-process: no socket,
// so a synctest bubble's clock can advance while the scraper runs.
func inProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTrip(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result(), nil
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestScraper: a server's page and a DCGM exporter's read every 100 ms;
// then both fail, and the view goes stale while the scraper backs off.
// Its seconds are a synctest bubble's virtual time, the targets answered
// in-process.
func TestScraper(t *testing.T) { synctest.Test(t, testScraper) }

func testScraper(t *testing.T) {
	page, _ := os.ReadFile("testdata/sglang.txt")
	var fail atomic.Bool
	var hits atomic.Int64
	var mj atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/dcgm" { // 500 W: 50 J (50,000 mJ) a 100 ms tick
			e := mj.Add(50000)
			fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 500\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} %d\n", e)
			return
		}
		w.Write(page)
	})
	s := NewScraper(Config{ServerURL: "http://endpoint/metrics", GPUURL: "http://endpoint/dcgm", Every: 100 * time.Millisecond, Client: inProcess(h)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(3 * time.Second)
	var v View
	for {
		v = s.View(time.Minute)
		if v.Server != nil && v.GPU != nil && v.GPU.EnergyJ >= 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no readings: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The page never changes: no TTFT observed within the window.
	if v.Server.Kind != "sglang" || v.Server.Running != 12 || v.Server.Stale || v.Server.HasTTFT {
		t.Fatalf("server %+v", v.Server)
	}
	if v.GPU.Source != "DCGM" || v.GPU.PowerW != 500 || v.GPU.EnergyFrom != "energy counter" || v.GPU.Count != 1 {
		t.Fatalf("gpu %+v", v.GPU)
	}
	// Energy counted from the counter, whatever the scrape timing: 50 J a scrape.
	if int(v.GPU.EnergyJ)%50 != 0 {
		t.Fatalf("energy %v J is not whole scrapes of 50 J", v.GPU.EnergyJ)
	}

	// The target fails: the view goes stale, with its age and the error,
	// and the scraper backs off instead of hammering it.
	fail.Store(true)
	time.Sleep(1500 * time.Millisecond)
	before := hits.Load()
	time.Sleep(1500 * time.Millisecond)
	v = s.View(time.Minute)
	if !v.Server.Stale || v.Server.Err == "" || v.Server.Age < time.Second || !v.GPU.Stale {
		t.Fatalf("after failures: server %+v gpu %+v", v.Server, v.GPU)
	}
	if n := hits.Load() - before; n > 8 { // every 100 ms would be 30 for two targets
		t.Fatalf("%d scrapes in 1.5 s while failing: no backoff", n)
	}
}

// TestQuietServerDropped: a guessed /metrics that answers 404 shows
// nothing, however many scrapes pass (six, in a synctest bubble's
// virtual 300 ms).
func TestQuietServerDropped(t *testing.T) { synctest.Test(t, testQuietServerDropped) }

func testQuietServerDropped(t *testing.T) {
	s := NewScraper(Config{ServerURL: "http://endpoint/metrics", Quiet: true, Every: 50 * time.Millisecond, Client: inProcess(http.NotFoundHandler())})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	if v := s.View(time.Minute); v.Server != nil {
		t.Fatalf("a guessed /metrics that is not there shows %+v", v.Server)
	}
	if ServerURLFor("http://h:8000/v1/chat/completions") != "http://h:8000/metrics" || ServerURLFor("http://h:8000") != "http://h:8000/metrics" {
		t.Fatal("ServerURLFor")
	}
}
