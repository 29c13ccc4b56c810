package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMetricsLinger: a headless run with --metrics-addr keeps serving its
// metrics after its summary and its exit code, with the final counts, so
// a Prometheus scraping every 15 s reads them; a signal ends the wait (the
// test never waits the linger out). On main the endpoint closed with the
// run: the last requests were never scraped ("unknown flag:
// --metrics-linger").
func TestMetricsLinger(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sigs := make(chan os.Signal, 1)
	var stderr lockedBuffer
	var stdout bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, signals: func() (<-chan os.Signal, func()) { return sigs, func() {} }}
	code := make(chan int, 1)
	go func() {
		code <- a.run([]string{"run", "--requests", "24", "-c", "4", "--prompt-tokens", "8", "--output-tokens", "4",
			"--metrics-addr", addr, "--metrics-linger", "10m", "--progress-every", "1h"})
	}()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(stderr.String(), "serving the final metrics at "+addr) {
		select {
		case c := <-code:
			t.Fatalf("exit %d before the linger:\n%s", c, stderr.String())
		case <-deadline:
			t.Fatalf("no linger in 60 s:\n%s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("no metrics while lingering: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	value := func(re string) float64 {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + re + ` (\S+)$`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("no %s in:\n%s", re, b)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	sent, ok := value(`infertop_requests_sent_total`), value(`infertop_requests_total\{class="ok"\}`)
	if sent != 24 || ok != 24 || value(`infertop_in_flight_requests`) != 0 {
		t.Errorf("the last scrape: sent %v, ok %v; the summary:\n%s", sent, ok, stdout.String())
	}
	sigs <- syscall.SIGINT
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the signal did not end the linger")
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("the metrics are still served after the linger")
	}
}
