package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infertop/infertop/engines"
	"github.com/infertop/infertop/tools/hostile"
)

// Hostile metrics pages: a server's /metrics and a DCGM exporter that
// send what no honest one would. Every server listens on 127.0.0.1 only.

// vllmPage is a vLLM page whose running count and TTFT histogram hold v.
func vllmPage(v string) string {
	return "vllm:num_requests_running " + v + "\nvllm:num_requests_waiting 2\nvllm:kv_cache_usage_perc " + v +
		"\nvllm:generation_tokens_total " + v + "\nvllm:prompt_tokens_total 1.7e308\nvllm:prompt_tokens_total{x=\"b\"} 1.7e308\n" +
		"# TYPE vllm:time_to_first_token_seconds histogram\n" +
		"vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 3\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} " + v +
		"\nvllm:time_to_first_token_seconds_count 4\nvllm:time_to_first_token_seconds_sum 1\n"
}

// TestImpossibleNumbers: 1.7e308, NaN and infinities on a server's page,
// and on a DCGM page with a negative energy counter, are set aside: the
// view has only finite numbers (it encodes as JSON, where one +Inf made
// no report be written), and the energy is never negative (it was
// printed as -5388450952567 J).
func TestImpossibleNumbers(t *testing.T) {
	for _, v := range []string{"1.7e308", "NaN", "+Inf", "-Inf", "-5"} {
		t.Run(v, func(t *testing.T) {
			var mj atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/dcgm" {
					n := mj.Add(1)
					// A counter that runs backwards to a negative value, a
					// power and utilisation that cannot be true.
					fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} %s\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} %s\n"+
						"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} %d\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 300\n"+
						"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"} %g\n", v, v, -5388450952567000*n, 1e15*float64(n))
					return
				}
				fmt.Fprint(w, vllmPage(v))
			}))
			defer srv.Close()
			s := NewScraper(Config{ServerURL: srv.URL + "/metrics", GPUURL: srv.URL + "/dcgm", Every: 10 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); s.Run(ctx) }()
			defer func() { cancel(); <-done }()
			deadline := time.Now().Add(30 * time.Second)
			for mj.Load() < 3 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond) // polling for the scrapes, bounded
			}
			cancel()
			<-done
			view := s.View(time.Minute)
			if view.Server == nil || view.GPU == nil || view.Server.Err != "" || view.GPU.Err != "" {
				t.Fatalf("view %+v %+v", view.Server, view.GPU)
			}
			if _, err := json.Marshal(view); err != nil {
				t.Fatalf("the view does not encode: %v", err)
			}
			if _, err := json.Marshal(s.History()); err != nil {
				t.Fatalf("the history does not encode: %v", err)
			}
			j, _, ok := s.EnergyBetween(time.Now().Add(-time.Hour), time.Now())
			if !ok || j < 0 || math.IsInf(j, 0) || view.GPU.EnergyJ < 0 {
				t.Fatalf("energy %v J (%v), window %v J", j, ok, view.GPU.EnergyJ)
			}
			// GPU 1's counter rises 1e12 J a scrape: past any GPU's power,
			// so its energy is its power over the time (300 W).
			if view.GPU.AvgW > 2*maxGPUWatts {
				t.Fatalf("average power %v W", view.GPU.AvgW)
			}
			t.Logf("running %v, kv %v (%v), gen/s %v, ttft %v (%v), %v J, %v W", view.Server.Running, view.Server.KVUsage, view.Server.HasKV,
				view.Server.GenPerSec, view.Server.TTFTP99, view.Server.HasTTFT, j, view.GPU.AvgW)
		})
	}
}

// TestHugePages: a DCGM page of 300k gpu labels (12.5 MB, under the page
// cap) and a server page of 200k buckets are refused in bounded memory,
// naming the cap; they grew to 1.4 GB and 238 MB in the parser.
func TestHugePages(t *testing.T) {
	var dcgm, buckets strings.Builder
	for i := range 300_000 {
		fmt.Fprintf(&dcgm, "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%d\"} 300\n", i, i)
	}
	buckets.WriteString("vllm:num_requests_running 1\n# TYPE vllm:time_to_first_token_seconds histogram\n")
	for i := range 200_000 {
		fmt.Fprintf(&buckets, "vllm:time_to_first_token_seconds_bucket{le=\"%d\"} %d\n", i, i)
	}
	var few strings.Builder
	for i := range maxGPUs + 1 {
		fmt.Fprintf(&few, "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\"} 300\n", i)
	}
	for _, tt := range []struct {
		name, page, want string
		dcgm             bool
	}{
		{"300k gpus", dcgm.String(), "more than 4096 series of DCGM_FI_DEV_POWER_USAGE", true},
		{"257 gpus", few.String(), "more than 256 GPUs", true},
		{"200k buckets", buckets.String(), "more than 8192 series of vllm:time_to_first_token_seconds", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := hostile.Allocated(func() {
				if tt.dcgm {
					_, err = ParseDCGM(strings.NewReader(tt.page))
				} else {
					_, _, err = ParseServer(strings.NewReader(tt.page))
				}
			})
			t.Logf("%d-byte page: %d KiB allocated: %v", len(tt.page), got>>10, err)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one naming %q", err, tt.want)
			}
			if got > 8<<20 {
				t.Errorf("allocated %d MiB for a %d-byte page", got>>20, len(tt.page))
			}
		})
	}
	// 500 buckets of distinct bounds over label sets are within the
	// series cap, past the bucket cap: the histogram is set aside.
	var wide strings.Builder
	wide.WriteString("vllm:num_requests_running 1\n# TYPE vllm:time_to_first_token_seconds histogram\n")
	for i := range 600 {
		fmt.Fprintf(&wide, "vllm:time_to_first_token_seconds_bucket{le=\"%d\"} %d\n", i, i)
	}
	s, ok, err := ParseServer(strings.NewReader(wide.String()))
	if err != nil || !ok || s.TTFT != nil {
		t.Fatalf("600 bounds: ok %v err %v, TTFT %v", ok, err, s.TTFT != nil)
	}
}

