package htmlreport

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The geometry a histogram of a result may have. infertop writes 1 µs to
// an hour at 3 significant digits: 23,552 counts. A header may declare
// any range (1 to 2^63 at 5 digits is 56 bytes and 3.8 M counts, half a
// second to decode); the page decodes at most maxHistCounts and a
// histogram of at most maxHistBytes encoded.
const (
	maxHistCounts = 1 << 17
	maxHistBytes  = 1 << 20
)

// errHistGeometry is a histogram whose header declares more counts than
// a result's may have.
var errHistGeometry = errors.New("histogram geometry past what a result holds")

// decodeHist decodes one of the result's histograms (V2 compressed,
// base64) after checking, from its header alone, that its counts are
// bounded: the decoder allocates and walks them all.
func decodeHist(enc string) (*hdr.Histogram, error) {
	if len(enc) > maxHistBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded", errHistGeometry, len(enc))
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	if len(raw) < 8 {
		return nil, errors.New("histogram: too short")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	defer z.Close()
	var head struct {
		Cookie, Payload, Offset, Digits int32
		Lowest, Highest                 int64
	}
	if err := binary.Read(io.LimitReader(z, 32), binary.BigEndian, &head); err != nil {
		return nil, fmt.Errorf("histogram header: %w", err)
	}
	n, ok := countsLen(head.Lowest, head.Highest, head.Digits)
	if !ok || n > maxHistCounts {
		return nil, fmt.Errorf("%w: %d..%d at %d digits", errHistGeometry, head.Lowest, head.Highest, head.Digits)
	}
	h, err := hdr.Decode([]byte(enc))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return h, nil
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
