package htmlreport

import hdr "github.com/HdrHistogram/hdrhistogram-go"

// CountValues counts the values of a JSON document, in one pass that
// allocates nothing: what decoding it will cost, to hold against
// MaxResultValues before decoding a result someone else wrote.
func CountValues(b []byte) int { return countValues(b) }

// DecodeHistogram decodes one of a result's histograms (V2 compressed,
// base64) once its header shows a geometry a result may have: the bound
// the page decodes under, for any reader of results.
func DecodeHistogram(enc string) (*hdr.Histogram, error) { return decodeHist(enc) }
