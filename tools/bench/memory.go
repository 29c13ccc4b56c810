package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

// memSample is one reading of this process during the memory run.
type memSample struct {
	at         time.Duration
	rss, heap  int64
	goroutines int
	requests   int64
}

// memRun puts closed-loop load (concurrency 32) on the minimal server for
// d and reads the process's memory every interval.
func memRun(d, every time.Duration) ([]memSample, error) {
	srv := minimalServer()
	defer srv.Close()
	client, err := probe.New(probe.Config{URL: srv.URL + "/v1/infer", Model: "m", API: probe.Generic})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	eng, err := load.New(load.Config{Do: client.Do, Knobs: load.Knobs{Concurrency: 32, PromptTokens: 16, OutputTokens: 1}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var samples []memSample
	start := time.Now()
	for time.Since(start) < d {
		time.Sleep(every)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := eng.Latest()
		samples = append(samples, memSample{at: time.Since(start), rss: rss(), heap: int64(ms.HeapInuse),
			goroutines: runtime.NumGoroutine(), requests: s.TotalCompleted + s.TotalFailed})
	}
	return samples, nil
}

// flat says whether the peaks of the last third stay within 25 % and
// slack (8 for goroutines) of those of the middle third (the first third is warm-up: the
// rolling window and five minutes of history filling).
func flat(ss []memSample, slack int64) error {
	n := len(ss)
	if n < 6 {
		return fmt.Errorf("%d samples, too few to judge", n)
	}
	peak := func(part []memSample, f func(memSample) int64) int64 {
		var m int64
		for _, s := range part {
			m = max(m, f(s))
		}
		return m
	}
	mid, last := ss[n/3:2*n/3], ss[2*n/3:]
	mib := func(v int64) string { return fmt.Sprintf("%d MiB", v>>20) }
	for _, m := range []struct {
		name  string
		f     func(memSample) int64
		slack int64
		show  func(int64) string
	}{{"resident memory", func(s memSample) int64 { return s.rss }, slack, mib},
		{"heap in use", func(s memSample) int64 { return s.heap }, slack, mib},
		{"goroutines", func(s memSample) int64 { return int64(s.goroutines) }, 8, func(v int64) string { return fmt.Sprint(v) }}} {
		if a, b := peak(mid, m.f), peak(last, m.f); float64(b) > 1.25*float64(a)+float64(m.slack) {
			return fmt.Errorf("%s grew: peak %s over the middle third, %s over the last", m.name, m.show(a), m.show(b))
		}
	}
	return nil
}

func memory(out *bytes.Buffer, d time.Duration) error {
	samples, err := memRun(d, max(time.Second, d/600))
	if err != nil {
		return err
	}
	last := samples[len(samples)-1]
	fmt.Fprintf(out, "## 5. Memory\n\nClosed loop at concurrency 32 on the minimal server for %s: %d requests, %.0f req/s. This process (the engine, client and server), by tenths of the run:\n\n",
		d, last.requests, float64(last.requests)/last.at.Seconds())
	out.WriteString("| at | requests | resident memory | Go heap in use | goroutines |\n|---|---:|---:|---:|---:|\n")
	n := len(samples)
	for i := 1; i <= 10; i++ {
		s := samples[max(0, i*n/10-1)]
		fmt.Fprintf(out, "| %v | %d | %d MiB | %d MiB | %d |\n", s.at.Round(time.Second), s.requests, s.rss>>20, s.heap>>20, s.goroutines)
	}
	verdict := "flat: the last third's peaks are within 25 % and 8 MiB of the middle third's"
	if err := flat(samples, 8<<20); err != nil {
		verdict = "NOT flat: " + err.Error()
	}
	fmt.Fprintf(out, "\n%s.\n\n", verdict)
	return nil
}

// rss is this process's resident memory, from /proc (0 where there is none).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v * 1024
		}
	}
	return 0
}
