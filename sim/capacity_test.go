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

// capacity opens streams concurrent streaming requests against the fast
// preset, waits (up to 30 s) until all are open, then counts the token
// messages raw SSE readers receive over d. It returns tokens per second and
// how many streams were open together.
func capacity(tb testing.TB, streams int, d time.Duration) (tokPerSec float64, open int64) {
	p, _ := Preset("fast")
	s, err := New(p)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer func() { cancel(); <-done }()
	tr := &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := `{"model":"sim-llama-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":1000000,"stream":true}`
	var tokens, nOpen atomic.Int64
	var measuring atomic.Bool
	var wg sync.WaitGroup
	rctx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(rctx, "POST", hs.URL+"/v1/chat/completions", strings.NewReader(body))
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			nOpen.Add(1)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if measuring.Load() && bytes.HasPrefix(sc.Bytes(), []byte(`data: {`)) {
					tokens.Add(1)
				}
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); nOpen.Load() < int64(streams) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	open = nOpen.Load()
	measuring.Store(true)
	t0 := time.Now()
	time.Sleep(d)
	measuring.Store(false)
	tokPerSec = float64(tokens.Load()) / time.Since(t0).Seconds()
	stopAll()
	wg.Wait()
	return tokPerSec, open
}

// BenchmarkCapacity measures the sim's streaming capacity at zero model
// cost: run with -benchtime 1x.
func BenchmarkCapacity(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			for b.Loop() {
				tps, peak := capacity(b, n, 5*time.Second)
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
	tps, peak := capacity(t, 1000, 500*time.Millisecond) // any token at all in it: the streams flow
	t.Logf("%d streams at once, %.0f tokens/s", peak, tps)
	if peak < 1000 || tps <= 0 {
		t.Fatalf("%d streams open at peak, %.0f tokens/s", peak, tps)
	}
}
