package watch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// pageTransport answers every scrape in memory with a vLLM page whose
// counters rise at each read: the cost measured is the watch's, not a
// network's.
type pageTransport struct {
	page  []byte
	reads int
}

func (p *pageTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	p.reads++
	body := bytes.Replace(p.page, []byte("vllm:request_success_total{"), fmt.Appendf(nil, "vllm:request_success_total{r=\"%d\",", p.reads), 1)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{}, Request: r}, nil
}

// benchRead measures one read of n servers (each a vLLM page of four
// models, 125 KB) with the fleet's bookkeeping and a snapshot: the work
// of one tick. At 1 Hz, a tick's time is the share of a core the watch
// takes.
func benchRead(b *testing.B, n int) {
	page, err := os.ReadFile("../engines/testdata/vllm.txt")
	if err != nil {
		b.Fatal(err)
	}
	// Four models' series: the page's series again under three more
	// model names.
	var big strings.Builder
	big.Write(page)
	for _, m := range []string{"b", "c", "d"} {
		for _, line := range strings.Split(string(page), "\n") {
			if strings.Contains(line, "model_name=\"") {
				big.WriteString(strings.Replace(line, "model_name=\"", "model_name=\""+m, 1) + "\n")
			}
		}
	}
	var targets []Target
	for i := range n {
		g := "stable"
		if i%4 == 0 {
			g = "canary"
		}
		targets = append(targets, Target{Name: fmt.Sprintf("s%d", i), URL: fmt.Sprintf("http://s%d/metrics", i), Group: g})
	}
	src := &Scrape{List: func(context.Context) ([]Target, error) { return targets, nil }, Name: "bench",
		Client: &http.Client{Transport: &pageTransport{page: []byte(big.String())}}, Parallel: 1, Timeout: time.Second}
	w, err := New(Config{Source: src})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(big.Len() * n))
	b.ReportAllocs()
	now := time.Unix(0, 0)
	for b.Loop() {
		obs, _ := src.Read(context.Background())
		now = now.Add(time.Second)
		w.fleet.observe(now, obs, nil)
		_ = w.fleet.snapshot(now, time.Minute, "bench")
	}
}

// BenchmarkTick50 is a tick of 50 servers (the watch at 1 Hz: its
// ns/op over 1e9 is its share of a core).
func BenchmarkTick50(b *testing.B) { benchRead(b, 50) }

// BenchmarkTick500 is a tick of 500 servers (at --every 5s, a fifth of
// its ns/op over 1e9 is its share of a core).
func BenchmarkTick500(b *testing.B) { benchRead(b, 500) }
