// Package simfleet is the embedded fleet `infertop watch` follows when it
// is given no target: several sims on loopback in two groups, a
// baseline and a slower canary, each with traffic of its own (a small
// open loop of streamed chat requests), so that the watch's demo needs
// nothing. The group is known the way Kubernetes knows it, beside the
// server (a label on the target), not in a metric of its own.
package simfleet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/sim"
)

// Config is the fleet's shape.
type Config struct {
	// Baseline and Canary are the servers in each group (defaults 3, 1).
	Baseline, Canary int
	// Slowdown is the canary's step costs against the baseline's (1.3:
	// 30 % slower; 1: an identical canary).
	Slowdown float64
	// Rate is the requests per second each server gets (default 6).
	Rate float64
	// Seed makes the sims and the traffic repeatable.
	Seed uint64
	// VLLMBuckets serves vLLM's own histogram bounds; false, bounds 4 %
	// apart (sim.Params.FineBuckets), which resolve a 10 % margin.
	VLLMBuckets bool
}

// Groups' names, as the targets' labels carry them.
const (
	BaselineGroup = "stable"
	CanaryGroup   = "canary"
)

// Server is one sim of the fleet.
type Server struct {
	Name, Group string
	// MetricsURL is its /metrics.
	MetricsURL string
}

// Fleet is the running fleet; Close stops it.
type Fleet struct {
	Servers []Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start starts the fleet on 127.0.0.1 until ctx ends or Close.
func Start(ctx context.Context, cfg Config) (*Fleet, error) {
	if cfg.Baseline <= 0 {
		cfg.Baseline = 3
	}
	if cfg.Canary <= 0 {
		cfg.Canary = 1
	}
	if cfg.Slowdown <= 0 {
		cfg.Slowdown = 1.3
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 6
	}
	base, err := sim.Preset("default")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Fleet{cancel: cancel}
	for i := range cfg.Baseline + cfg.Canary {
		p, group := base, BaselineGroup
		p.Seed = cfg.Seed + uint64(i)*7919
		p.FineBuckets = !cfg.VLLMBuckets
		if i >= cfg.Baseline {
			group = CanaryGroup
			if cfg.Slowdown != 1 {
				p.Canary = sim.Canary{Fraction: 1, Slowdown: cfg.Slowdown}
			}
		}
		srv, err := sim.New(p)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("simfleet: %w", err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("simfleet: %w", err)
		}
		origin := "http://" + ln.Addr().String()
		f.Servers = append(f.Servers, Server{Name: fmt.Sprintf("%s-%d", group, i), Group: group, MetricsURL: origin + "/metrics"})
		f.wg.Add(2)
		go func() {
			defer f.wg.Done()
			defer crash.Recover()
			_ = srv.Serve(ctx, ln, log.New(io.Discard, "", 0))
		}()
		go func() {
			defer f.wg.Done()
			defer crash.Recover()
			drive(ctx, origin+"/v1/chat/completions", p.Model, cfg.Rate, cfg.Seed+uint64(i))
		}()
	}
	return f, nil
}

// Close stops every sim and its traffic and waits for them.
func (f *Fleet) Close() {
	f.cancel()
	f.wg.Wait()
}

// maxInFlight bounds one server's traffic in flight: a stalled sim must
// not grow goroutines without end.
const maxInFlight = 64

// drive sends Poisson arrivals at rate to url until ctx ends.
func drive(ctx context.Context, url, model string, rate float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: maxInFlight}}
	defer client.CloseIdleConnections()
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		select {
		case sem <- struct{}{}:
		default:
			continue // full: this arrival is dropped, as a saturated client would
		}
		out := 16 + rng.IntN(112)
		body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"watch demo %d"}]}`, model, out, rng.IntN(1<<20))
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}()
	}
}
