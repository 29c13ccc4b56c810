package htmlreport

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/infertop/infertop/report"
)

// The files below are someone else's: values no axis can hold, seconds
// near 1e17, histograms whose header declares a geometry of millions of
// counts. Each is drawn within a deadline and a budget of bytes
// allocated (TotalAlloc: the race detector's shadow memory is not in
// it), or refused with a one-line error.

// crafted is a result with a manifest, one phase and the series of
// seconds n long, changed by mod.
func crafted(t *testing.T, n int, mod func(*report.InfertopJSON)) []byte {
	t.Helper()
	var res struct {
		Infertop report.InfertopJSON `json:"infertop"`
	}
	inf := &res.Infertop
	inf.Manifest = report.Manifest{Tool: "infertop", Knobs: report.KnobsJSON{Mode: "closed"}}
	inf.Phases = []report.PhaseJSON{{ID: 1}, {ID: 2, StartS: 1}}
	s := &report.SeriesJSON{Latency: map[string][]*float64{}}
	for i := range n {
		v := float64(10 + i%7)
		s.Sec = append(s.Sec, int64(i))
		s.Completed = append(s.Completed, int32(i%5))
		s.Latency["ttft_p50"] = append(s.Latency["ttft_p50"], &v)
	}
	inf.Series = s
	mod(inf)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bomb is an encoded histogram of no counts whose header declares
// lowest..highest at digits: 56 bytes of base64 for 1..2^63 at 5
// digits, which the decoder would give 3.8 M counts.
func bomb(t *testing.T, lowest, highest int64, digits int32) string {
	t.Helper()
	var head bytes.Buffer
	binary.Write(&head, binary.BigEndian, []int32{0x1c849303 | 0x10, 0, 0, digits})
	binary.Write(&head, binary.BigEndian, []int64{lowest, highest})
	binary.Write(&head, binary.BigEndian, 1.0)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(head.Bytes())
	zw.Close()
	var out bytes.Buffer
	binary.Write(&out, binary.BigEndian, []int32{0x1c849304 | 0x10, int32(z.Len())})
	out.Write(z.Bytes())
	return base64.StdEncoding.EncodeToString(out.Bytes())
}

// drawBounded draws doc, failing past limit or past budget bytes
// allocated; it returns Write's error.
func drawBounded(t *testing.T, doc []byte, limit time.Duration, budget uint64) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		var b bytes.Buffer
		done <- Write(&b, []Run{{Name: "crafted", JSON: doc}})
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d bytes drawn in %v, %.1f MB allocated (%v)", len(doc), time.Since(start).Round(time.Millisecond), float64(alloc)/1e6, err)
		if alloc > budget {
			t.Errorf("%.1f MB allocated, more than %.1f MB", float64(alloc)/1e6, float64(budget)/1e6)
		}
		return err
	case <-timer.C:
		t.Fatalf("drawing %d bytes ran past %v", len(doc), limit)
		return nil
	}
}

