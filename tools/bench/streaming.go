package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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
// tokens of finished requests). Each asks for 100 to 300 tokens, uniformly,
// as infertop's runs do: equal lengths would keep a thousand streams in
// lock-step, finishing in waves, and a count of finished streams would
// jump by a wave.
func rawStreams(url string, n int, d time.Duration) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var tokens atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for ctx.Err() == nil {
				body := fmt.Sprintf(`{"model":"sim-llama-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":%d,"stream":true}`, 100+rng.IntN(201))
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

// rounds is how many times the streaming comparison runs each reader.
const rounds = 3

func streaming(out *bytes.Buffer, d time.Duration, n int) error {
	p, _ := sim.Preset("fast")
	_, url, stop, err := startSim(p)
	if err != nil {
		return err
	}
	defer stop()
	cfg := probe.Config{URL: url + "/v1/chat/completions", Model: p.Model, MaxConns: n * 2}
	k := load.Knobs{Concurrency: n, PromptTokens: 4, OutputTokens: 200}
	_, spread, _ := load.ParseLength("uniform:100-300", 1<<20)
	rate := func(s load.Snapshot) float64 { return float64(s.Run.OutTokens) / s.Elapsed.Seconds() }
	// Rounds, each reader in turn, the best of each kept: whatever else
	// the machine does then weighs on all three alike.
	var raw, bare, withUI float64
	for range rounds {
		raw = max(raw, rawStreams(url, n, d))
		s, err := engineRun(cfg, k, spread, d, false)
		if err != nil {
			return err
		}
		bare = max(bare, rate(s))
		if s, err = engineRun(cfg, k, spread, d, true); err != nil {
			return err
		}
		withUI = max(withUI, rate(s))
	}
	fmt.Fprintf(out, "## 2. Streaming\n\nThe sim at zero model cost, %d concurrent streams of 100 to 300 tokens (uniform; one SSE message each), %s a run, sim and reader sharing the cores, the best of %d rounds of the three runs in turn. The raw reader (net/http and a line scanner) counts the token messages and measures nothing; both count the tokens of the streams that finished.\n\n", n, d, rounds)
	fmt.Fprintf(out, "| reader | tokens/s | ÷ raw |\n|---|---:|---:|\n| raw reader | %.0f | 1.00 |\n| infertop | %.0f | %.2f |\n| infertop with a 160x48 dashboard rendering every snapshot | %.0f | %.2f |\n\n",
		raw, bare, bare/raw, withUI, withUI/raw)
	return nil
}
