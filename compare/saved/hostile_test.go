package saved

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/report"
)

// TestHostileFiles: a file that is no usable result is refused with one
// line naming it, quickly, whatever it holds.
func TestHostileFiles(t *testing.T) {
	t.Parallel()
	good := synth(t, report.Manifest{}, 1, ph{knobs: closed8, n: 300, slow: 1})
	tpot := func() string { // the run's TPOT histogram, as written
		r := decode(t, "good", good)
		return r.Hist["tpot"]
	}()
	swap := func(enc string) []byte { return bytes.ReplaceAll(good, []byte(tpot), []byte(enc)) }

	// A histogram of the engine's geometry claiming 2^40 requests in one
	// bucket: an interval over it would walk for hours.
	huge := load.NewHistogram()
	if err := huge.RecordValues(10_000, 1<<40); err != nil {
		t.Fatal(err)
	}
	// Another geometry: buckets that add up to nothing of the engine's.
	other := hdr.New(1, 1_000_000, 2)
	other.RecordValue(10_000)

	for _, tc := range []struct {
		name, want string
		b          []byte
		is         error
	}{
		{"not json", "invalid character", []byte("\x1b]0;owned\x07 not JSON"), ErrUnusable},
		{"nan", "invalid character 'N'", bytes.Replace(good, []byte(`"rate":0`), []byte(`"rate":NaN`), 1), ErrUnusable},
		{"inf", "cannot unmarshal number 1e999", bytes.Replace(good, []byte(`"rate":0`), []byte(`"rate":1e999`), 1), ErrUnusable},
		{"no manifest", "no infertop.manifest", []byte(`{"infertop":{}}`), report.ErrNotResult},
		{"no histograms", "no histograms", bytes.Replace(good, []byte(`"histograms":`), []byte(`"histograms_":`), 1), ErrUnusable},
		{"negative", "a count of -5", bytes.Replace(good, []byte(`"failed":0`), []byte(`"failed":-5`), 1), ErrUnusable},
		{"uncounted", "sent 300 is less than", bytes.Replace(good, []byte(`"failed":0`), []byte(`"failed":7`), 1), ErrUnusable},
		{"huge count", "a histogram past", swap(encode(t, huge)), ErrUnusable},
		{"geometry", "not infertop's", swap(encode(t, other)), ErrUnusable},
		{"bad base64", "illegal base64", swap("!!!!"), ErrUnusable},
		{"long histogram", "histograms past their bounds (600 KB", swap(strings.Repeat("A", 600<<10)), ErrUnusable},
		{"too many values", "values, larger than a result can be", []byte(strings.Repeat("0,", MaxFileValues+1)), report.ErrTooLarge},
		{"long string", "a string of 2048 KB, larger than a result can be", bytes.Replace(good, []byte(`"model":"`), []byte(`"model":"`+strings.Repeat("x", 2<<20)), 1), report.ErrTooLarge},
	} {
		r, err := Decode("f\x1b[2J", tc.b)
		if err == nil && r != nil {
			_, err = Judge(decode(t, "base", good), r, Options{Regressions: regs(t, "tpot_p50<+10%")})
		}
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q (errors.Is %v: %t), want %q", tc.name, err, tc.is, errors.Is(err, tc.is), tc.want)
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\x1b\x07\n") {
			t.Errorf("%s: the error holds a control character or is not one line: %q", tc.name, msg)
		}
	}
}

// TestHostileText: what a file names (its model, API, version, its file
// name) reaches the table sanitised, and the markdown escaped.
func TestHostileText(t *testing.T) {
	t.Parallel()
	evil := report.Manifest{Model: "m\x1b]52;c;b3duZWQ=\x07\u202e", Version: "\u009b31m" + strings.Repeat("v", 5000)}
	b := synth(t, evil, 1, ph{knobs: closed8, n: 300, slow: 1})
	dir := t.TempDir()
	path := filepath.Join(dir, "base\x1b[2J.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	api := synth(t, report.Manifest{API: "x\x1b[31m"}, 2, ph{knobs: closed8, n: 300, slow: 1})
	n := decode(t, "new", api)
	_, err = Judge(base, n, Options{})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07\u202e\u009b") {
		t.Errorf("refusal %q: raw control characters", err)
	}
	j, err := Judge(base, n, Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := j.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.ContainsAny(s, "\x1b\x07\u202e\u009b") || strings.Count(s, "v") > 1000 {
		t.Errorf("output holds raw control characters or a flood:\n%.2000q", s)
	}
	// A path past the bytes a file may have is refused before it is read.
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Read(big); !errors.Is(err, report.ErrTooLarge) {
		t.Errorf("a file past %d bytes: %v", MaxFileBytes, err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil { // a stream that never ends: read to the bound, no further
		if _, err := Read("/dev/zero"); !errors.Is(err, report.ErrTooLarge) {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	if _, err := Read(filepath.Join(dir, "none\x1b[2J.json")); err == nil || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("a missing file: %q", err)
	}
}

// FuzzDecode: whatever a file holds, decoding and judging it neither
// panics nor prints a control character.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"infertop":{"manifest":{"tool":"infertop"},"histograms":{"run":{"tpot":"HISTFAAAACR4nJNpmSzMwMDAyAABzFCaEUKz2H+AMIQPAeVVBM4="}}}}`))
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte("x"))))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode("f", b)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\x1b\x07\n") {
				t.Fatalf("error %q", err)
			}
			return
		}
		j, err := Judge(r, r, Options{Force: true})
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := j.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\x1b\x07") {
			t.Fatalf("table %q", out.String())
		}
	})
}
