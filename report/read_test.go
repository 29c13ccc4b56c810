package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// TestDecodeHistogramBounded: a header declaring a geometry past a
// result's (1 to 2^62 at 4 digits: 800 K counts) is refused from the
// header; infertop's own geometry decodes; garbage is an error.
func TestDecodeHistogramBounded(t *testing.T) {
	if n, ok := countsLen(1, 3_600_000_000, 3); !ok || n != 23552 {
		t.Fatalf("infertop's geometry: %d counts, %v; want 23552", n, ok)
	}
	own := hdr.New(1, 3_600_000_000, 3)
	own.RecordValue(1500)
	for _, h := range []*hdr.Histogram{hdr.New(1, 1<<62, 4), own} {
		enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeHistogram(string(enc))
		if h == own && (err != nil || got.TotalCount() != 1) {
			t.Fatalf("infertop's own histogram: %v", err)
		}
		if h != own && !errors.Is(err, ErrHistGeometry) {
			t.Fatalf("a bomb decoded: %v", err)
		}
	}
	for name, enc := range map[string]string{
		"not base64": "HIST!!",
		"too short":  base64.StdEncoding.EncodeToString([]byte("HIST")),
		"no zlib":    base64.StdEncoding.EncodeToString([]byte("HISTFAAAAB garbage")),
		"too long":   strings.Repeat("A", maxHistBytes+4),
	} {
		if _, err := DecodeHistogram(enc); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestReadResultCapped: a file past the cap is refused with one line,
// and read no further than the cap (/dev/zero ends nowhere).
func TestReadResultCapped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.json")
	if err := os.WriteFile(p, bytes.Repeat([]byte(" "), 4<<10+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadResult(p, 4<<10)
	if !errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a file past the cap: %v", err)
	}
	if b, err := ReadResult(p, 8<<10); err != nil || len(b) != 4<<10+1 {
		t.Fatalf("a file under the cap: %d bytes, %v", len(b), err)
	}
	if _, err := ReadResult(filepath.Join(dir, "none.json"), 1<<10); err == nil {
		t.Fatal("a missing file read")
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadResult("/dev/zero", 1<<20)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) || after.TotalAlloc-before.TotalAlloc > 8<<20 {
			t.Fatalf("/dev/zero: %v, %d bytes allocated", err, after.TotalAlloc-before.TotalAlloc)
		}
	}
	// A file is read into one buffer of its size: io.ReadAll's doublings
	// held a 125 MB result at 296 MB.
	mid := filepath.Join(dir, "mid.json")
	if err := os.WriteFile(mid, bytes.Repeat([]byte(" "), 20<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := ReadResult(mid, 32<<20)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; err != nil || len(b) != 20<<20 || got > 21<<20 {
		t.Fatalf("a file of 20 MB: %d bytes, %v, %d MB allocated", len(b), err, got>>20)
	}
	if got := ResultName("/a/b/run.json"); got != "run" {
		t.Errorf("ResultName: %q", got)
	}
}

// TestDecodeFileBounded: past the size or the values cap a result is
// refused before decoding, at the cost of one pass (the commas inside a
// string are not values); a document without infertop's manifest is not
// a result; a result decodes into the writer's types.
func TestDecodeFileBounded(t *testing.T) {
	if _, err := decodeFile("x", bytes.Repeat([]byte(" "), 100), 10, MaxResultValues); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a result past the cap decoded: %v", err)
	}
	dense := append(append([]byte(`{"a":"`), bytes.Repeat([]byte(","), 1000)...), `","b":[`...)
	dense = append(append(dense, bytes.Repeat([]byte("0,"), MaxResultValues)...), "0]}"...)
	if n := CountValues(dense); n != MaxResultValues+2 {
		t.Fatalf("%d values counted, want %d", n, MaxResultValues+2)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeFile("dense", dense)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || after.TotalAlloc-before.TotalAlloc > 1<<20 {
		t.Fatalf("%d values: %v, %d bytes allocated", MaxResultValues+2, err, after.TotalAlloc-before.TotalAlloc)
	}
	// One string past the longest a result holds (a model's name of
	// 60 MB cost merge 388 MB) is refused before decoding.
	long := []byte(`{"infertop":{"manifest":{"tool":"infertop","model":"` + strings.Repeat("x", MaxStringBytes+1) + `"}}}`)
	if _, err := DecodeFile("long", long); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "a string of") {
		t.Fatalf("a string of %d bytes: %v", MaxStringBytes+1, err)
	}
	if _, err := DecodeFile("other", []byte(`{"infertop":{"manifest":{"tool":"other"}}}`)); !errors.Is(err, ErrNotResult) {
		t.Fatalf("another tool's file: %v", err)
	}
	if _, err := DecodeFile("broken", []byte(`{"infertop":`)); err == nil || !strings.HasPrefix(err.Error(), "broken: ") {
		t.Fatalf("broken JSON: %v", err)
	}
	b, err := json.Marshal(File{MaxConcurrency: 3, Infertop: InfertopJSON{Manifest: Manifest{Tool: "infertop", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeFile("good", b)
	if err != nil || f.MaxConcurrency != 3 || f.Infertop.Manifest.Model != "m" {
		t.Fatalf("a result: %+v, %v", f, err)
	}
}
