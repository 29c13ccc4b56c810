package telemetry

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// Readings are kept one a second for the whole run, the server's and the
// GPUs' side joined in the second they were read.
func TestHistory(t *testing.T) {
	page, err := os.ReadFile("testdata/sglang.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := NewScraper(Config{Every: time.Second})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 2 * 10 * 60 { // ten minutes, read twice a second: past the five the views keep
		at := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		s.addGPU(Sample{At: at, GPUs: []GPU{{Index: "0", PowerW: 300, UtilPct: 50}, {Index: "1", PowerW: 200, UtilPct: 100}}})
		if i%2 == 0 {
			if err := s.readServer(bytes.NewReader(page), at); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := s.History()
	if len(h) != 600 {
		t.Fatalf("%d readings, want 600 (one a second)", len(h))
	}
	r := h[len(h)-1]
	if !r.HasGPU || r.PowerW != 500 || r.UtilPct != 75 || !r.HasServer || r.Running != 12 {
		t.Fatalf("last reading %+v", r)
	}
	if !h[0].At.Equal(t0) {
		t.Fatalf("first reading at %v", h[0].At)
	}
}
