package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/sim"
)

// startSim runs the sim on 127.0.0.1 and returns its base URL.
func startSim(p sim.Params) (*sim.Server, string, func(), error) {
	s, err := sim.New(p)
	if err != nil {
		return nil, "", nil, fmt.Errorf("sim: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("sim: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx, ln, nil) }()
	return s, "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

// rawStreams reads n streams for d, measuring nothing: it counts the token
// messages of the streams that finished (as infertop counts the output
// tokens of finished requests).
func rawStreams(url string, n int, d time.Duration) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var tokens atomic.Int64
	var wg sync.WaitGroup
	body := `{"model":"sim-llama-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":200,"stream":true}`
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				sc := bufio.NewScanner(resp.Body)
				var n int64
				for sc.Scan() {
					if bytes.Contains(sc.Bytes(), []byte(`"content":" `)) {
						n++
					} else if bytes.Equal(sc.Bytes(), []byte("data: [DONE]")) {
						tokens.Add(n)
					}
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	return float64(tokens.Load()) / d.Seconds()
}

func streaming(out *bytes.Buffer, d time.Duration, n int) error {
	p, _ := sim.Preset("fast")
	_, url, stop, err := startSim(p)
	if err != nil {
		return err
	}
	defer stop()
	raw := rawStreams(url, n, d)
	cfg := probe.Config{URL: url + "/v1/chat/completions", Model: p.Model, MaxConns: n * 2}
	k := load.Knobs{Concurrency: n, PromptTokens: 4, OutputTokens: 200}
	s, err := engineRun(cfg, k, d, false)
	if err != nil {
		return err
	}
	withUI, err := engineRun(cfg, k, d, true)
	if err != nil {
		return err
	}
	rate := func(s load.Snapshot) float64 { return float64(s.Run.OutTokens) / s.Elapsed.Seconds() }
	fmt.Fprintf(out, "## 2. Streaming\n\nThe sim at zero model cost, %d concurrent streams of 200 tokens (one SSE message each), %s each, sim and reader sharing the cores. The raw reader (net/http and a line scanner) counts the token messages and measures nothing; both count the tokens of the streams that finished.\n\n", n, d)
	fmt.Fprintf(out, "| reader | tokens/s | ÷ raw |\n|---|---:|---:|\n| raw reader | %.0f | 1.00 |\n| infertop | %.0f | %.2f |\n| infertop with a 160x48 dashboard rendering every snapshot | %.0f | %.2f |\n\n",
		raw, rate(s), rate(s)/raw, rate(withUI), rate(withUI)/raw)
	return nil
}
