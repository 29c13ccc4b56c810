package main

import (
	"testing"
	"time"
)

// TestMemoryFlat is the shortened version of the bench's ten-minute memory
// run: the same closed loop on the minimal server, the same judgement.
func TestMemoryFlat(t *testing.T) {
	samples, err := memRun(9*time.Second, 500*time.Millisecond)
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
