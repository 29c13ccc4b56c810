package sim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// capacity runs streams concurrent streaming clients against the fast
// preset for d, each reading raw SSE and counting token messages, and
// returns the tokens per second delivered and the most streams open at once.
func capacity(tb testing.TB, streams int, d time.Duration) (tokPerSec float64, peak int64) {
	p, _ := Preset("fast")
	s, err := New(p)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.Start()
	defer hs.Close()
	defer func() { cancel(); <-done }()
	tr := &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := `{"model":"sim-llama-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":1000000,"stream":true}`
	var tokens, open atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	var measureFrom atomic.Int64
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, rcancel := context.WithDeadline(ctx, stop)
			defer rcancel()
			req, _ := http.NewRequestWithContext(rctx, "POST", hs.URL+"/v1/chat/completions", strings.NewReader(body))
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			for n := open.Add(1); ; {
				old := atomic.LoadInt64(&peak)
				if n <= old || atomic.CompareAndSwapInt64(&peak, old, n) {
					break
				}
			}
			defer open.Add(-1)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if bytes.HasPrefix(sc.Bytes(), []byte(`data: {`)) && measureFrom.Load() != 0 {
					tokens.Add(1)
				}
			}
		}()
	}
	// Measure the second half, once every stream has had time to connect.
	time.Sleep(d / 2)
	measureFrom.Store(time.Now().UnixNano())
	t0 := time.Now()
	time.Sleep(time.Until(stop))
	tokPerSec = float64(tokens.Load()) / time.Since(t0).Seconds()
	wg.Wait()
	return tokPerSec, atomic.LoadInt64(&peak)
}

// BenchmarkCapacity measures the sim's streaming capacity at zero model
// cost: run with -benchtime 1x.
func BenchmarkCapacity(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			for b.Loop() {
				tps, peak := capacity(b, n, 10*time.Second)
				b.ReportMetric(tps, "tok/s")
				b.ReportMetric(float64(peak), "streams")
			}
		})
	}
}

// TestManyStreams: a thousand concurrent streams are all served at once.
func TestManyStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	tps, peak := capacity(t, 1000, 4*time.Second)
	t.Logf("%d streams at once, %.0f tokens/s", peak, tps)
	if peak < 1000 || tps <= 0 {
		t.Fatalf("%d streams open at peak, %.0f tokens/s", peak, tps)
	}
}
