package merge

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/readlimit/limittest"
	"github.com/infertop/infertop/report"
)

// crafted is a result of phases phases, each of its metrics in h.
func crafted(t testing.TB, h *hdr.Histogram, phases int, start time.Time) []byte {
	t.Helper()
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	r := fixture(t, knobs4, []int64{1000})
	r.Manifest.Start = start
	n := h.TotalCount()
	d := report.DistJSON{Count: n, Mean: 1, Min: 1, Max: 1, P50: 1, P90: 1, P95: 1, P99: 1, P999: 1}
	hists := map[string]string{}
	for _, k := range report.MetricKeys() {
		hists[k] = string(enc)
	}
	r.Phases, r.Histograms.Phases = nil, nil
	for i := range phases {
		lat := map[string]report.DistJSON{}
		for _, k := range report.MetricKeys() {
			lat[k] = d
		}
		p := report.PhaseJSON{ID: i + 1, Knobs: knobs4, DurationS: 1, Sent: n, Completed: n, ErrorsByClass: map[string]int64{}, Latency: lat}
		r.Phases = append(r.Phases, p)
		r.Histograms.Phases = append(r.Histograms.Phases, report.PhaseHistogramsJSON{ID: i + 1, Hist: hists})
	}
	r.Run.Latency = r.Phases[0].Latency
	r.Run.Sent, r.Run.Completed = n, n
	r.Histograms.Run = hists
	return encodeFile(t, r)
}

// peakHeap runs fn and returns the highest heap in use while it ran
// above the heap before it.
func peakHeap(fn func()) uint64 {
	peak, _ := limittest.HeapPeak(fn)
	return peak
}

