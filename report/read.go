package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/infertop/infertop/readlimit"
)

// A result read back is someone else's file: an agent's /result, a file
// given to merge or report. Its size, its number of values and the
// geometry of its histograms are bounded here, once, for every reader.

// MaxResultBytes is the largest result read. A day-long run's JSON (the
// writer keeps a day of seconds) is about 30 MB, a comparison's with the
// canary's result inside about twice that; decoding costs a few times the
// size, so a cap bounds the memory of a crafted file as well.
const MaxResultBytes = 128 << 20

// MaxResultValues is the most values a result may hold. Decoding costs
// about 20 bytes a value however densely they are written ("0," is two
// bytes), so the bytes alone do not bound the memory; a day-long
// comparison (both sides' seconds and readings) holds about 4 M.
const MaxResultValues = 8 << 20

// The geometry a histogram of a result may have. infertop writes 1 µs to
// an hour at 3 significant digits: 23,552 counts. A header may declare
// any range (1 to 2^63 at 5 digits is 56 bytes and 3.8 M counts, half a
// second to decode); a reader decodes at most maxHistCounts and a
// histogram of at most maxHistBytes encoded.
const (
	maxHistCounts = 1 << 17
	maxHistBytes  = 1 << 20
)

// MaxStringBytes is the longest string of a result, as written: the
// longest infertop writes is a histogram (at most maxHistBytes). A
// result of one 60 MB string (a model's name) cost merge 388 MB: each
// of its readers copies and sanitises the names it shows.
const MaxStringBytes = maxHistBytes + 64<<10

// ErrTooLarge is a result past MaxResultBytes or MaxResultValues, or a
// file past the limit it was read under.
var ErrTooLarge = errors.New("larger than a result can be")

// ErrNotResult is a JSON document that is not an infertop result.
var ErrNotResult = errors.New("not an infertop result")

// ErrHistGeometry is a histogram whose header declares more counts than
// a result's may have.
var ErrHistGeometry = errors.New("histogram geometry past what a result holds")

// File is a result as WriteJSON writes it: the infertop object, and the
// one top-level key not derived from it.
type File struct {
	// MaxConcurrency is vLLM's max_concurrency: the most requests the
	// run had in flight.
	MaxConcurrency int          `json:"max_concurrency"`
	Infertop       InfertopJSON `json:"infertop"`
}

// ResultName is what a result at path is called: its file's name
// without .json.
func ResultName(path string) string { return strings.TrimSuffix(filepath.Base(path), ".json") }

// ReadResult reads at most limit bytes of the file at path, and fails
// past them without reading further (/dev/zero ends nowhere). Callers
// pass MaxResultBytes, or less when they read several files in one
// budget.
func ReadResult(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // a *PathError: it names the file
	}
	defer f.Close()
	// A regular file's buffer is its size: io.ReadAll's doublings held
	// a 125 MB result at 296 MB.
	var b []byte
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > int64(limit) {
			return nil, fmt.Errorf("%s: %d MB, %w (the most read is %d MB)", path, st.Size()>>20, ErrTooLarge, limit>>20)
		}
		b = make([]byte, 0, st.Size()+1)
	}
	b, err = readAll(io.LimitReader(f, int64(limit)+1), b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: %w (the most read is %d MB)", path, ErrTooLarge, limit>>20)
	}
	return b, nil
}

// readAll appends r's bytes to b until EOF, growing b only when it is
// full.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// DecodeFile decodes a result (b, called name in its errors) into the
// writer's own types, once its size and its number of values are within
// MaxResultBytes and MaxResultValues. Its histograms stay encoded: decode
// each with DecodeHistogram.
func DecodeFile(name string, b []byte) (*File, error) {
	return DecodeWithin(name, b, MaxResultBytes, MaxResultValues)
}

// DecodeWithin is DecodeFile within tighter bounds: at most maxBytes
// and maxValues (an agent's /result, which a follower holds in memory
// for each agent).
func DecodeWithin(name string, b []byte, maxBytes, maxValues int) (*File, error) {
	return decodeFile(name, b, min(maxBytes, MaxResultBytes), min(maxValues, MaxResultValues))
}