// TestScraperRefusesRedirect: a /metrics that redirects is not followed
// (the scrape's headers would go with it): the target behind it receives
// nothing, and the error says why.
func TestScraperRefusesRedirect(t *testing.T) {
	var behind atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		behind.Add(1)
		fmt.Fprint(w, vllmPage("1"))
	}))
	defer target.Close()
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, target.URL+"/metrics?token=hunter2hunter2", http.StatusFound)
	}))
	defer srv.Close()
	s := NewScraper(Config{ServerURL: srv.URL + "/metrics", Every: 10 * time.Millisecond, Headers: http.Header{"Authorization": {"Bearer k"}}})
	err := s.get(context.Background(), srv.URL+"/metrics", func(io.Reader) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "does not follow redirects") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err %v", err)
	}
	if asked.Load() != 1 || behind.Load() != 0 {
		t.Fatalf("the redirecting server was asked %d times, the one behind it %d", asked.Load(), behind.Load())
	}
}

// TestScrapeErrorsRedacted: the credentials of a metrics URL (a user
// name and password, ?token=, ?api_key=, ?password=, a presigned URL's
// X-Amz-Signature) never reach the error the dashboard and every SSH
// watcher are shown.
func TestScrapeErrorsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close() // a port nothing listens on: connection refused
	url := strings.Replace(dead, "http://", "http://alice:s3cretpw@", 1) +
		"/metrics?token=tok-123456&api_key=key-123456&password=pw-123456&X-Amz-Signature=sig-123456&x=1"
	for _, gpu := range []bool{false, true} {
		cfg := Config{ServerURL: url, Every: 10 * time.Millisecond}
		if gpu {
			cfg = Config{GPUURL: url, Every: 10 * time.Millisecond}
		}
		s := NewScraper(cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		var msg string
		deadline := time.Now().Add(30 * time.Second)
		for msg == "" && time.Now().Before(deadline) {
			v := s.View(time.Minute)
			switch {
			case !gpu && v.Server != nil:
				msg = v.Server.Err
			case gpu && v.GPU != nil:
				msg = v.GPU.Err
			}
			time.Sleep(5 * time.Millisecond) // polling for the first scrape, bounded
		}
		cancel()
		<-done
		if msg == "" {
			t.Fatal("no error shown")
		}
		for _, secret := range []string{"alice", "s3cretpw", "tok-123456", "key-123456", "pw-123456", "sig-123456"} {
			if strings.Contains(msg, secret) {
				t.Errorf("gpu %v: %q shows %q", gpu, msg, secret)
			}
		}
		t.Logf("shown: %s", msg)
	}
}

// TestScrapeTransportHTTP2: the default scraper speaks HTTP/2 through
// golang.org/x/net/http2, as the load client does (the copy bundled in
// net/http hangs for good on a hostile WINDOW_UPDATE), and follows no
// redirect.
func TestScrapeTransportHTTP2(t *testing.T) {
	s := NewScraper(Config{ServerURL: "http://127.0.0.1:1/metrics"})
	tr, ok := s.client.Transport.(*http.Transport)
	if !ok || tr.TLSNextProto["h2"] == nil {
		t.Fatalf("transport %T: no h2 of x/net", s.client.Transport)
	}
	if s.client.CheckRedirect == nil {
		t.Fatal("redirects followed")
	}
}

// FuzzFilterPage: what filterPage keeps is lines of the page, of the
// families wanted only; the pages it keeps parse without a panic, and
// what they read holds no number that cannot be true.
func FuzzFilterPage(f *testing.F) {
	f.Add(vllmPage("1.7e308"))
	f.Add("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{a=\"b\"} NaN\nother 1\n")
	f.Add("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} -Inf\n#  HELP x y\n{\"vllm:num_requests_running\"} 3")
	f.Fuzz(func(t *testing.T, page string) {
		wanted := func(n string) bool { return strings.HasPrefix(n, "DCGM_") || engines.Wanted(n) }
		kept, err := filterPage(strings.NewReader(page), wanted)
		if err != nil {
			return
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(page, "\n") {
			lines[l] = true
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(kept), "\n"), "\n") {
			if l == "" {
				continue
			}
			if fam, _ := family([]byte(l), wanted); fam == "" || !lines[l] {
				t.Fatalf("kept %q of %q", l, page)
			}
		}
		s, _, err := ParseServer(strings.NewReader(page))
		if err != nil {
			return
		}
		for _, v := range []float64{s.Running.V, s.Waiting.V, s.KVUsage.V, s.PromptTokens.V, s.GenTokens.V, s.Preemptions.V} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%q read as %v", page, v)
			}
		}
		for _, h := range []*Histogram{s.TTFT, s.ITL} {
			if q, ok := Quantile(h, nil, 0.99); ok && (math.IsNaN(q) || math.IsInf(q, 0)) {
				t.Fatalf("%q: a quantile of %v", page, q)
			}
		}
		s.TTFT, s.ITL = nil, nil // their last bound is +Inf by design; only quantiles are shown
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("%q: %v", page, err)
		}
		g, err := ParseDCGM(strings.NewReader(page))
		if err == nil {
			if _, err := json.Marshal(g); err != nil {
				t.Fatalf("%q: %v", page, err)
			}
		}
	})
}
