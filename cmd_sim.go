package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os/signal"
	"syscall"

	"github.com/infertop/infertop/crash"
	"github.com/infertop/infertop/sim"
	"github.com/infertop/infertop/sim/simflag"
)

// runSim is `infertop sim`: the simulated endpoint alone, until a signal.
func (a *app) runSim(args []string) error {
	stdout, stderr := a.stdout, a.stderr
	fs := newFlagSet("sim", "Usage: infertop sim [flags]\n\nRuns the simulated continuous-batching endpoint alone (OpenAI chat and\ncompletions, /v1/infer, /v1/models, /health, /metrics), until interrupted.", stdout)
	addr := fs.String("addr", "127.0.0.1:8000", "address to listen on")
	sf := simflag.Add(fs, "")
	if err := parse(fs, args); err != nil {
		return err
	}
	p, err := sf.Params()
	if err != nil {
		return usageError{err}
	}
	srv, err := sim.New(p)
	if err != nil {
		return usageError{err}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usagef("sim: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	canary := ""
	if !p.Canary.IsZero() {
		canary = fmt.Sprintf("; canary %s, marked in %s", p.Canary, sim.BackendHeader)
	}
	fmt.Fprintf(stderr, "infertop sim: serving %s at http://%s/v1 (%d slots, KV %d tokens%s); Ctrl+C stops\n", p.Model, ln.Addr(), p.Slots, p.KVTokens, canary)
	return srv.Serve(ctx, ln, log.New(stderr, "infertop sim: ", log.LstdFlags), sim.WithGuard(crash.Recover))
}
