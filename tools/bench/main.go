// Command bench measures infertop against its peers and itself, in one run
// on one machine, and prints a Markdown report (BENCHMARKS.md is its
// output):
//
//	go run ./tools/bench                      # everything: about 1 h 20 min
//	go run ./tools/bench -only gen,streaming  # some sections
//	go run ./tools/bench -duration 5s -memory 1m -endurance 2m
//
// 1. Request generation on a minimal non-streaming JSON endpoint at a fixed
// concurrency: infertop's engine against hey, wrk and vegeta (each is run
// when it is on the PATH). 2. Streaming: infertop against a raw reader that
// measures nothing, on the sim at zero model cost. 3. Accuracy: the sim's
// server-side record against infertop's figures. 4. The UI's cost: one
// frame's render, and the engine's throughput with a dashboard rendering and
// without. 5. Memory over a long busy run. 6. Endurance: the dashboard, in
// tmux, against a sim injecting every fault, for an hour. Every endpoint is
// on 127.0.0.1.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

func main() {
	dur := flag.Duration("duration", 10*time.Second, "length of each measured run in sections 1 to 4")
	conc := flag.Int("c", 64, "concurrency of the request-generation comparison")
	streams := flag.Int("streams", 1000, "concurrent streams of the streaming comparison")
	memDur := flag.Duration("memory", 10*time.Minute, "length of the memory run")
	endDur := flag.Duration("endurance", time.Hour, "length of the endurance run")
	only := flag.String("only", "", "comma-separated sections to run: gen, streaming, accuracy, ui, memory, endurance (default all)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the bench's own process to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(2)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	want := func(name string) bool {
		return *only == "" || strings.Contains(","+*only+",", ","+name+",")
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# infertop benchmarks\n\n`go run ./tools/bench %s` on %s/%s, %d CPUs, %s, %s.\n\n",
		strings.Join(os.Args[1:], " "), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	sections := []struct {
		name string
		run  func(*bytes.Buffer) error
	}{
		{"gen", func(b *bytes.Buffer) error { return requestGeneration(b, *dur, *conc) }},
		{"streaming", func(b *bytes.Buffer) error { return streaming(b, *dur, *streams) }},
		{"accuracy", func(b *bytes.Buffer) error { return accuracy(b, *dur) }},
		{"ui", func(b *bytes.Buffer) error { return uiCost(b, *dur) }},
		{"memory", func(b *bytes.Buffer) error { return memory(b, *memDur) }},
		{"endurance", func(b *bytes.Buffer) error { return enduranceRun(b, *endDur) }},
	}
	failed := false
	for _, s := range sections {
		if !want(s.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s...\n", s.name)
		if err := s.run(&out); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
			fmt.Fprintf(&out, "**%s failed: %v**\n\n", s.name, err)
			failed = true
		}
	}
	os.Stdout.Write(out.Bytes())
	if failed {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// minimalServer answers every request with the same small JSON at once.
func minimalServer() *httptest.Server {
	body := []byte(`{"output":"ok","input_tokens":1,"output_tokens":1}`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
}
