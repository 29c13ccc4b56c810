package watch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/readlimit/limittest"
)

// honestPage is a vLLM page whose counters rise by n at every read.
func honestPage(n int) string {
	b, err := os.ReadFile("../engines/testdata/vllm-sim.txt")
	if err != nil {
		panic(err)
	}
	// The recorded page's request counter, moved on by n: the server
	// answered n more.
	return strings.Replace(string(b), "vllm:request_success_total{", fmt.Sprintf("vllm:request_success_total{extra=\"%d\",", n), 1)
}

// TestHostileTargets: beside an honest server, one that hangs, one that
// answers garbage, one that sends 10^6 series, one that sends 100 MB,
// and one that redirects: each is shown down (or no engine) with its
// reason, the heap stays far under 200 MB, and the honest one keeps its
// figures.
func TestHostileTargets(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	var reads int
	mux := http.NewServeMux()
	mux.HandleFunc("/honest", func(w http.ResponseWriter, _ *http.Request) {
		reads++
		io.WriteString(w, honestPage(reads))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "\x1b]0;owned\x07 this is { not a metrics page\n")
	})
	// The hostile pages are made before the heap is watched: the
	// servers' own memory is not the watch's.
	var series bytes.Buffer
	for i := range 1_000_000 {
		fmt.Fprintf(&series, "vllm:num_requests_running{pod=\"%d\"} 1\n", i)
	}
	line := bytes.Repeat([]byte("x"), 1<<20)
	mux.HandleFunc("/series", func(w http.ResponseWriter, _ *http.Request) {
		w.Write(series.Bytes())
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) {
		for range 100 {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	// 8 MB of headers: Go's default bound is 10 MB a response.
	mux.HandleFunc("/headers", func(w http.ResponseWriter, _ *http.Request) {
		for i := range 8000 {
			w.Header().Add(fmt.Sprint("X-H", i), string(line[:1000]))
		}
		io.WriteString(w, honestPage(1))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/honest", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	targets := []Target{{Name: "honest", URL: srv.URL + "/honest", Group: "a"}}
	for _, n := range []string{"hang", "garbage", "series", "huge", "redirect", "headers"} {
		targets = append(targets, Target{Name: n, URL: srv.URL + "/" + n, Group: "b"})
	}
	src := NewScrape("hostile", func(context.Context) ([]Target, error) { return targets, nil }, nil, 500*time.Millisecond)
	w, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	peak, _ := limittest.HeapPeak(func() {
		for range 3 {
			obs, err := src.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			w.fleet.observe(time.Now(), obs, nil)
		}
		s = w.fleet.snapshot(time.Now(), time.Second, src.String())
	})
	t.Logf("heap peak %.1f MB over three reads", float64(peak)/1e6)
	if peak > 100<<20 { // the promise is 200 MB; measured 3-58 MB (garbage not yet collected on a busy machine)
		t.Errorf("heap peak %d MB", peak>>20)
	}
	byName := map[string]ServerOf{}
	for _, r := range s.Servers {
		byName[r.Name] = r
		t.Logf("%-9s %-9s %s", r.Name, r.State, r.Err)
	}
	if h := byName["honest"]; h.State != StateUp || h.Engine != "vllm" {
		t.Errorf("the honest server lost its figures: %+v", h)
	}
	for _, n := range []string{"hang", "garbage", "series", "huge", "redirect", "headers"} {
		r := byName[n]
		if r.State != StateDown && r.State != StateUnknown || r.Err == "" || r.Failures != 3 {
			t.Errorf("%s: %+v, want down or no engine, with its reason, three failed reads", n, r)
		}
		if strings.ContainsRune(r.Err, 0x1b) {
			t.Errorf("%s: an escape in its error", n)
		}
	}
}

// TestImplausibleCounters: beside an honest server that answers 10
// requests a second, one whose counters fall and rise by 10^14 at every
// read (added whole at each: 4.7*10^13 requests a second in its group),
// and one whose counters fall a little at every read (a restart each
// time, its whole counter added): their reads are set aside as
// implausible, and the group's rate is the honest server's.
func TestImplausibleCounters(t *testing.T) {
	t.Parallel()
	page := func(t *testing.T, requests float64) engines.Reading {
		r, err := engines.Parse(strings.NewReader(fmt.Sprintf("vllm:request_success_total{finished_reason=\"stop\"} %g\nvllm:num_requests_running 1\n", requests)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	w, err := New(Config{Source: NewScrape("test", func(context.Context) ([]Target, error) { return nil, nil }, nil, time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		w.fleet.observe(t0.Add(time.Duration(i)*time.Second), []Observation{
			{Target: Target{Name: "honest", Group: "a"}, Reading: page(t, float64(10*i))},
			{Target: Target{Name: "swinging", Group: "a"}, Reading: page(t, float64(i%3)*1e14)},
			{Target: Target{Name: "falling", Group: "a"}, Reading: page(t, 1e6-float64(i)*1000)},
		}, nil)
	}
	s := w.fleet.snapshot(t0.Add(9*time.Second), 9*time.Second, "test")
	for _, r := range s.Servers {
		t.Logf("%-9s %-11s %.1f req/s %s", r.Name, r.State, r.ReqPer, r.Err)
		if r.Name != "honest" && (r.State != StateImplausible && r.State != StateRestarted || r.ReqPer != 0) {
			t.Errorf("%s: %s, %.3g req/s; want its reads set aside", r.Name, r.State, r.ReqPer)
		}
	}
	if len(s.Groups) != 1 || s.Groups[0].ReqPerSec < 9 || s.Groups[0].ReqPerSec > 11 {
		t.Fatalf("groups %+v, want one at the honest server's 10 req/s", s.Groups)
	}
}

// TestLargeFleetBounded: a fleet of 1,000 servers over a minute's
// window holds at most maxSlots ticks in all (one a read each held 860
// MB for 6,000 servers), and its rates stay right: each server answers
// 10 requests a second, and each reads so.
func TestLargeFleetBounded(t *testing.T) {
	t.Parallel()
	const n = 1000
	w, err := New(Config{Source: NewScrape("test", func(context.Context) ([]Target, error) { return nil, nil }, nil, time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	obs := make([]Observation, n)
	for i := range 90 {
		for k := range obs {
			obs[k] = Observation{Target: Target{Name: fmt.Sprint("s", k), Group: []string{"a", "b"}[k%2]},
				Reading: engines.Reading{Engine: "vllm", Requests: engines.Value{V: float64(10 * i), Has: true}}}
		}
		w.fleet.observe(t0.Add(time.Duration(i)*time.Second), obs, nil)
	}
	ticks := 0
	for _, s := range w.fleet.servers {
		ticks += len(s.ticks)
	}
	if ticks > maxSlots {
		t.Errorf("%d ticks held for %d servers, want at most %d", ticks, n, maxSlots)
	}
	s := w.fleet.snapshot(t0.Add(89*time.Second), 89*time.Second, "test")
	for _, g := range s.Groups {
		if want := 10.0 * n / 2; math.Abs(g.ReqPerSec-want) > want/100 {
			t.Errorf("group %s: %.1f req/s, want %.0f", g.Name, g.ReqPerSec, want)
		}
	}
	for _, r := range s.Servers[:3] {
		if math.Abs(r.ReqPer-10) > 0.1 {
			t.Errorf("%s: %.2f req/s, want 10", r.Name, r.ReqPer)
		}
	}
}

// TestServersCapped: a lister naming more than MaxServers servers (a
// DNS name of 10,000 addresses cost 242 MB) has MaxServers read, taken
// from each group in turn (the canary's few are read whatever the
// baseline's list), and the source says so in one line.
func TestServersCapped(t *testing.T) {
	t.Parallel()
	targets := make([]Target, MaxServers+100)
	for i := range targets {
		// A URL no request is made of: the cap, not the network, is tested.
		targets[i] = Target{Name: fmt.Sprint("s", i), URL: "http://\x00/", Group: "a"}
	}
	// The canary's three servers come last: the cut leaves them theirs.
	for i := range 3 {
		targets[len(targets)-1-i].Group = "canary"
	}
	src := NewScrape("many", func(context.Context) ([]Target, error) { return targets, nil }, nil, time.Second)
	obs, err := src.Read(t.Context())
	if len(obs) != MaxServers || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d servers", MaxServers+100)) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%d read, %v; want %d and one line naming the cap", len(obs), err, MaxServers)
	}
	canary := 0
	for _, o := range obs {
		if o.Target.Group == "canary" {
			canary++
		}
	}
	if canary != 3 {
		t.Errorf("%d of the canary's 3 servers read", canary)
	}
}

// hangs is a transport whose every request waits for its end.
type hangs struct{}

func (hangs) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestSlowServersReadTogether: 400 servers that never answer cost a
// read one scrape's timeout, not 13 of them (32 in flight: 400 servers
// answering a byte a second made each read 37 s, the honest servers'
// figures with it).
func TestSlowServersReadTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		targets := make([]Target, 400)
		for i := range targets {
			targets[i] = Target{Name: fmt.Sprint("s", i), URL: fmt.Sprintf("http://s%d:8000/metrics", i), Group: "a"}
		}
		src := NewScrape("slow", func(context.Context) ([]Target, error) { return targets, nil }, nil, 3*time.Second)
		src.Client = &http.Client{Transport: hangs{}}
		began := time.Now()
		obs, _ := src.Read(t.Context())
		if d := time.Since(began); d > 4*time.Second || len(obs) != len(targets) {
			t.Errorf("a read of %d hanging servers took %v", len(obs), d)
		}
	})
}
