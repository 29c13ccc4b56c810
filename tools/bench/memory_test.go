package main

import (
	"testing"
	"time"
)

// TestMemoryFlat is the shortened version of the bench's ten-minute memory
// run: the same closed loop on the minimal server, the same judgement,
// over 3 s. It runs without the race detector (make test does): under it
// the shadow memory was most of the resident memory judged (226-243 MiB
// against 39 MiB), and 9 s made 22,000-40,000 requests where 3 s without
// it make over 100,000.
func TestMemoryFlat(t *testing.T) {
	if raceDetector {
		t.Skip("a memory test: run without -race (make test does)")
	}
	samples, err := memRun(3*time.Second, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	last := samples[len(samples)-1]
	t.Logf("%d requests; at the end rss %d MiB, heap %d MiB, %d goroutines", last.requests, last.rss>>20, last.heap>>20, last.goroutines)
	if last.requests < 1000 {
		t.Fatalf("only %d requests: not a busy run", last.requests)
	}
	if err := flat(samples, 8<<20); err != nil {
		t.Fatal(err)
	}
}