// TestCraftedValuesBounded: a latency of 1.7e308 and seconds near 1e17
// (the axis loops of before ran forever on each) draw in a bounded time
// and memory; the values no axis can hold are left out.
func TestCraftedValuesBounded(t *testing.T) {
	huge := 1.7e308
	for name, mod := range map[string]func(*report.InfertopJSON){
		"1.7e308": func(inf *report.InfertopJSON) { inf.Series.Latency["ttft_p50"][3] = &huge },
		"x near 1e17": func(inf *report.InfertopJSON) {
			for i := range inf.Series.Sec {
				inf.Series.Sec[i] = 1e17 + int64(i)
			}
			inf.Phases[1].StartS = 1e17
		},
		"x near 1e17, one apart in float": func(inf *report.InfertopJSON) {
			for i := range inf.Series.Sec {
				inf.Series.Sec[i] = 1e17 + int64(i%2)*16
			}
		},
		"-1.7e308 and 1.7e308": func(inf *report.InfertopJSON) {
			neg := -huge
			inf.Series.Latency["ttft_p50"][0], inf.Series.Latency["ttft_p50"][1] = &neg, &huge
			inf.Phases[1].StartS = huge
			inf.Capacity = &report.CapacityJSON{Over: "rate", SearchJSON: report.SearchJSON{Steps: []report.StepJSON{{Load: huge, P50TTFT: huge}, {Load: -huge}}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			doc := crafted(t, 600, mod)
			if err := drawBounded(t, doc, 10*time.Second, 64<<20); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHistogramBombs: 400 histograms whose headers declare 1..2^63 at 5
// digits (3.8 M counts each: 0.5 s and 30 MB apiece to decode) are
// refused from their headers (report.DecodeHistogram, tested in report);
// the page draws without them.
func TestHistogramBombs(t *testing.T) {
	enc := bomb(t, 1, math.MaxInt64, 5)
	doc := crafted(t, 10, func(inf *report.InfertopJSON) {
		hs := &report.HistogramsJSON{}
		for i := range 400 {
			hs.Phases = append(hs.Phases, report.PhaseHistogramsJSON{ID: i + 1, Hist: map[string]string{"ttft": enc, "e2el": enc}})
		}
		inf.Histograms = hs
	})
	if err := drawBounded(t, doc, 10*time.Second, 64<<20); err != nil {
		t.Fatal(err)
	}
}

// TestManyPhasesAndClasses: thousands of phases and failure classes draw
// a bounded number of lines and marks.
func TestManyPhasesAndClasses(t *testing.T) {
	doc := crafted(t, 200, func(inf *report.InfertopJSON) {
		inf.Series.FailedByClass = map[string][]int32{}
		for i := range 1000 {
			inf.Phases = append(inf.Phases, report.PhaseJSON{ID: i + 3, StartS: float64(i) / 10})
			inf.Series.FailedByClass[strings.Repeat("x", i%50)+string(rune('a'+i%26))+string(rune('0'+i/26%10))+string(rune('A'+i/260))] = []int32{1, 2}
		}
	})
	if err := drawBounded(t, doc, 10*time.Second, 128<<20); err != nil {
		t.Fatal(err)
	}
}

// TestInputCapped: a result past report's bounds is refused with one
// line (the bounds themselves are tested in report).
func TestInputCapped(t *testing.T) {
	dense := []byte("[" + strings.Repeat("0,", report.MaxResultValues) + "0]")
	err := Write(io.Discard, []Run{{Name: "dense", JSON: dense}})
	if !errors.Is(err, report.ErrTooLarge) || !strings.HasPrefix(err.Error(), "html report: dense: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%d values: %v", report.MaxResultValues+1, err)
	}
}

// TestDenseColumn: columns of 256 K values ("0," each, the
// densest JSON can be) costs a bounded multiple of its size: what a file
// under MaxResultBytes can cost.
func TestDenseColumn(t *testing.T) {
	doc := crafted(t, 10, func(inf *report.InfertopJSON) {
		zero := 0.0
		col := make([]*float64, 1<<18)
		for i := range col {
			col[i] = &zero
		}
		inf.Series.Latency["e2el_p99"] = col
		inf.Series.InFlight = make([]int32, 1<<18)
	})
	if err := drawBounded(t, doc, 20*time.Second, uint64(24*len(doc))); err != nil {
		t.Fatal(err)
	}
}

// TestLongEndpointText: a model name of a megabyte (the endpoint's to
// choose) is cut short on the page, not copied into it.
func TestLongEndpointText(t *testing.T) {
	doc := crafted(t, 10, func(inf *report.InfertopJSON) {
		inf.Manifest.Model = strings.Repeat("m", 1<<20)
		inf.Errors = []report.ErrorJSON{{Class: "5xx", Message: strings.Repeat("e", 1<<20), Count: 1}}
	})
	var b bytes.Buffer
	if err := Write(&b, []Run{{Name: "long", JSON: doc}}); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 200<<10 {
		t.Fatalf("a page of %d KB for 2 MB of endpoint text", b.Len()>>10)
	}
}