// decodeFile is DecodeFile with the caps given.
func decodeFile(name string, b []byte, limit, values int) (*File, error) {
	if len(b) > limit {
		return nil, fmt.Errorf("%s: %d MB, %w (the most is %d MB)", name, len(b)>>20, ErrTooLarge, limit>>20)
	}
	n, longest := Scan(b)
	if n > values {
		return nil, fmt.Errorf("%s: %d values, %w (the most is %d)", name, n, ErrTooLarge, values)
	}
	if longest > MaxStringBytes {
		return nil, fmt.Errorf("%s: a string of %d KB, %w (the most is %d KB)", name, longest>>10, ErrTooLarge, MaxStringBytes>>10)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if f.Infertop.Manifest.Tool != "infertop" {
		return nil, fmt.Errorf("%s: %w (no infertop.manifest)", name, ErrNotResult)
	}
	return &f, nil
}

// CountValues counts the values of a JSON document by its separators
// (the commas outside strings): what decoding it will cost, read in one
// pass that allocates nothing, to hold against MaxResultValues before
// decoding.
func CountValues(b []byte) int {
	n, _ := Scan(b)
	return n
}

// Scan is CountValues, and the longest string's length in bytes as
// written.
func Scan(b []byte) (values, longest int) {
	values = 1
	readlimit.JSONScan(b, func(c byte, n int) {
		switch c {
		case ',':
			values++
		case '"':
			longest = max(longest, n)
		}
	})
	return values, longest
}

// DecodeHistogram decodes one of a result's histograms (V2 compressed,
// base64) after checking, from its header alone, that its counts are
// bounded: the decoder allocates and walks them all (DecodeSparse does
// not).
func DecodeHistogram(enc string) (*hdr.Histogram, error) {
	if err := checkHistogram(enc); err != nil {
		return nil, err
	}
	h, err := hdr.Decode([]byte(enc))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return h, nil
}

// DecodeSparse decodes one of a result's histograms as DecodeHistogram
// does, bounded alike, into a sparse histogram: its memory and time grow
// with the buckets it holds, not with its geometry (a dense decoding of
// a crafted header's range is 1 MB, however few its values). A merge
// adds it into a dense sum with MergeInto.
func DecodeSparse(enc string) (*hdr.PackedHistogram, error) {
	if err := checkHistogram(enc); err != nil {
		return nil, err
	}
	h, err := hdr.DecodePacked([]byte(enc))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return h, nil
}

// checkHistogram checks a histogram's encoding before it is decoded:
// its size, and the geometry its header declares.
func checkHistogram(enc string) error {
	if len(enc) > maxHistBytes {
		return fmt.Errorf("%w: %d bytes encoded", ErrHistGeometry, len(enc))
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if len(raw) < 8 {
		return errors.New("histogram: too short")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	defer z.Close()
	var head struct {
		Cookie, Payload, Offset, Digits int32
		Lowest, Highest                 int64
	}
	if err := binary.Read(io.LimitReader(z, 32), binary.BigEndian, &head); err != nil {
		return fmt.Errorf("histogram header: %w", err)
	}
	n, ok := countsLen(head.Lowest, head.Highest, head.Digits)
	if !ok || n > maxHistCounts {
		return fmt.Errorf("%w: %d..%d at %d digits", ErrHistGeometry, head.Lowest, head.Highest, head.Digits)
	}
	return nil
}

// countsLen is the number of counts HdrHistogram allocates for a range
// at digits significant digits (as its New computes it); false for a
// geometry it would refuse.
func countsLen(lowest, highest int64, digits int32) (int64, bool) {
	if digits < 0 || digits > 5 || highest < 2 {
		return 0, false
	}
	if lowest < 1 {
		lowest = 1
	}
	if highest < 2*lowest {
		return 0, false
	}
	subMag := int64(math.Ceil(math.Log2(2 * math.Pow10(int(digits)))))
	halfMag := max(subMag, 1) - 1
	unitMag := int64(math.Floor(math.Log2(float64(lowest))))
	if unitMag+halfMag > 61 {
		return 0, false
	}
	sub := int64(1) << (halfMag + 1)
	smallest := sub << unitMag
	buckets := int64(1)
	for smallest < highest { // at most 63 rounds: smallest doubles
		if smallest > math.MaxInt64/2 {
			buckets++
			break
		}
		smallest <<= 1
		buckets++
	}
	return (buckets + 1) * (sub / 2), true
}