// TestMergeLargestGeometry: results whose every histogram is at the
// largest geometry a result may declare (1 to 2^21 at 4 digits: 131,072
// counts, 1 MB decoded densely, 60 bytes encoded) are refused by name
// at once; a pair whose every histogram has every bucket of infertop's
// geometry filled merges in seconds. Both in a small multiple of the
// files' size.
func TestMergeLargestGeometry(t *testing.T) {
	wide := hdr.New(1, 2_097_152, 4)
	if err := wide.RecordValue(1000); err != nil {
		t.Fatal(err)
	}
	full := load.NewHistogram()
	if err := full.RecordValue(full.HighestTrackableValue()); err != nil { // Distribution's bars run up to it: one a bucket
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, b := range full.Distribution() {
		if err := full.RecordValues(b.From, 1+rng.Int64N(1000)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		h      *hdr.Histogram
		phases int
		refuse bool
	}{{"the widest geometry", wide, 1000, true}, {"infertop's, every bucket", full, 8, false}} {
		a, b := crafted(t, c.h, c.phases, time.Unix(1e9, 0).UTC()), crafted(t, c.h, c.phases, time.Unix(1e9+1, 0).UTC())
		var took time.Duration
		var err error
		peak := peakHeap(func() {
			began := time.Now()
			var ins []Input
			for i, f := range [][]byte{a, b} {
				in, derr := Decode(fmt.Sprint("crafted", i), f)
				if derr != nil {
					in = Input{Name: fmt.Sprint("crafted", i), Refused: derr}
				}
				ins = append(ins, in)
			}
			_, err = Merge(ins, Options{})
			took = time.Since(began)
		})
		t.Logf("%s: two files of %d KB: merged in %v, %d MB of heap at the peak (err %v)", c.name, len(a)>>10, took, peak>>20, err)
		bound := 5 * time.Second // a minute before
		if raceDetector {
			bound *= 10
		}
		if took > bound || peak > 20*uint64(len(a)+len(b)) || (err != nil) != c.refuse ||
			c.refuse && !strings.Contains(err.Error(), "not infertop's") {
			t.Errorf("%s: two files of %d KB: %v, %d MB, %v", c.name, len(a)>>10, took, peak>>20, err)
		}
	}
}

// TestHostileRefusedByName: a hostile result (a count without its
// histogram, 70 objectives, a bad objective, a mean of 1.7e308, tokens
// or rates that overflow a sum, index 7 of 2, the same run twice, a
// second run of one index) is refused by name and the honest ones are
// merged; the merged result encodes.
func TestHostileRefusedByName(t *testing.T) {
	vals := []int64{1000, 2000, 3000}
	share := func(index int, start int64) report.InfertopJSON {
		r := fixture(t, knobs4, vals)
		r.Manifest.Settings = map[string]string{"of": "2", "index": fmt.Sprint(index)}
		r.Manifest.Start = time.Unix(start, 0).UTC()
		return r
	}
	var many []report.VerdictJSON
	for i := range 70 {
		many = append(many, report.VerdictJSON{Expr: fmt.Sprintf("ttft_p99 <= %dms", i+1)})
	}
	for _, c := range []struct {
		name, want string
		spoil      func(*report.InfertopJSON)
	}{
		{"a count without its histogram", "no histogram", func(r *report.InfertopJSON) { delete(r.Histograms.Phases[0].Hist, "ttft") }},
		{"70 objectives", "70 objectives", func(r *report.InfertopJSON) { r.SLO = many }},
		{"a bad objective", "objectives", func(r *report.InfertopJSON) { r.SLO = []report.VerdictJSON{{Expr: "ttft_p99 <= soon"}} }},
		{"a mean of 1.7e308", "1.7e+308", func(r *report.InfertopJSON) { d := r.Run.Latency["ttft"]; d.Mean = 1.7e308; r.Run.Latency["ttft"] = d }},
		{"tokens that wrap", "a count of", func(r *report.InfertopJSON) { r.Run.OutputTokens = math.MaxInt64 / 2 }},
		{"a rate of 1e300", "a rate of 1e+300", func(r *report.InfertopJSON) { r.Phases[0].OutputThroughput = 1e300 }},
		{"a rate that sums to +Inf", "a rate of 1.7e+308", func(r *report.InfertopJSON) { s := 1.7e308; r.SentRate = &s }},
		{"index 7 of 2", "index \"7\" of 2 is no share", func(r *report.InfertopJSON) { r.Manifest.Settings["index"] = "7" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := share(1, 1e9+2)
			c.spoil(&bad)
			dir := t.TempDir()
			var paths []string
			for i, r := range []report.InfertopJSON{share(0, 1e9), share(1, 1e9+1), bad} {
				p := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
				if err := os.WriteFile(p, encodeFile(t, r), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			ins, err := ReadFiles(paths)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Merge(ins, Options{})
			if err != nil {
				t.Fatalf("the honest ones not merged: %v", err)
			}
			if got := strings.Join(m.Result.Merged.Refused, "; "); !strings.HasPrefix(got, "r2: ") || !strings.Contains(got, c.want) {
				t.Errorf("refused: %q, want r2 for %q", got, c.want)
			}
			if m.Result.Run.Sent != 6 {
				t.Errorf("merged: sent %d, want the two honest shares' 6", m.Result.Run.Sent)
			}
			var b bytes.Buffer
			if err := m.Write(&b); err != nil {
				t.Errorf("the merged result: %v", err)
			}
		})
	}
	// One run twice, and two runs of one index: the second refused.
	a, b := share(0, 1e9), share(1, 1e9+1)
	again := share(0, 1e9+5)
	ins := []Input{decoded(t, "a", a), decoded(t, "b", b), decoded(t, "a-copy", a), decoded(t, "again", again)}
	m, err := Merge(ins, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Result.Merged.Refused, "; "); m.Result.Run.Sent != 6 || !strings.Contains(got, "a-copy: the same run as a") ||
		!strings.Contains(got, "again: index 0 of 2 again, as a's") {
		t.Errorf("sent %d, refused %q", m.Result.Run.Sent, got)
	}
	if _, err := Merge([]Input{decoded(t, "a", a), decoded(t, "a", a)}, Options{Force: true}); err == nil {
		t.Error("merge a.json a.json: merged")
	}
}

// TestRefusalSanitised: the line refusing another endpoint shows a
// crafted file's URL and API escaped and cut.
func TestRefusalSanitised(t *testing.T) {
	vals := []int64{1000}
	a, b := fixture(t, knobs4, vals), fixture(t, knobs4, vals)
	b.Manifest.URL = "http://x/\x1b]52;c;cGF3bmVk\x07\x1b[2J" + strings.Repeat("A", 5000)
	b.Manifest.API = "\x1b[31mred"
	b.Manifest.Start = b.Manifest.Start.Add(time.Second)
	_, err := Merge([]Input{decoded(t, "a", a), decoded(t, "b\x1b[2J", b)}, Options{})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || len(err.Error()) > 1000 {
		t.Errorf("%d bytes: %.300q", len(err.Error()), err)
	}
}

// TestReadFilesOneAtATime: files read one after another cost one file's
// buffer at a time, not the heap's doubling (four files of 120 MB held
// merge at 265 MB).
func TestReadFilesOneAtATime(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "wide.json")
	body := append([]byte(`{"infertop":{"manifest":{"tool":"infertop"}}`), bytes.Repeat([]byte(" "), 40<<20)...)
	if err := os.WriteFile(p, append(body, '}'), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	peak, _ := limittest.HeapPeak(func() { _, err = ReadFiles([]string{p, p, p, p}) })
	t.Logf("heap peak %d MB", peak>>20)
	if err != nil {
		t.Fatal(err)
	}
	if peak > 60<<20 {
		t.Errorf("four files of 40 MB: heap peak %d MB, want about one file's", peak>>20)
	}
}
